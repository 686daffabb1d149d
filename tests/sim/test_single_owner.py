"""The single-owner invariant, judged from each consumer's own view (``SimulationResult.held``):
no two consumers believe they own a partition at the same instant, except a consumer the group
has already moved on without (fenced), which must not be able to commit."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_rebalance.assignors.registry import register
from kafka_rebalance.assignors.roundrobin import RoundRobinAssignor
from kafka_rebalance.model import RebalanceProtocol
from kafka_rebalance.sim import load_scenario, run_simulation
from kafka_rebalance.sim.invariants import SINGLE_OWNER, check_observation, check_schedule, first_overlap
from kafka_rebalance.sim.observation import Commit, Held, observation_of
from kafka_rebalance.sim.result import NOT_FENCED
from kafka_rebalance.sim.schedules import random_schedule


class RoundRobinClaimingCooperative(RoundRobinAssignor):
    """Deliberately broken: deals partitions round-robin, ignoring who owns what, yet declares
    COOPERATIVE, so a partition is given to its new owner in the same rebalance in which the old
    owner is told to revoke it. (A Java leader refuses this for any cooperative assignor but
    CooperativeSticky: ConsumerCoordinator.validateCooperativeAssignment.)"""

    name = "broken-cooperative"
    supported_protocols = (RebalanceProtocol.COOPERATIVE,)


register(RoundRobinClaimingCooperative.name, RoundRobinClaimingCooperative)


def second_member_joins(strategy: str):
    """a owns t-0..3, b joins 3 s later; revocation listeners take 300 ms."""
    return run_simulation(load_scenario({
        "name": f"second-member-joins-{strategy}",
        "config": {"session_timeout_ms": 10000, "heartbeat_interval_ms": 3000, "network_latency_ms": 5,
                   "revocation_ms": 300, "group_initial_rebalance_delay_ms": 0},
        "topics": {"t": 4},
        "consumers": [{"id": name, "strategies": [strategy], "subscribe": ["t"]} for name in ("a", "b")],
        "events": [{"at_ms": 0, "join": "a"}, {"at_ms": 3000, "join": "b"}],
        "end_ms": 20000,
    }))


def test_a_partition_given_before_its_owner_revoked_it_is_two_owners():
    """a owns t-0..3; b joins and the broken assignor gives b t-1 and t-3 while a is told to revoke
    them in the same generation. a owns them until its onPartitionsRevoked returns (300 ms of
    listener work), b from its onPartitionsAssigned: two owners at once. The group's view (the
    old check, over ``ownership``) never saw it: a consumer there owns a partition only from
    its committed-offset fetch, and a second claimant was not recorded at all (nor counted in
    ``ownership_conflicts``: a's revocation was handled first, its listener still running)."""
    run = second_member_joins(RoundRobinClaimingCooperative.name)
    seen = observation_of(run)
    old = dataclasses.replace(seen, held=None)
    assert SINGLE_OWNER not in [v.invariant for v in check_observation(old)]
    found = [v for v in check_observation(seen) if v.invariant == SINGLE_OWNER]
    assert len(found) == 1 and found[0].detail.startswith("t-1: a#1")


def test_a_correct_cooperative_handover_is_one_owner_at_a_time():
    """The same group with CooperativeSticky: t-1 and t-3 go to b only in the follow-up rebalance,
    after a's onPartitionsRevoked returned (ConsumerCoordinator.onJoinComplete requests it)."""
    run = second_member_joins("cooperative-sticky")
    assert check_observation(observation_of(run)) == []
    held = run.held
    assert held is not None
    moved = {str(p) for p, m in zip(held.partition, held.member, strict=True) if m == "b"}
    assert len(moved) == 2
    for partition in moved:
        a_end = held.end_ms[(held.partition == partition) & (held.member == "a")].max()
        b_start = held.start_ms[(held.partition == partition) & (held.member == "b")].min()
        assert a_end <= b_start


def test_a_zombie_outside_the_group_overlaps_only_after_it_was_fenced():
    """a (dynamic) freezes in a GC pause longer than its session: the coordinator removes it
    (GroupCoordinator.onExpireHeartbeat) and gives everything to b, while a still believes it
    owns its partitions until it wakes and hears UNKNOWN_MEMBER_ID (onPartitionsLost). That
    overlap is allowed because it lies after the group fenced a, and a cannot commit then."""
    run = run_simulation(load_scenario({
        "config": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 2000, "network_latency_ms": 5,
                   "group_initial_rebalance_delay_ms": 0},
        "topics": {"t": 2},
        "produce": [{"topic": "t", "records_per_s": 50, "keys": 10}],
        "consumers": [{"id": name, "strategies": ["cooperative-sticky"], "subscribe": ["t"]} for name in ("a", "b")],
        "events": [{"at_ms": 0, "join": "a"}, {"at_ms": 0, "join": "b"}, {"at_ms": 10000, "pause": "a", "for_ms": 15000}],
        "end_ms": 60000,
    }))
    seen = observation_of(run)
    assert check_observation(seen) == []
    assert seen.held is not None
    zombie = [h for h in seen.held if h.member == "a" and h.fenced_ms is not None]
    assert zombie and all(10000 < h.fenced_ms < 25000 <= h.end_ms for h in zombie)
    taken_over = {h.partition for h in seen.held if h.member == "b" and h.start_ms < 25000}
    assert {h.partition for h in zombie} <= taken_over  # the two views did overlap
    # Had the zombie's commit been accepted after the fence, the invariant would say so.
    late = Commit(zombie[0].fenced_ms + 1, zombie[0].partition, 10**9, "a", zombie[0].generation, True,
                  zombie[0].incarnation)
    broken = dataclasses.replace(seen, commits=(*(seen.commits or ()), late))
    found = [v for v in check_observation(broken) if v.invariant == SINGLE_OWNER]
    assert len(found) == 1 and "after the group fenced its hold" in found[0].detail
    # One accepted at the fencing instant was handled before it (soak seed 0, consumer schedules
    # 5741 and 6777, lossy: an auto-commit and the session timer in the same millisecond).
    same_instant = Commit(zombie[0].fenced_ms, zombie[0].partition, 10**9, "a", zombie[0].generation, True,
                          zombie[0].incarnation)
    assert [v for v in check_observation(dataclasses.replace(seen, commits=(*(seen.commits or ()), same_instant)))
            if v.invariant == SINGLE_OWNER] == []


