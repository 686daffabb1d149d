"""What a consumer group is made of: the broker's ``group.consumer.*`` settings and a member as
the coordinator holds it (Kafka's ``ConsumerGroupMember``: its ConsumerGroupMemberMetadata and
ConsumerGroupCurrentMemberAssignment records together)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kafka_rebalance.protocol.modern.consumer.assignment import MemberAssignment
from kafka_rebalance.protocol.modern.consumer.coordinator_records import ClassicMemberMetadata


@dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    """The broker's ``group.consumer.*`` settings (Kafka's defaults)."""

    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    max_size: int = 2**31 - 1
    assignors: tuple[str, ...] = ("uniform", "range")  # the first is the default
    migration_policy: str = "bidirectional"  # disabled | upgrade | downgrade | bidirectional
    classic_max_size: int = 2**31 - 1

    @property
    def upgrade_enabled(self) -> bool:
        return self.migration_policy in ("upgrade", "bidirectional")

    @property
    def downgrade_enabled(self) -> bool:
        return self.migration_policy in ("downgrade", "bidirectional")


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assignment: MemberAssignment = field(default_factory=MemberAssignment)
    classic: ClassicMemberMetadata | None = None

    @property
    def member_epoch(self) -> int:
        return self.assignment.member_epoch

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def subscribed_topics(self, topics: Mapping[str, int]) -> frozenset[str]:
        return subscribed_topics(self.subscribed_topic_names, self.subscribed_topic_regex, topics)


def subscribed_topics(names: Sequence[str], regex: str | None, topics: Mapping[str, int]) -> frozenset[str]:
    """The topics of ``topics`` that a subscription to ``names`` and ``regex`` takes."""
    subscribed = {t for t in names if t in topics}
    if regex is not None:
        pattern = re.compile(regex)
        subscribed.update(t for t in topics if pattern.fullmatch(t))
    return frozenset(subscribed)


__all__ = ["ConsumerGroupConfig", "ConsumerGroupMember", "subscribed_topics"]
