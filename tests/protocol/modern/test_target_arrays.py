"""The coordinator runs the built-in assignors on arrays (``TargetAssignment``, read back as the
next computation's current assignment) and gives what the dict API gives: the same target for
every member after every request, the same responses, from a group loaded with targets listed in
any topic order, through joins, leaves, static replacements, resubscriptions (to names, to
topics that do not exist, to a regex), topics created, grown, shrunk and deleted, and fencing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.assignors import server
from kafka_rebalance.assignors.server import ServerMember, build_server_group, build_server_group_from_held
from kafka_rebalance.protocol.modern.consumer import target as target_module
from kafka_rebalance.protocol.modern.consumer.assignment import partitions
from kafka_rebalance.protocol.modern.consumer.coordinator import (
    ConsumerGroupCoordinator,
    ConsumerGroupMember,
    MemberSubscriptionAndAssignment,
    default_server_assign,
)
from kafka_rebalance.protocol.modern.consumer.coordinator_events import (
    ConsumerGroupHeartbeatRequest,
    RequestReceived,
    Respond,
    SessionTimeout,
    TopicPartitions,
    TopicsChanged,
)
from kafka_rebalance.protocol.modern.consumer.target import TargetAssignment

TOPICS = ("a", "b", "c")


def through_dicts(assignor: str, topics: Mapping[str, int],
                  members: Sequence[MemberSubscriptionAndAssignment]) -> Mapping[str, Mapping[str, Sequence[int]]]:
    """The same assignors, but not the coordinator's default: it takes the dict path."""
    return default_server_assign(assignor, topics, members)


step = st.one_of(
    st.tuples(st.just("join"), st.integers(0, 7), st.sets(st.sampled_from(TOPICS), min_size=1),
              st.sampled_from(["uniform", "range"]), st.booleans()),
    st.tuples(st.just("heartbeat"), st.integers(0, 7)),
    st.tuples(st.just("leave"), st.integers(0, 7), st.booleans()),
    st.tuples(st.just("fence"), st.integers(0, 7)),
    st.tuples(st.just("resize"), st.sampled_from((*TOPICS, "d")), st.integers(-1, 6)),  # -1: deleted
    st.tuples(st.just("resubscribe"), st.integers(0, 7), st.sets(st.sampled_from((*TOPICS, "d", "zz")), min_size=1)),
    st.tuples(st.just("regex"), st.integers(0, 7), st.sampled_from(["[ab]", "c|d", "z.*"])),
)


@st.composite
def loaded_groups(draw: st.DrawFn) -> tuple[dict[str, int], list[ConsumerGroupMember], dict[str, dict[str, frozenset[int]]]]:
    """Members holding targets that do not overlap, each listed in a topic order of its own."""
    counts = {t: draw(st.integers(0, 6)) for t in TOPICS}
    members, targets = [], {}
    for i in range(draw(st.integers(0, 4))):
        subscribed = draw(st.sets(st.sampled_from(TOPICS), min_size=1))
        member_id = f"loaded-{i}"
        members.append(ConsumerGroupMember(member_id, rebalance_timeout_ms=5000,
                                           subscribed_topic_names=tuple(sorted(subscribed))))
        targets[member_id] = {t: frozenset() for t in draw(st.permutations(sorted(subscribed)))}
    for topic, count in counts.items():
        for number in range(count):
            holders = [m for m in targets if topic in targets[m]]
            if holders and draw(st.booleans()):
                holder = draw(st.sampled_from(holders))
                targets[holder][topic] = targets[holder][topic] | {number}
    return counts, members, {m: {t: ps for t, ps in held.items() if ps} for m, held in targets.items()}


def _run(group: ConsumerGroupCoordinator, event: object, now: int) -> list[object]:
    out = group.handle(event, now)  # type: ignore[arg-type]
    return [o.response for o in out if isinstance(o, Respond)]


