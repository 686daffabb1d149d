"""Online migration between the classic and the consumer protocol
(``group.consumer.migration.policy``; Kafka's ``GroupMetadataManager.validateOnlineUpgrade``,
``convertToConsumerGroup`` / ``ConsumerGroup.fromClassicGroup`` and, back,
``validateOnlineDowngradeWithFencedMember`` / ``ClassicGroup.fromConsumerGroup``).

A classic group converts to a consumer group when the first ConsumerGroupHeartbeat (epoch 0)
arrives, if the policy allows an upgrade, the group embeds the consumer protocol and it is not
larger than ``group.consumer.max.size``: the group epoch and every member's epoch become the
classic generation, each member's current and target assignment its last classic assignment,
all STABLE, and the classic members keep their session timeout and protocols
(``ClassicMemberMetadata``). An empty classic group is simply replaced. A consumer group
converts back when its last consumer-protocol member leaves (or is fenced) while classic
members remain, if the policy allows a downgrade and they fit ``group.max.size``: the classic
group's generation is the group epoch, each member keeps its target assignment, and a
rebalance starts.

The classic side is described by ``ClassicGroupSnapshot`` (what the classic coordinator
persists in its GroupMetadata record: generation, protocol, members with subscription and
assignment). The way back is decided by the consumer group itself (``classic_members``: its
``ConvertedToClassic`` output); this module builds what the classic coordinator loads from it.
It depends on the coordinator, never the other way round.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_rebalance.protocol.classic.coordinator_events import (
    ConsumerGroupDowngraded,
    ConsumerProtocolSubscription,
    GroupMetadataRecord,
    OffsetCommitRecord,
    PartitionOffset,
    PersistedMember,
    PersistedRecord,
)
from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.modern.consumer.assignment import (
    MemberAssignment,
    MemberAssignmentState,
    partitions,
)
from kafka_rebalance.protocol.modern.consumer.coordinator import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    ConsumerGroupMember,
    ServerAssign,
    default_server_assign,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_events import (
    CONSUMER_PROTOCOL_TYPE,
    ClassicGroupSnapshot,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_records import ClassicMemberMetadata
from kafka_rebalance.protocol.modern.consumer.validation import ProtocolError


def _parse(assignment: tuple[str, ...]) -> dict[str, frozenset[int]]:
    out: dict[str, set[int]] = {}
    for partition in assignment:
        topic, _, number = partition.rpartition("-")
        out.setdefault(topic, set()).add(int(number))
    return partitions(out)


def validate_online_upgrade(classic: ClassicGroupSnapshot, config: ConsumerGroupConfig) -> bool:
    """Kafka's ``validateOnlineUpgrade``."""
    return (config.upgrade_enabled and classic.protocol_type == CONSUMER_PROTOCOL_TYPE
            and len(classic.members) <= config.max_size)


def consumer_group_for_heartbeat(classic: ClassicGroupSnapshot | None, member_epoch: int, topics: Mapping[str, int],
                                 config: ConsumerGroupConfig | None = None,
                                 assign: ServerAssign = default_server_assign,
                                 seed: int = 0) -> ConsumerGroupCoordinator:
    """Kafka's ``getOrMaybeCreateConsumerGroup`` for a group that is classic (or absent): an
    absent or empty classic group becomes a new consumer group on a join (epoch 0), a classic
    group that may be upgraded is converted, anything else is GROUP_ID_NOT_FOUND."""
    config = config or ConsumerGroupConfig()
    group_id = classic.group_id if classic is not None else ""
    joining = member_epoch == 0
    if classic is None or (joining and not classic.members and classic.state in ("Empty", "Dead")):
        if classic is None and not joining:
            raise ProtocolError(ErrorCode.GROUP_ID_NOT_FOUND, "Consumer group not found.")
        return ConsumerGroupCoordinator(group_id, topics, config, assign, seed)
    if joining and validate_online_upgrade(classic, config):
        return consumer_group_from_classic(classic, topics, config, assign, seed)
    raise ProtocolError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group")


def consumer_group_from_classic(classic: ClassicGroupSnapshot, topics: Mapping[str, int],
                                config: ConsumerGroupConfig | None = None,
                                assign: ServerAssign = default_server_assign, seed: int = 0) -> ConsumerGroupCoordinator:
    """Kafka's ``ConsumerGroup.fromClassicGroup``."""
    generation = classic.generation_id
    members = []
    targets = {}
    for m in classic.members:
        assigned = _parse(m.assignment)
        members.append(ConsumerGroupMember(
            m.member_id, instance_id=m.group_instance_id, rebalance_timeout_ms=m.rebalance_timeout_ms,
            client_id=m.client_id, subscribed_topic_names=tuple(m.topics),
            assignment=MemberAssignment(MemberAssignmentState.STABLE, generation, generation, assigned, {}),
            classic=ClassicMemberMetadata(m.session_timeout_ms, tuple(m.protocols))))
        targets[m.member_id] = assigned
    group = ConsumerGroupCoordinator.loaded(classic.group_id, topics, generation, generation, members, targets,
                                            config=config, assign=assign, seed=seed)
    # fromClassicGroup writes no subscription metadata: the first heartbeat computes it and bumps.
    group.subscription_metadata = {}
    return group


def downgrade_reason(group_id: str) -> str:
    """The reason of the rebalance a downgrade starts (``convertToClassicGroup``, Kafka 4.0+; the
    3.8-3.9 wording ends after "classic.")."""
    return f"Downgrade group {group_id} from consumer to classic for member leaving."


def classic_group_records(classic: ClassicGroupSnapshot, offsets: Mapping[str, int]) -> tuple[PersistedRecord, ...]:
    """What ``convertToClassicGroup`` writes for the classic group (``createClassicGroupRecords``):
    its GroupMetadata record (generation = the group epoch, the leader the first member as
    ``ClassicGroup.add`` makes it, each member's assignment) and the committed offsets, which
    stay where they are (offsets are not group records)."""
    members = tuple(PersistedMember(m.member_id, m.group_instance_id, m.client_id, m.rebalance_timeout_ms,
                                    m.session_timeout_ms, ConsumerProtocolSubscription(tuple(m.topics)), m.assignment)
                    for m in classic.members)
    leader = classic.members[0].member_id if classic.members else None
    records: list[PersistedRecord] = [GroupMetadataRecord(classic.group_id, classic.protocol_type,
                                                          classic.generation_id, classic.protocol_name, leader,
                                                          members)]
    if offsets:
        records.append(OffsetCommitRecord(classic.group_id, tuple(PartitionOffset(p, o) for p, o in offsets.items())))
    return tuple(records)


def downgraded(classic: ClassicGroupSnapshot, offsets: Mapping[str, int], partition: int) -> ConsumerGroupDowngraded:
    """The classic coordinator's input for a downgrade: load the records, start the rebalance."""
    return ConsumerGroupDowngraded(partition, classic_group_records(classic, offsets), downgrade_reason(classic.group_id))
