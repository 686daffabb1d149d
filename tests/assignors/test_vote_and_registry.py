from __future__ import annotations

import numpy as np
import pytest

from kafka_rebalance import assign
from kafka_rebalance.assignors import (
    PartitionAssignor,
    SimplePartitionAssignor,
    available,
    get_assignor,
    previous_owners,
    register,
    select_strategy,
)
from kafka_rebalance.model import (
    ColumnarGroup,
    GroupSnapshot,
    InvalidInput,
    RebalanceProtocol,
    TopicPartition,
)


def test_vote_most_votes_among_common_candidates():
    # seed 003: candidates are what every member supports; each votes for its first candidate.
    assert select_strategy([["range", "roundrobin"], ["roundrobin", "range"], ["roundrobin", "range", "sticky"]]) == "roundrobin"
    assert select_strategy([["sticky", "range"], ["range"], ["sticky", "range"]]) == "range"


def test_vote_tie_goes_to_the_first_members_preference():
    assert select_strategy([["range", "sticky"], ["sticky", "range"]]) == "range"
    assert select_strategy([["sticky", "range"], ["range", "sticky"]]) == "sticky"


def test_vote_without_common_strategy_is_an_error():
    with pytest.raises(InvalidInput, match="no strategy is supported by every member"):
        select_strategy([["range"], ["sticky"]])


def test_snapshot_without_strategy_votes_and_defaults_like_a_java_consumer():
    snapshot = {"topics": {"t": 2}, "members": [{"member_id": "a", "topics": ["t"]}, {"member_id": "b", "topics": ["t"], "strategies": ["cooperative-sticky", "range"]}]}
    # a: default [range, cooperative-sticky] votes range; b votes cooperative-sticky; tie -> a's order.
    assert assign(snapshot)["strategy"] == "range"
    assert assign(snapshot, "cooperative-sticky")["protocol"] == "COOPERATIVE"


def test_builtins_protocols_and_java_class_names():
    assert get_assignor("sticky").protocol is RebalanceProtocol.EAGER
    coop = get_assignor("cooperative-sticky")
    assert coop.supported_protocols == (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)
    assert coop.protocol is RebalanceProtocol.COOPERATIVE
    assert get_assignor("org.apache.kafka.clients.consumer.RoundRobinAssignor").name == "roundrobin"
    assert {"range", "roundrobin", "sticky", "cooperative-sticky", "random"} <= set(available())


def test_random_assignor_is_an_entry_point_plugin_and_deterministic():
    snapshot = {"topics": {"t0": 20, "t1": 5}, "members": [{"member_id": m, "topics": ["t0", "t1"]} for m in "abc"]}
    first = assign(snapshot, "random")
    assert first == assign(snapshot, "random")
    assert sorted(p for parts in first["assignment"].values() for p in parts) == sorted(
        [f"t0-{i}" for i in range(20)] + [f"t1-{i}" for i in range(5)]
    )
    assert len({len(v) for v in first["assignment"].values()}) > 1, "random, not round-robin"


class EverythingToTheFirst(SimplePartitionAssignor):
    name = "first"

    def assign_partitions(self, partitions_per_topic, subscriptions):
        first = sorted(subscriptions)[0]
        result = {m: [] for m in subscriptions}
        result[first] = [TopicPartition(t, p) for t, n in partitions_per_topic.items() for p in range(n)]
        return result


class TwiceAssigned(SimplePartitionAssignor):
    name = "twice"

    def assign_partitions(self, partitions_per_topic, subscriptions):
        return {m: [TopicPartition("t", 0)] for m in subscriptions}


def test_module_class_plugin_and_register():
    snapshot = {"topics": {"t": 3}, "members": [{"member_id": "b", "topics": ["t"]}, {"member_id": "a", "topics": ["t"]}]}
    result = assign(snapshot, f"{__name__}:EverythingToTheFirst")
    assert result == {"strategy": "first", "protocol": "EAGER", "assignment": {"b": [], "a": ["t-0", "t-1", "t-2"]}}
    register("first-registered", EverythingToTheFirst)
    assert assign(snapshot, "first-registered")["assignment"]["a"] == ["t-0", "t-1", "t-2"]


def test_a_plugin_that_assigns_twice_is_rejected():
    snapshot = {"topics": {"t": 1}, "members": [{"member_id": "b", "topics": ["t"]}, {"member_id": "a", "topics": ["t"]}]}
    with pytest.raises(InvalidInput, match="assigned twice"):
        assign(snapshot, f"{__name__}:TwiceAssigned")


def test_unknown_strategy_and_unloadable_plugin():
    snapshot = {"topics": {"t": 1}, "members": [{"member_id": "a", "topics": ["t"]}]}
    with pytest.raises(InvalidInput, match="unknown strategy 'nope'"):
        assign(snapshot, "nope")
    with pytest.raises(InvalidInput, match="cannot load assignor"):
        assign(snapshot, "no_such_module_xyz:Thing")
    with pytest.raises(InvalidInput, match="is not a PartitionAssignor"):
        assign(snapshot, "builtins:dict")
    assert issubclass(EverythingToTheFirst, PartitionAssignor)


def _prev(snapshot) -> dict[str, str]:
    group = ColumnarGroup.from_snapshot(GroupSnapshot.from_dict(snapshot))
    prev = previous_owners(group)
    names = group.partition_names()
    return {names[p]: group.member_ids[m] for p, m in enumerate(prev.tolist()) if m >= 0}


def test_previous_ownership_rules():
    snapshot = {
        "topics": {"t": 4, "u": 1},
        "members": [
            {"member_id": "a", "topics": ["t"], "owned": ["t-0", "t-1", "u-0", "gone-0", "t-9"], "generation": 5},
            {"member_id": "b", "topics": ["t", "u"], "owned": ["t-0", "t-2", "t-3"], "generation": 4},
            {"member_id": "c", "topics": ["t"], "owned": ["t-3"], "generation": 4},
        ],
    }
    # t-0: higher generation wins; u-0: a no longer subscribes; t-3: same-generation tie voids it;
    # gone-0 and t-9 do not exist any more.
    assert _prev(snapshot) == {"t-0": "a", "t-1": "a", "t-2": "b"}


def test_owner_array_round_trip():
    group = ColumnarGroup.from_snapshot(GroupSnapshot.from_dict({"topics": {"b": 2, "a": 1}, "members": [{"member_id": "x", "topics": ["a", "b"]}]}))
    assert group.topic_names == ("a", "b")
    owner = np.array([0, -1, 0])
    assert group.assignment_lists(owner) == {"x": ["a-0", "b-1"]}
    assert (group.owner_from_lists({"x": ["a-0", "b-1"]}) == owner).all()