@settings(max_examples=300, deadline=None)
@given(loaded_groups(), st.lists(step, max_size=25), st.booleans())
def test_arrays_and_dicts_give_the_same_targets(loaded, steps, sort_at_once) -> None:
    """``sort_at_once``: every target read sorts all members' holdings, which the next
    computation then takes as they are (renumbered) instead of sorting them again."""
    with pytest.MonkeyPatch.context() as patch:
        if sort_at_once:
            patch.setattr(target_module, "SCANS_BEFORE_SORTING", 0)
        _same_targets(loaded, steps)


def _same_targets(loaded, steps) -> None:
    counts, members, targets = loaded
    on_arrays = ConsumerGroupCoordinator.loaded("g", counts, 1, 1, members, targets)
    on_dicts = ConsumerGroupCoordinator.loaded("g", counts, 1, 1, members, targets, assign=through_dicts)
    epochs: dict[str, int] = {m.member_id: 1 for m in members}
    owned: dict[str, tuple[TopicPartitions, ...]] = {m.member_id: () for m in members}
    joined = 0
    for now, (kind, *args) in enumerate(steps, start=1):
        events: list[object] = []
        if kind == "join":
            slot, subscribed, assignor, static = args
            member_id = f"m{slot}-{joined}"
            joined += 1
            events.append(RequestReceived("c", ConsumerGroupHeartbeatRequest(
                "g", member_id, 0, instance_id=f"i{slot}" if static else None, rebalance_timeout_ms=5000,
                subscribed_topic_names=tuple(sorted(subscribed)), server_assignor=assignor, topic_partitions=())))
            epochs[member_id], owned[member_id] = 0, ()
        elif kind == "resize":
            topic, size = args
            counts = {name: count for name, count in counts.items() if name != topic}
            if size >= 0:
                counts[topic] = size
            events.append(TopicsChanged(tuple(sorted(counts.items()))))
        elif epochs:
            member_id = sorted(epochs)[args[0] % len(epochs)]
            if kind == "heartbeat":
                events.append(RequestReceived("c", ConsumerGroupHeartbeatRequest(
                    "g", member_id, epochs[member_id], topic_partitions=owned[member_id])))
            elif kind == "resubscribe":
                events.append(RequestReceived("c", ConsumerGroupHeartbeatRequest(
                    "g", member_id, epochs[member_id], topic_partitions=owned[member_id],
                    subscribed_topic_names=tuple(sorted(args[1])))))
            elif kind == "regex":
                events.append(RequestReceived("c", ConsumerGroupHeartbeatRequest(
                    "g", member_id, epochs[member_id], topic_partitions=owned[member_id],
                    subscribed_topic_names=(), subscribed_topic_regex=args[1])))
            elif kind == "leave":
                static = args[1] and on_arrays.members.get(member_id, None) is not None \
                    and on_arrays.members[member_id].instance_id is not None
                events.append(RequestReceived("c", ConsumerGroupHeartbeatRequest("g", member_id, -2 if static else -1)))
                del epochs[member_id]
            else:
                events.append(SessionTimeout(member_id))
                del epochs[member_id]
        for event in events:
            before = on_arrays.target
            answers = _run(on_arrays, event, now)
            if on_arrays.target is not before:  # a computation: its changed members, read from the moves
                after = on_arrays.target
                assert after.changed_members(before) == [
                    m for m in after if m not in before or after[m] != before[m]]
            assert answers == _run(on_dicts, event, now)
            for answer in answers:
                if getattr(answer, "member_id", None) in epochs and answer.error_code == 0:
                    epochs[answer.member_id] = answer.member_epoch
                    if answer.assignment is not None:
                        owned[answer.member_id] = answer.assignment
            assert dict(on_arrays.target) == dict(on_dicts.target)
            # The members in the same order, each target's topics too (Kafka's claim order).
            assert list(on_arrays.target) == list(on_dicts.target)
            assert [list(t) for t in on_arrays.target.values()] == [list(t) for t in on_dicts.target.values()]
            assert on_arrays.members == on_dicts.members
            if not on_arrays.metadata_refresh_needed:  # the subscriptions, as counted member by member
                subscribed = set().union(*(m.subscribed_topics(on_arrays.topics) for m in on_arrays.members.values()))
                assert on_arrays.subscription_metadata == {t: on_arrays.topics[t] for t in sorted(subscribed)}


