"""tests/data/vectors/assign-kafka-reference.jsonl: group snapshots answered by Kafka's Java assignors.

Range and RoundRobin must be identical. Sticky must be valid, Kafka-balanced wherever Kafka's
answer is, at least as balanced by Kafka's score, and keep at least as many partitions.
CooperativeSticky must never hand a partition to a new owner while another member claims it,
and the follow-up rebalance must complete and balance the assignment.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from kafka_rebalance import assign
from kafka_rebalance.assignors import get_assignor
from kafka_rebalance.assignors.checks import (
    balance_score,
    is_balanced,
    kept_partitions,
    owners_subscribe,
    subscribed_partitions,
)
from kafka_rebalance.model import ColumnarGroup, GroupSnapshot
from tests.conftest import DATA

VECTORS = [json.loads(line) for line in (DATA / "vectors" / "assign-kafka-reference.jsonl").read_text().splitlines() if line.strip()]


def _ids(strategy: str) -> list:
    return [pytest.param(v, id=f"line{i + 1}-{v['strategy']}-r{v['round']}") for i, v in enumerate(VECTORS) if v["strategy"] == strategy]


def test_vector_file_covers_every_strategy():
    assert {v["strategy"] for v in VECTORS} == {"range", "roundrobin", "sticky", "cooperative-sticky"}


@pytest.mark.parametrize("vector", _ids("range") + _ids("roundrobin"))
def test_range_and_roundrobin_identical_to_kafka(vector):
    result = assign(vector["snapshot"], vector["strategy"])
    expected = {member: sorted(parts, key=_partition_key) for member, parts in vector["expected"].items()}
    assert result["assignment"] == expected
    assert result["protocol"] == "EAGER"


def _partition_key(name: str):
    topic, _, number = name.rpartition("-")
    return (topic.encode("utf-16-be"), int(number))


def _group(vector) -> ColumnarGroup:
    return ColumnarGroup.from_snapshot(GroupSnapshot.from_dict(vector["snapshot"]))


@pytest.mark.parametrize("vector", _ids("sticky"))
def test_sticky_as_balanced_and_as_sticky_as_kafka(vector):
    group = _group(vector)
    ours = get_assignor("sticky").assign_columnar(group)
    kafka = group.owner_from_lists(vector["expected"])
    assert owners_subscribe(group, ours)
    assert ((ours >= 0) == subscribed_partitions(group)).all(), "every subscribed partition assigned once"
    assert is_balanced(group, ours) or not is_balanced(group, kafka)
    assert balance_score(group, ours) <= balance_score(group, kafka)
    assert kept_partitions(group, ours) >= kept_partitions(group, kafka)


@pytest.mark.parametrize("vector", _ids("cooperative-sticky"))
def test_cooperative_sticky_never_hands_over_an_owned_partition_and_converges(vector):
    group = _group(vector)
    ours = get_assignor("cooperative-sticky").assign_columnar(group)
    assert owners_subscribe(group, ours)
    claimant_of = {}
    for m in range(group.num_members):
        for p in group.owned(m).tolist():
            claimant_of.setdefault(p, set()).add(m)
    for p, claimants in claimant_of.items():
        if ours[p] >= 0:
            assert claimants <= {int(ours[p])}, f"partition {p} handed over while still owned"

    # Follow-up rebalance: every member now owns exactly what it was given, one generation on.
    result = assign(vector["snapshot"], "cooperative-sticky")["assignment"]
    follow_up = json.loads(json.dumps(vector["snapshot"]))
    generation = max([m.get("generation", -1) for m in follow_up["members"]] + [0]) + 1
    for m in follow_up["members"]:
        m["owned"] = result[m["member_id"]]
        m["generation"] = generation
    group2 = ColumnarGroup.from_snapshot(GroupSnapshot.from_dict(follow_up))
    final = get_assignor("cooperative-sticky").assign_columnar(group2)
    assert ((final >= 0) == subscribed_partitions(group2)).all(), "follow-up completes the assignment"
    assert is_balanced(group2, final)
    assert np.array_equal(final[ours >= 0], ours[ours >= 0]), "nothing given in round one moves again"


def test_sticky_pair_is_rack_aware_nearly_as_often_as_kafka():
    def rack_local(group, owner):
        count = 0
        for p, m in enumerate(owner.tolist()):
            t = int(group.partition_topic[p])
            racks = group.partition_racks[t]
            if m >= 0 and racks is not None and group.member_racks[m] is not None:
                count += group.member_racks[m] in racks[p - int(group.topic_offsets[t])]
        return count

    ours = kafka = 0
    for vector in VECTORS:
        if "sticky" in vector["strategy"]:
            group = _group(vector)
            ours += rack_local(group, get_assignor(vector["strategy"]).assign_columnar(group))
            kafka += rack_local(group, group.owner_from_lists(vector["expected"]))
    assert kafka > 0 and ours >= 0.9 * kafka