def test_a_static_member_kept_without_rejoining_is_fenced_when_the_generation_forms():
    """A static member that misses a rebalance is kept in the group (GroupCoordinator.
    onCompleteJoin removes only dynamic members that did not rejoin), but the generation formed
    without it: from then its holds are fenced, and any commit of its old generation is
    ILLEGAL_GENERATION."""
    run = run_simulation(load_scenario({
        "config": {"session_timeout_ms": 30000, "heartbeat_interval_ms": 3000, "max_poll_interval_ms": 8000,
                   "network_latency_ms": 5, "group_initial_rebalance_delay_ms": 0},
        "topics": {"t": 4},
        "produce": [{"topic": "t", "records_per_s": 50, "keys": 10}],
        "consumers": [{"id": "a", "strategies": ["range"], "subscribe": ["t"], "group_instance_id": "static-a"},
                      {"id": "b", "strategies": ["range"], "subscribe": ["t"]},
                      {"id": "c", "strategies": ["range"], "subscribe": ["t"]}],
        "events": [{"at_ms": 0, "join": "a"}, {"at_ms": 0, "join": "b"}, {"at_ms": 5000, "pause": "a", "for_ms": 15000},
                   {"at_ms": 6000, "join": "c"}],
        "end_ms": 80000,
    }))
    seen = observation_of(run)
    assert [v.invariant for v in check_observation(seen) if v.invariant == SINGLE_OWNER] == []
    assert seen.held is not None
    assert any(h.member == "a" and h.fenced_ms is not None for h in seen.held)


# ----------------------------------------------------------------------------- properties

INTERVALS = st.lists(st.tuples(st.sampled_from("pq"), st.sampled_from("abc"), st.integers(0, 50), st.integers(0, 50)),
                     max_size=8)


@settings(max_examples=400, deadline=None)
@given(INTERVALS)
def test_the_sweep_finds_an_overlap_exactly_when_two_owners_share_an_instant(rows):
    intervals = [(p, owner, 1, start, start + length) for p, owner, start, length in rows]
    pairwise = any(x[0] == y[0] and x[1] != y[1] and max(x[3], y[3]) < min(x[4], y[4])
                   for x, y in itertools.combinations(intervals, 2))
    assert (first_overlap(intervals, "owns it") is not None) is pairwise