def test_a_target_listed_out_of_java_order_is_read_from_its_map() -> None:
    """``HeldPartitions.current_owner`` answers None where only the map gives Kafka's claim
    order (topics listed out of Java order) or two members claim one partition."""
    counts = np.array([2, 2], dtype=np.int64)
    index = {"m0": 0, "m1": 1}
    out_of_order = TargetAssignment({"m0": partitions({"b": [0], "a": [1]})})
    assert out_of_order.current_assignment(["a", "b"], counts, index) is None
    overlapping = TargetAssignment({"m0": partitions({"a": [0]}), "m1": partitions({"a": [0, 1]})})
    assert overlapping.current_assignment(["a", "b"], counts, index) is None
    in_order = TargetAssignment({"m0": partitions({"a": [1], "b": [0]}), "m1": partitions({"a": [0]})})
    current = in_order.current_assignment(["a", "b"], counts, index)
    assert current is not None and current[0].tolist() == [1, 0, 0, -1]


def test_a_computed_target_is_the_groups_next_current_assignment() -> None:
    """Read back from the owner array, a computed target builds the group the dict API builds
    from the same target as maps (the members renumbered, a topic grown)."""
    topics = {"a": 3, "b": 2}
    members = [ServerMember(f"m{i}", ("a", "b"), {}) for i in range(3)]
    group = build_server_group(topics, members)
    owner = np.array([0, 1, 2, 2, 0], dtype=np.int64)
    target = TargetAssignment.computed(group, owner, ["m0", "m1", "m2"])
    grown = {"a": 4, "b": 2}
    later = [*members[::-1], ServerMember("m3", ("a",), {})]
    from_held = build_server_group_from_held(grown, later, target)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(target_module, "SCANS_BEFORE_SORTING", 0)
        read = TargetAssignment.computed(group, owner, ["m0", "m1", "m2"])
        assert all(read[m] == target[m] for m in ("m0", "m1", "m2"))  # read: every holding sorted once
    same_layout = build_server_group_from_held(topics, later, read)
    assert same_layout is not None and same_layout.held_given is not None  # handed on, not sorted again
    from_maps_now = build_server_group(topics, [ServerMember(m.member_id, m.subscribed_topics,
                                                             {t: tuple(sorted(ps)) for t, ps in target.get(m.member_id, {}).items()})
                                                for m in later])
    assert np.array_equal(same_layout.held_indptr, from_maps_now.held_indptr)
    assert np.array_equal(same_layout.held_partitions, from_maps_now.held_partitions)
    assert np.array_equal(same_layout.current_owner, from_maps_now.current_owner)
    as_maps = [ServerMember(m.member_id, m.subscribed_topics,
                            {t: tuple(sorted(ps)) for t, ps in target.get(m.member_id, {}).items()}) for m in later]
    from_maps = build_server_group(grown, as_maps)
    assert from_held is not None
    assert from_held.member_ids == from_maps.member_ids
    assert np.array_equal(from_held.current_owner, from_maps.current_owner)
    first, second, third = group.member_ids
    assert target[first] == {"a": frozenset([0]), "b": frozenset([1])}
    assert target[second] == {"a": frozenset([1])}
    assert list(target[third].items()) == [("a", frozenset([2])), ("b", frozenset([0]))]


