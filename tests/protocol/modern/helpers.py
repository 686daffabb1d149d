"""Helpers shaped like Kafka's GroupMetadataManagerTestContext: a MockPartitionAssignor whose
next answer the test prepares, and one-line heartbeats."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kafka_rebalance.protocol.effects import ArmTimer
from kafka_rebalance.protocol.modern.consumer.assignment import (
    MemberAssignment,
    MemberAssignmentState,
    partitions,
)
from kafka_rebalance.protocol.modern.consumer.coordinator import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    ConsumerGroupMember,
    MemberSubscriptionAndAssignment,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_events import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    Output,
    RequestReceived,
    Respond,
    TopicPartitions,
)


class MockPartitionAssignor:
    """Kafka's MockPartitionAssignor: returns the prepared group assignment; remembers its input."""

    def __init__(self) -> None:
        self.prepared: dict[str, dict[str, tuple[int, ...]]] = {}
        self.calls: list[tuple[str, dict[str, int], list[MemberSubscriptionAndAssignment]]] = []

    def prepare(self, assignment: Mapping[str, Mapping[str, Sequence[int]]]) -> None:
        self.prepared = {m: {t: tuple(ps) for t, ps in a.items()} for m, a in assignment.items()}

    def __call__(self, assignor: str, topics: Mapping[str, int],
                 members: Sequence[MemberSubscriptionAndAssignment]) -> Mapping[str, Mapping[str, Sequence[int]]]:
        self.calls.append((assignor, dict(topics), list(members)))
        return self.prepared


def tps(**topics: Sequence[int]) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(t, tuple(ps)) for t, ps in topics.items())


def stable_member(member_id: str, epoch: int, previous: int, assigned: Mapping[str, Sequence[int]],
                  topics: Sequence[str] = ("foo", "bar"), instance_id: str | None = None,
                  rebalance_timeout_ms: int = 5000) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        member_id, instance_id=instance_id, rebalance_timeout_ms=rebalance_timeout_ms,
        subscribed_topic_names=tuple(topics), server_assignor="range",
        assignment=MemberAssignment(MemberAssignmentState.STABLE, epoch, previous, partitions(assigned), {}))


class Context:
    def __init__(self, group: ConsumerGroupCoordinator, assignor: MockPartitionAssignor):
        self.group = group
        self.assignor = assignor
        self.now = 0
        self.outputs: list[Output] = []

    def heartbeat(self, **fields: object) -> ConsumerGroupHeartbeatResponse:
        fields.setdefault("group_id", "fooup")
        request = ConsumerGroupHeartbeatRequest(**fields)  # type: ignore[arg-type]
        self.outputs = self.group.handle(RequestReceived("c", request), self.now)
        responses = [o.response for o in self.outputs if isinstance(o, Respond)]
        assert len(responses) == 1
        response = responses[0]
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        return response

    def member_state(self, member_id: str) -> MemberAssignmentState:
        return self.group.members[member_id].assignment.state

    def timers(self) -> list[ArmTimer[object]]:
        return [o for o in self.outputs if isinstance(o, ArmTimer)]


def make_context(assignor: MockPartitionAssignor, topics: Mapping[str, int], members: Sequence[ConsumerGroupMember] = (),
                 epoch: int = 0, targets: Mapping[str, Mapping[str, Sequence[int]]] | None = None,
                 config: ConsumerGroupConfig | None = None) -> Context:
    if targets is None:
        targets = {m.member_id: {t: tuple(ps) for t, ps in m.assignment.assigned.items()} for m in members}
    group = ConsumerGroupCoordinator.loaded("fooup", topics, epoch, epoch, members,
                                            {m: partitions(t) for m, t in targets.items()},
                                            config=config, assign=assignor)
    return Context(group, assignor)
