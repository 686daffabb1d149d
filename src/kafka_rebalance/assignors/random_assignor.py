"""The seed's custom "random" assignor, as the worked example of a plug-in.

Every partition goes to a random subscriber of its topic. Seeded, so the same group gives the
same answer (the seed's Java version uses an unseeded ``new Random()``).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from kafka_rebalance.assignors.base import SimplePartitionAssignor
from kafka_rebalance.model import MemberSubscription, TopicPartition, java_sort_key


class RandomAssignor(SimplePartitionAssignor):
    name = "random"

    def __init__(self, seed: int = 0):
        self.seed = seed

    def assign_partitions(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, MemberSubscription],
    ) -> Mapping[str, Sequence[TopicPartition]]:
        rng = random.Random(self.seed)
        assignment: dict[str, list[TopicPartition]] = {member: [] for member in subscriptions}
        for topic in sorted(partitions_per_topic, key=java_sort_key):
            consumers = sorted((m for m, s in subscriptions.items() if topic in s.topics), key=java_sort_key)
            for p in range(partitions_per_topic[topic]):
                assignment[rng.choice(consumers)].append(TopicPartition(topic, p))
        return assignment