def test_a_member_leaving_its_only_topic_keeps_nothing_of_it() -> None:
    """A member that stops subscribing to the one topic only it read: its next target has none
    of that topic's partitions, though no partition of the remaining topics changed hands (the
    topics' layout changed; found in review against the dict API)."""
    topics = {"a": 2, "t": 3}
    on_arrays = ConsumerGroupCoordinator("g", topics)
    on_dicts = ConsumerGroupCoordinator("g", topics, assign=through_dicts)
    requests = [ConsumerGroupHeartbeatRequest("g", "x", 0, rebalance_timeout_ms=5000, subscribed_topic_names=("t",),
                                              topic_partitions=()),
                ConsumerGroupHeartbeatRequest("g", "y", 0, rebalance_timeout_ms=5000, subscribed_topic_names=("a",),
                                              topic_partitions=()),
                ConsumerGroupHeartbeatRequest("g", "x", 1, topic_partitions=(TopicPartitions("t", (0, 1, 2)),)),
                ConsumerGroupHeartbeatRequest("g", "x", 1, topic_partitions=(TopicPartitions("t", (0, 1, 2)),),
                                              subscribed_topic_names=("u",))]
    for now, request in enumerate(requests):
        assert _run(on_arrays, RequestReceived("c", request), now) == _run(on_dicts, RequestReceived("c", request), now)
    assert dict(on_arrays.target) == dict(on_dicts.target)
    assert on_arrays.target["x"] == {}


def test_claims_of_topics_missing_from_an_empty_layout_are_dropped() -> None:
    """A loaded target naming a topic the metadata no longer has, with no topic left at all."""
    members = [ConsumerGroupMember("x", rebalance_timeout_ms=5000, subscribed_topic_names=("a",))]
    group = ConsumerGroupCoordinator.loaded("g", {}, 1, 1, members, {"x": partitions({"a": [0]})})
    _run(group, RequestReceived("c", ConsumerGroupHeartbeatRequest("g", "y", 0, rebalance_timeout_ms=5000,
                                                            subscribed_topic_names=("a",), topic_partitions=())), 1)
    assert dict(group.target) == {"x": {}, "y": {}}


def test_java_order_of_a_targets_topics_is_utf16_order_beyond_ascii() -> None:
    """Java compares topic names by UTF-16 code unit: a name beyond the BMP (a surrogate pair,
    0xD83D...) sorts before U+FF61, though Python's code-point order puts it after."""
    beyond, high = "\U0001f600", "\uff61"
    layout = [beyond, high]  # Java's order
    counts = np.array([1, 1], dtype=np.int64)
    in_java_order = TargetAssignment({"m0": partitions({beyond: [0], high: [0]})})
    current = in_java_order.current_assignment(layout, counts, {"m0": 0})
    assert current is not None and current[0].tolist() == [0, 0]
    in_python_order = TargetAssignment({"m0": partitions({high: [0], beyond: [0]})})
    assert in_python_order.current_assignment(layout, counts, {"m0": 0}) is None


def test_a_static_members_replacement_drops_the_old_subscription() -> None:
    """A static member that left (-2) comes back under a new member id with another
    subscription: the group's subscription metadata is the new one's and the other member's,
    nothing of the old one's (``ConsumerGroup.computeSubscriptionMetadata`` over the members)."""
    group = ConsumerGroupCoordinator.loaded("g", {"a": 2, "b": 2, "c": 2}, 1, 1, [
        ConsumerGroupMember("s1", instance_id="i1", rebalance_timeout_ms=5000, subscribed_topic_names=("a",)),
        ConsumerGroupMember("o", rebalance_timeout_ms=5000, subscribed_topic_names=("b",))], {})
    _run(group, RequestReceived("c", ConsumerGroupHeartbeatRequest("g", "s1", -2, instance_id="i1")), 1)
    _run(group, RequestReceived("c", ConsumerGroupHeartbeatRequest(
        "g", "s2", 0, instance_id="i1", rebalance_timeout_ms=5000, subscribed_topic_names=("c",),
        server_assignor="uniform", topic_partitions=())), 2)
    assert list(group.members) == ["o", "s2"]
    assert group.subscription_metadata == {"b": 2, "c": 2}