@settings(max_examples=60, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(st.integers(min_value=0, max_value=2**48))
def test_every_consumer_owns_what_the_group_says_it_owns(seed):
    """On random soak schedules: a consumer's own holds of a partition never overlap each other,
    a fence falls inside its hold, and every interval of the group's view (``ownership``) lies
    inside a hold of the same consumer (the group never counts someone as owner who does not
    believe it is one)."""
    run = run_simulation(load_scenario(random_schedule(seed)))
    held = run.held
    assert held is not None
    assert (held.start_ms < held.end_ms).all()
    fenced = held.fenced_ms != NOT_FENCED
    assert ((held.start_ms[fenced] <= held.fenced_ms[fenced]) & (held.fenced_ms[fenced] <= held.end_ms[fenced])).all()
    holds: dict[tuple[str, str], list[Held]] = {}
    for row in zip(held.partition.tolist(), held.member.tolist(), held.incarnation.tolist(), held.generation.tolist(),
                   held.start_ms.tolist(), held.end_ms.tolist(), strict=True):
        holds.setdefault((row[0], row[1]), []).append(Held(*row))
    for spans in holds.values():
        spans.sort(key=lambda h: h.start_ms)
        assert all(x.end_ms <= y.start_ms for x, y in itertools.pairwise(spans))
    o = run.ownership
    for partition, member, start, end in zip(o.partition.tolist(), o.member.tolist(), o.start_ms.tolist(),
                                             o.end_ms.tolist(), strict=True):
        assert any(h.start_ms <= start and end <= h.end_ms for h in holds.get((partition, member), ())), (
            partition, member, start, end)
    assert np.all(np.isin(o.member, held.member))


def test_a_member_removed_by_the_old_coordinator_is_a_member_again_after_a_failover():
    """c2 freezes past its session; the old coordinator removes it (MemberFailed) and prepares a
    rebalance, but leadership of __consumer_offsets moves before a new generation is stored. The
    new coordinator loads the group as stored, generation 2 with c2 in it
    (GroupMetadataManager.loadGroup: a removal is stored only with the next generation), so
    c2's commits of its old generation are accepted again: its hold was fenced only while the
    old coordinator had it removed. Found by the soak property (seed 551349456), shrunk."""
    schedule = {
        "name": "removed-then-reloaded",
        "config": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1500, "max_poll_interval_ms": 8000,
                   "group_initial_rebalance_delay_ms": 0, "auto_commit_interval_ms": 1000, "metadata_max_age_ms": 3000,
                   "network_latency_ms": 5, "coordinator_load_ms": 0, "idle_poll_ms": 500},
        "topics": {"t0": 1},
        "consumers": [{"id": "c2", "strategies": ["cooperative-sticky"], "subscribe": ["t0"]},
                      {"id": "c3", "strategies": ["cooperative-sticky"], "pattern": "p-.*"}],
        "events": [{"at_ms": 2681, "join": "c3"}, {"at_ms": 7819, "join": "c2"},
                   {"at_ms": 48951, "pause": "c2", "for_ms": 8000},
                   {"at_ms": 54506, "add_partitions": {"topic": "t0", "count": 2}},
                   {"at_ms": 55084, "coordinator_failover": {}}],
        "end_ms": 97951,
    }
    assert check_schedule(schedule) == []
    seen = observation_of(run_simulation(load_scenario(schedule)))
    assert seen.held is not None and seen.commits is not None
    fenced = [h for h in seen.held if h.member == "c2" and h.partition == "t0-0" and h.fenced_ms is not None]
    assert [(h.fenced_ms, h.end_ms) for h in fenced] == [(54951, 55084)]  # removed until the new coordinator loads
    assert any(c.member == "c2" and c.partition == "t0-0" and c.accepted and c.time_ms > 55084 and c.generation == 2
               for c in seen.commits)


