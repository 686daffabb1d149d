"""The assignor interface, mirroring Kafka's ConsumerPartitionAssignor.

Two ways to implement one:
- ``ColumnarAssignor``: ``assign_columnar(group) -> owner array``; what the built-ins use.
- ``SimplePartitionAssignor``: ``assign_partitions(partitions_per_topic, subscriptions) ->
  {member: [TopicPartition]}``, like Kafka's AbstractPartitionAssignor; for plug-ins where
  clarity matters more than scale.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kafka_rebalance.model import (
    UNASSIGNED,
    ColumnarGroup,
    InvalidInput,
    MemberSubscription,
    RebalanceProtocol,
    TopicPartition,
)


class PartitionAssignor(ABC):
    """name, supported protocols, assign, subscription user data, on-assignment callback, version."""

    name: str = ""
    supported_protocols: tuple[RebalanceProtocol, ...] = (RebalanceProtocol.EAGER,)
    version: int = 0

    def subscription_user_data(self, topics: Sequence[str]) -> bytes | None:
        """Bytes this member adds to its JoinGroup subscription (Kafka's subscriptionUserData)."""
        return None

    def on_assignment(self, partitions: Sequence[str], generation: int) -> None:  # noqa: B027 (optional hook)
        """Called on every member when its assignment ('topic-partition' names) arrives."""

    def member_data(self, owned: Sequence[str], generation: int, user_data: bytes | None) -> tuple[list[str], int]:
        """What the leader takes as a member's previous ownership from its subscription (Kafka's
        AbstractStickyAssignor.memberData): by default the owned partitions and generation as
        sent; an assignor that keeps them in its user data reads them from there."""
        return list(owned), generation

    @abstractmethod
    def assign_columnar(self, group: ColumnarGroup) -> np.ndarray:
        """Return the owner of every global partition (member index, or -1 for none)."""

    def configured(self, options: Mapping[str, Any]) -> PartitionAssignor:
        """This assignor with a snapshot's ``strategy_options`` applied. Assignors without options
        ignore them: the vote may pick another strategy than the one they were written for."""
        return self

    @property
    def protocol(self) -> RebalanceProtocol:
        """The highest protocol this assignor supports (COOPERATIVE above EAGER)."""
        return max(self.supported_protocols, key=lambda p: p.rank)


class ColumnarAssignor(PartitionAssignor, ABC):
    """An assignor that works on integer arrays directly."""


class SimplePartitionAssignor(PartitionAssignor, ABC):
    """Kafka's AbstractPartitionAssignor: a function of partition counts and subscriptions."""

    @abstractmethod
    def assign_partitions(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, MemberSubscription],
    ) -> Mapping[str, Sequence[TopicPartition]]:
        """Only subscribed topics present in metadata are in ``partitions_per_topic``."""

    def assign_columnar(self, group: ColumnarGroup) -> np.ndarray:
        subscribed = np.unique(group.subscription_topics)
        partitions_per_topic = {group.topic_names[t]: int(group.partition_counts[t]) for t in subscribed.tolist()}
        subscriptions = {}
        for m, member_id in enumerate(group.member_ids):
            topics = tuple(group.topic_names[t] for t in group.subscribed_topics(m).tolist())
            owned = tuple(group.partition_names(group.owned(m)))
            subscriptions[member_id] = MemberSubscription(
                member_id=member_id,
                topics=topics,
                owned=owned,
                generation=int(group.generations[m]),
                rack=group.member_racks[m] if group.member_racks else None,
                group_instance_id=group.group_instance_ids[m] if group.group_instance_ids else None,
            )
        result = self.assign_partitions(partitions_per_topic, subscriptions)
        lists = {member: [str(tp) for tp in partitions] for member, partitions in result.items()}
        try:
            return group.owner_from_lists(lists, where=f"assignor {self.name!r} result")
        except InvalidInput:
            raise
        except Exception as exc:  # a plug-in returned something that is not a list of partitions
            raise InvalidInput(f"assignor {self.name!r}", f"returned an invalid assignment: {exc}") from exc


def empty_owner(group: ColumnarGroup) -> np.ndarray:
    return np.full(group.num_partitions, UNASSIGNED, dtype=np.int64)