@pytest.mark.parametrize("sort_at_once", [False, True])
def test_members_joining_extend_the_last_group_and_give_the_same_targets(sort_at_once: bool) -> None:
    """Members only joining: each computation's group is the last one's arrays extended
    (``TargetAssignment.extended_group``), not built again member by member; the targets are
    the dict API's, and the members whose target changed are those whose partitions moved,
    and the joiner (Kafka's TargetAssignmentBuilder writes a record for each). Subscriptions
    differ (the group renumbered in Kafka's order, its holdings moved when the member table
    grows) or not (the members keep their numbers)."""
    counts = {"a": 70, "b": 50, "c": 30}
    on_arrays = ConsumerGroupCoordinator("g", counts)
    on_dicts = ConsumerGroupCoordinator("g", counts, assign=through_dicts)
    built = []
    patch = pytest.MonkeyPatch()
    if sort_at_once:  # every read sorts all holdings: the next group takes them as they are
        patch.setattr(target_module, "SCANS_BEFORE_SORTING", 0)
    patch.setattr(server, "build_server_group_from_held",
                  lambda *args: built.append(1) or build_server_group_from_held(*args))
    for i in range(60):  # the member table grows at 13, 25 and 49 members
        before = on_arrays.target
        subscribed = ("a", "b", "c") if i < 20 or i % 3 else ("a", "b")  # homogeneous, then not
        request = ConsumerGroupHeartbeatRequest("g", f"member-{i}", 0, rebalance_timeout_ms=5000,
                                                subscribed_topic_names=subscribed,
                                                server_assignor="range" if i % 4 == 0 else "uniform",
                                                topic_partitions=())
        assert _run(on_arrays, RequestReceived("c", request), i) == _run(on_dicts, RequestReceived("c", request), i)
        after = on_arrays.target
        changed = after.changed_members(before)
        assert changed == [m for m in after if m not in before or after[m] != before[m]]
        assert f"member-{i}" in changed
        if i % 5 == 0:  # some members read their targets (their sets are kept when unchanged)
            for member_id in list(after)[: i // 2]:
                after[member_id]
        assert dict(after) == dict(on_dicts.target)
        assert [list(t) for t in after.values()] == [list(t) for t in on_dicts.target.values()]
    patch.undo()
    assert len(built) == 1  # the first only: nothing computed before it


def test_a_group_is_extended_only_by_members_who_joined() -> None:
    """A member changed, left or listed again, or the topics changed: the group is built anew
    (None)."""
    group = build_server_group({"a": 4}, [ServerMember(f"m{i}", ("a",), {}) for i in range(3)])
    views = [ServerMember(m, ("a",), {}) for m in group.member_ids]
    target = TargetAssignment.computed(group, np.array([0, 1, 2, 0]), group.member_ids, views=views)
    joiner = ServerMember("m9", ("a",), {})
    assert target.extended_group({"a": 4}, [*views, joiner]) is not None
    assert target.extended_group({"a": 5}, [*views, joiner]) is None  # the layout changed
    assert target.extended_group({"a": 4}, [*views[:2], joiner]) is None  # one left
    resubscribed = ServerMember(views[2].member_id, ("a", "b"), {})
    assert target.extended_group({"a": 4}, [*views[:2], resubscribed, joiner]) is None  # one changed
    assert target.extended_group({"a": 4}, [*views, views[0]]) is None  # listed twice
    assert target.extended_group({"a": 4}, views) is None  # nobody joined
    extended, _ = target.extended_group({"a": 4}, [*views, joiner])  # type: ignore[misc]
    built = build_server_group_from_held({"a": 4}, [*views, joiner], target)
    assert built is not None
    # The same group, but for its numbering: the members keep theirs, the joiner takes the next.
    assert extended.member_ids == (*group.member_ids, "m9")
    walk = extended.iteration_order if extended.iteration_order is not None else range(4)
    assert [extended.member_ids[i] for i in walk] == list(built.member_ids)
    assert ([extended.member_ids[i] for i in extended.current_owner.tolist()]
            == [built.member_ids[i] for i in built.current_owner.tolist()])
    assert np.array_equal(np.diff(extended.held_indptr)[list(walk)], np.diff(built.held_indptr))