def test_a_zombie_adopting_a_stale_assignment_holds_it_outside_the_group():
    """c4 (eager, dynamic) is frozen by a 12 s GC pause with its generation-2 SyncGroup answer
    waiting in its socket; its 10 s session runs out and the group forms generation 3 without
    it, giving p-0-1 to c1. On waking, c4 completes generation 2 (onPartitionsAssigned: p-0-1),
    as a Java consumer would, until its next heartbeat says UNKNOWN_MEMBER_ID
    (onPartitionsLost). That hold is outside the group from its first instant: fenced from the
    start, and not an overlap. Found by the soak property (seed 833861), shrunk."""
    schedule = {
        "name": "stale-sync-answer-after-a-pause",
        "config": {"session_timeout_ms": 10000, "heartbeat_interval_ms": 3333, "max_poll_interval_ms": 15000,
                   "group_initial_rebalance_delay_ms": 0, "auto_commit_interval_ms": 1000,
                   "metadata_max_age_ms": 10000, "network_latency_ms": 0, "network_jitter_ms": 200,
                   "coordinator_load_ms": 0, "idle_poll_ms": 500},
        "topics": {"t0": 1, "t1": 1, "t2": 1, "p-0": 2},
        "consumers": [{"id": "c1", "strategies": ["roundrobin"], "pattern": "p-.*", "group_instance_id": "static-1"},
                      {"id": "c2", "strategies": ["roundrobin"], "subscribe": ["t0", "t1", "t2"]},
                      {"id": "c3", "strategies": ["roundrobin"], "pattern": "p-.*"},
                      {"id": "c4", "strategies": ["roundrobin"], "pattern": "p-.*"}],
        "produce": [{"topic": "t0", "records_per_s": 50, "keys": 100}, {"topic": "t1", "records_per_s": 200, "keys": 100},
                    {"topic": "t2", "records_per_s": 50, "keys": 20}],
        "events": [{"at_ms": 0, "join": "c1"}, {"at_ms": 0, "join": "c4"}, {"at_ms": 4072, "pause": "c4", "for_ms": 12000}],
        "seed": 833861,
        "end_ms": 86072,
    }
    assert check_schedule(schedule) == []
    seen = observation_of(run_simulation(load_scenario(schedule)))
    assert seen.held is not None
    stale = [h for h in seen.held if h.member == "c4" and h.start_ms == 16072]
    assert [(h.partition, h.generation) for h in stale] == [("p-0-1", 2)]
    assert stale[0].fenced_ms is not None and stale[0].fenced_ms < stale[0].start_ms
    c1 = [h for h in seen.held if h.member == "c1" and h.partition == "p-0-1" and h.generation == 3]
    assert c1 and c1[0].start_ms < 16072 < c1[0].end_ms  # the two views overlapped


def test_a_static_member_let_back_into_the_generation_owns_what_it_is_given():
    """c3 (static) is paused through generation 4's join phase: kept in the group without
    rejoining (GroupCoordinator.onCompleteJoin), fenced. On waking, ILLEGAL_GENERATION makes it
    give up p-0-1 as lost and rejoin; the group is still CompletingRebalance and its metadata
    unchanged, so it is answered generation 4 at once (GroupCoordinator.doCurrentMemberJoinGroup)
    and SyncGroup gives it p-0-1 again. From that JoinGroup answer it is a member of generation
    4: its new hold is not fenced, and its commits of generation 4 are accepted. Found by the
    soak (seed 0, schedule 404), shrunk."""
    schedule = {
        "name": "static-member-back-in-the-same-generation",
        "config": {"session_timeout_ms": 10000, "heartbeat_interval_ms": 3333, "max_poll_interval_ms": 8000,
                   "group_initial_rebalance_delay_ms": 0, "auto_commit_interval_ms": 500, "metadata_max_age_ms": 3000,
                   "network_latency_ms": 2, "network_jitter_ms": 30, "coordinator_load_ms": 0, "idle_poll_ms": 500},
        "topics": {"p-0": 2},
        "consumers": [
            {"id": "c1", "strategies": ["range", "cooperative-sticky"], "subscribe": ["p-0"]},
            {"id": "c2", "strategies": ["range", "cooperative-sticky"], "pattern": "p-.*", "group_instance_id": "static-2"},
            {"id": "c3", "strategies": ["range", "cooperative-sticky"], "pattern": "p-.*", "group_instance_id": "static-3"},
        ],
        "events": [{"at_ms": 1033, "join": "c2"}, {"at_ms": 2108, "join": "c1"}, {"at_ms": 5807, "crash": "c1"},
                   {"at_ms": 9503, "join": "c3"}, {"at_ms": 32444, "join": "c1"},
                   {"at_ms": 35528, "pause": "c3", "for_ms": 5000}, {"at_ms": 48277, "pause": "c1", "for_ms": 12000}],
        "seed": 129109275562591,
        "end_ms": 109277,
    }
    assert check_schedule(schedule) == []
    seen = observation_of(run_simulation(load_scenario(schedule)))
    assert seen.held is not None and seen.commits is not None
    c3 = [h for h in seen.held if h.member == "c3" and h.partition == "p-0-1"]
    assert [h.generation for h in c3 if h.fenced_ms is not None] == [3]
    assert 4 in [h.generation for h in c3 if h.fenced_ms is None]
    assert any(c.member == "c3" and c.generation == 4 and c.accepted for c in seen.commits)
