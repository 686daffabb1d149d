"""Invariants over random groups (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from kafka_rebalance import assign
from kafka_rebalance.assignors import get_assignor
from kafka_rebalance.assignors.checks import (
    is_balanced,
    kept_partitions,
    member_loads,
    owners_subscribe,
    subscribed_partitions,
)
from kafka_rebalance.model import ColumnarGroup, GroupSnapshot

STRATEGIES = ["range", "roundrobin", "sticky", "cooperative-sticky"]


@st.composite
def topic_maps(draw):
    count = draw(st.integers(1, 5))
    return {f"t{i}": draw(st.integers(0, 9)) for i in range(count)}


@st.composite
def groups(draw, uniform: bool | None = None):
    topics = draw(topic_maps())
    names = list(topics)
    count = draw(st.integers(1, 7))
    all_same = draw(st.booleans()) if uniform is None else uniform
    shared = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    members = []
    for i in range(count):
        subs = shared if all_same else draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        static = draw(st.sampled_from([None, None, f"inst-{draw(st.integers(0, 9))}"]))
        member = {"member_id": f"m{draw(st.integers(0, 99)):02d}-{i}", "topics": subs}
        if static and static not in {m.get("group_instance_id") for m in members}:
            member["group_instance_id"] = static
        members.append(member)
    return {"topics": topics, "members": members}


def _columnar(snapshot) -> ColumnarGroup:
    return ColumnarGroup.from_snapshot(GroupSnapshot.from_dict(snapshot))


def _evolve(draw, snapshot, assignment, generation: int):
    """The next rebalance: some members leave, some join, survivors claim what they got."""
    names = list(snapshot["topics"])
    members = []
    for m in snapshot["members"]:
        if draw(st.integers(0, 3)) == 0:
            continue  # left the group
        survivor = dict(m, owned=assignment[m["member_id"]], generation=generation)
        if draw(st.integers(0, 5)) == 0:
            survivor["topics"] = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        members.append(survivor)
    for j in range(draw(st.integers(0, 3))):
        members.append({"member_id": f"new-{generation}-{j}", "topics": draw(st.lists(st.sampled_from(names), min_size=1, unique=True))})
    if not members:
        members.append({"member_id": "last", "topics": names})
    return {"topics": snapshot["topics"], "members": members}


@given(groups(), st.sampled_from(STRATEGIES))
def test_every_partition_owned_at_most_once_and_only_by_a_subscriber(snapshot, strategy):
    result = assign(snapshot, strategy)
    flat = [p for parts in result["assignment"].values() for p in parts]
    assert len(flat) == len(set(flat))
    assert set(result["assignment"]) == {m["member_id"] for m in snapshot["members"]}
    group = _columnar(snapshot)
    owner = group.owner_from_lists(result["assignment"])
    assert owners_subscribe(group, owner)
    if strategy != "cooperative-sticky" or not any(m.get("owned") for m in snapshot["members"]):
        assert ((owner >= 0) == subscribed_partitions(group)).all(), "every subscribed partition assigned"


@given(groups(uniform=True), st.sampled_from(["roundrobin", "sticky", "cooperative-sticky"]))
def test_uniform_subscriptions_are_even(snapshot, strategy):
    group = _columnar(snapshot)
    loads = member_loads(group, get_assignor(strategy).assign_columnar(group))
    assert loads.max() - loads.min() <= 1


@given(st.data())
def test_sticky_stays_balanced_and_sticky_through_membership_changes(data):
    snapshot = data.draw(groups())
    assignment = assign(snapshot, "sticky")["assignment"]
    for generation in range(1, 4):
        snapshot = _evolve(data.draw, snapshot, assignment, generation)
        group = _columnar(snapshot)
        owner = get_assignor("sticky").assign_columnar(group)
        assert owners_subscribe(group, owner)
        assert ((owner >= 0) == subscribed_partitions(group)).all()
        assert is_balanced(group, owner)
        if len({tuple(sorted(m["topics"])) for m in snapshot["members"]}) == 1:
            assert kept_partitions(group, owner) == _best_uniform_kept(group)
        assignment = group.assignment_lists(owner)


def _best_uniform_kept(group: ColumnarGroup) -> int:
    """With equal subscriptions: loads are q or q+1 (r members get q+1); the most a balanced
    assignment can keep gives the q+1 slots to the members that held the most."""
    from kafka_rebalance.assignors import previous_owners

    prev = previous_owners(group)
    held = np.sort(np.bincount(prev[prev >= 0], minlength=group.num_members))[::-1]
    total = int(subscribed_partitions(group).sum())
    q, r = divmod(total, group.num_members)
    quotas = np.array([q + 1] * r + [q] * (group.num_members - r))
    return int(np.minimum(held, quotas).sum())


@given(groups())
def test_sticky_moves_nothing_when_nothing_changed(snapshot):
    first = assign(snapshot, "sticky")["assignment"]
    again = dict(snapshot, members=[dict(m, owned=first[m["member_id"]], generation=1) for m in snapshot["members"]])
    assert assign(again, "sticky")["assignment"] == first


@given(st.data())
def test_cooperative_never_two_owners_and_converges_in_the_follow_up(data):
    snapshot = data.draw(groups())
    owned = assign(snapshot, "sticky")["assignment"]
    generation = 1
    for _ in range(3):
        snapshot = _evolve(data.draw, snapshot, owned, generation)
        claims = {m["member_id"]: set(m.get("owned", ())) for m in snapshot["members"]}
        first = assign(snapshot, "cooperative-sticky")["assignment"]
        for member, parts in first.items():
            for p in parts:
                others = [o for o, c in claims.items() if o != member and p in c]
                assert not others, f"{p} handed to {member} while {others} still own it"
        # Members revoke what they were not given and rejoin: the follow-up rebalance.
        generation += 1
        follow = dict(snapshot, members=[dict(m, owned=first[m["member_id"]], generation=generation) for m in snapshot["members"]])
        second = assign(follow, "cooperative-sticky")["assignment"]
        group = _columnar(follow)
        owner = group.owner_from_lists(second)
        assert ((owner >= 0) == subscribed_partitions(group)).all(), "complete after the follow-up"
        assert is_balanced(group, owner)
        for member, parts in first.items():
            assert set(parts) <= set(second[member]), "the follow-up revokes nothing more"
        owned = second
        generation += 1
