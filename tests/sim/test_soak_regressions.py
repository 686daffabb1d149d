"""Schedules the soak found breaking an invariant (or hanging the simulator), shrunk, kept as
regression tests. Each runs with a wall-clock bound: a livelock at one virtual instant would
otherwise hang the suite."""

from __future__ import annotations

import signal
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from kafka_rebalance.sim import load_scenario
from kafka_rebalance.sim.invariants import check_schedule
from kafka_rebalance.sim.run import run_simulation


@contextmanager
def wall_clock_limit(seconds: int):
    def expired(*_):
        raise TimeoutError(f"the simulation did not finish within {seconds} s of wall time")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_join_retries_back_off_while_the_new_coordinator_loads():
    """With zero network latency, a JoinGroup answered COORDINATOR_LOAD_IN_PROGRESS was re-sent at
    once, answered at once, re-sent... forever at one virtual instant (the simulator hung).
    Kafka's AbstractCoordinator.joinGroupIfNeeded sleeps retry.backoff.ms after a retriable
    error (only UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS and
    MEMBER_ID_REQUIRED rejoin at once). Found by the soak (seed 1, schedule 6), shrunk."""
    schedule = {
        "name": "failover-during-a-rebalance-with-zero-latency",
        "group": "soak-group-34",
        "config": {"session_timeout_ms": 10000, "heartbeat_interval_ms": 2500, "max_poll_interval_ms": 8000,
                   "group_initial_rebalance_delay_ms": 0, "auto_commit_interval_ms": 500,
                   "metadata_max_age_ms": 3000, "network_latency_ms": 0, "coordinator_load_ms": 1000,
                   "idle_poll_ms": 100},
        "topics": {"t0": 1},
        "consumers": [{"id": name, "strategies": ["range"], "subscribe": ["t0"]} for name in ("c1", "c3", "c4")],
        "events": [{"at_ms": 0, "join": "c1"}, {"at_ms": 0, "join": "c4"}, {"at_ms": 15759, "crash": "c1"},
                   {"at_ms": 22385, "join": "c3"}, {"at_ms": 24470, "crash": "c4"},
                   {"at_ms": 29198, "coordinator_failover": {}}],
        "end_ms": 80198,
    }
    load_scenario(schedule)
    with wall_clock_limit(20):
        assert check_schedule(schedule) == []


def test_rebalances_name_a_member_whose_join_response_is_still_in_flight():
    """A static member's JoinGroup response was slower (jitter) than the leader's SyncGroup, so the
    rebalance was recorded before the simulator learnt the member id's consumer: the assignment
    named ``static-1-<uuid>`` instead of ``c1``. Found by the soak (seed 1, schedule 51)."""
    from kafka_rebalance.sim import run_simulation
    from kafka_rebalance.sim.schedules import random_schedule, schedule_seed

    schedule = random_schedule(schedule_seed(1, 51))
    names = {c["id"] for c in schedule["consumers"]}
    with wall_clock_limit(20):
        result = run_simulation(schedule)
    for rebalance in result.rebalances:
        assert {m.member for m in rebalance.assignment} <= names
        assert set(rebalance.members) <= names


def test_requests_on_one_connection_arrive_in_order_whatever_the_jitter():
    """With 200 ms of jitter, a consumer's auto-commit of offset 192 overtook its earlier commit of
    193 and moved the committed offset backwards. A Kafka connection is TCP: requests arrive, and
    the broker handles them, in the order they were sent. Found by the soak (seed 1, schedule 18)."""
    from kafka_rebalance.sim.schedules import random_schedule, schedule_seed

    with wall_clock_limit(20):
        assert check_schedule(random_schedule(schedule_seed(1, 18))) == []


def test_a_request_sent_in_the_past_queues_behind_one_arriving_at_this_instant():
    """The same rule at one virtual instant: two of c1's OffsetCommit requests (2409, then 2424)
    were due to arrive at 72903 ms and still queued when a summarised auto-commit sent at 72788 ms
    (2426) was delivered at once, ahead of them; the coordinator then accepted 2409 after 2426.
    A Kafka connection is TCP: the broker handles requests in the order they were sent
    (KafkaApis reads one request per connection at a time; SocketServer mutes the channel until
    the response is sent). Found by the 100,000-schedule soak (seed 0, schedule 18129), shrunk."""
    schedule = yaml.safe_load((Path(__file__).parent / "soak_in_order" / "seed0-schedule18129.yaml").read_text())
    with wall_clock_limit(20):
        assert check_schedule(schedule) == []
        commits = run_simulation(load_scenario(schedule)).commits
    offsets = [commits.offset[i] for i in range(len(commits.offset))
               if commits.partition[i] == "p-0-0" and commits.member[i] == "c1" and commits.error_code[i] == 0]
    assert offsets == sorted(offsets)


def test_a_clean_close_mid_batch_commits_only_what_was_processed():
    """A slow consumer restarted in the middle of a batch committed the position after the whole
    batch on close, so the records it had fetched but not processed were never consumed by
    anyone. Found by the soak (seed 1, schedule 0)."""
    from kafka_rebalance.sim.schedules import random_schedule, schedule_seed

    with wall_clock_limit(20):
        assert check_schedule(random_schedule(schedule_seed(1, 0))) == []


def test_a_returning_static_leader_watches_partition_counts():
    """A static leader bounced within its session timeout is let back without a rebalance
    (KIP-814 skip_assignment); it must still watch the group's topics as the leader
    (ConsumerCoordinator.onLeaderElected: assignmentSnapshot = metadataSnapshot). It did not, so
    a partition added later was never assigned. Found by the soak (seed 1, schedule 128)."""
    schedule = {
        "name": "static-leader-bounce-then-partition-increase",
        "config": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1200, "max_poll_interval_ms": 30000,
                   "metadata_max_age_ms": 3000, "group_initial_rebalance_delay_ms": 1000},
        "topics": {"t0": 1},
        "consumers": [{"id": "c1", "strategies": ["cooperative-sticky"], "subscribe": ["t0"],
                       "group_instance_id": "static-1"},
                      {"id": "c2", "strategies": ["cooperative-sticky"], "subscribe": ["t0"]}],
        "events": [{"at_ms": 0, "join": "c1"}, {"at_ms": 3000, "join": "c2"},
                   {"at_ms": 22633, "restart": "c1", "after_ms": 3000},
                   {"at_ms": 52653, "add_partitions": {"topic": "t0", "count": 2}}],
        "end_ms": 120000,
    }
    with wall_clock_limit(20):
        assert check_schedule(schedule) == []


def test_a_stale_wake_up_deferred_by_a_pause_does_not_drop_a_batch():
    """A slow consumer frozen by a GC pause had an idle-poll wake-up deferred; on resume an
    earlier deferred response made it poll and take a batch, then the stale wake-up polled again
    and replaced that batch: its records were committed past and never processed. Found by the
    soak (seed 1, schedule 406)."""
    from kafka_rebalance.sim.schedules import random_schedule, schedule_seed

    with wall_clock_limit(20):
        assert check_schedule(random_schedule(schedule_seed(1, 406))) == []


def test_a_stall_ending_during_a_pause_restarts_the_poll_loop_when_the_pause_ends():
    """A slow consumer's stall ended while a GC pause froze the process; the loop could not poll
    then, and the end of the pause did not restart it: the consumer never polled again and the
    group ended Empty with it running. Found by the soak (seed 1, schedule 497)."""
    from kafka_rebalance.sim.schedules import random_schedule, schedule_seed

    with wall_clock_limit(20):
        assert check_schedule(random_schedule(schedule_seed(1, 497))) == []


def test_the_leader_assigns_a_pattern_topic_its_metadata_learns_of_later():
    """A pattern subscriber saw a new topic and rejoined; the leader (subscribed by list) assigned
    from metadata that did not have the topic yet, and never noticed it appear, so it stayed
    unowned. Java's leader fetches metadata for every group topic before assigning
    (ConsumerCoordinator.performAssignment, ensureFreshMetadata). Found by the soak (seed 0,
    schedule 6257), shrunk."""
    schedule = {
        "name": "pattern-topic-unknown-to-the-leader",
        "config": {"session_timeout_ms": 15000, "heartbeat_interval_ms": 5000, "max_poll_interval_ms": 15000,
                   "metadata_max_age_ms": 30000, "network_latency_ms": 20},
        "topics": {"t0": 5, "p-0": 2},
        "consumers": [{"id": "c1", "strategies": ["range", "cooperative-sticky"], "pattern": "p-.*"},
                      {"id": "c2", "strategies": ["range", "cooperative-sticky"], "subscribe": ["t0"],
                       "group_instance_id": "static-2"}],
        "events": [{"at_ms": 494, "join": "c2"}, {"at_ms": 11557, "restart": "c1", "after_ms": 31},
                   {"at_ms": 41193, "create_topic": {"name": "p-2", "partitions": 2}}],
        "end_ms": 150193,
    }
    with wall_clock_limit(20):
        assert check_schedule(schedule) == []


STALE_LOAD = sorted((Path(__file__).parent / "soak_stale_load").glob("*.yaml"))


@pytest.mark.parametrize("path", STALE_LOAD, ids=[p.stem for p in STALE_LOAD])
def test_a_stale_coordinator_load_does_not_rebuild_the_live_group(path):
    """Failovers in quick succession (A -> B -> C -> A within ``coordinator_load_ms``): the load
    A began for its first leadership finished during its second one, ending that load early,
    and the second load's completion then rebuilt the group from the log over the live group,
    dropping the JoinGroup requests waiting in it: those members waited forever (a group stuck in
    PreparingRebalance, or Stable/Empty with consumers running and partitions owned by nobody).
    Kafka loads a partition only for the current coordinator epoch
    (GroupMetadataManager.loadGroupsAndOffsets: "Not loading ... since current epoch is ...",
    maybeUpdateCoordinatorEpoch). Found by the soak (seed 0), shrunk."""
    with wall_clock_limit(20):
        assert check_schedule(yaml.safe_load(path.read_text())) == []


def test_a_static_member_fenced_after_a_failover_is_no_longer_running():
    """Kafka's behaviour, not ours: c2 (static-2) restarted past its session; its old member id
    expired and c2 joined again as a new member id for the instance during the rebalance. Such a
    join is stored only with the leader's SyncGroup, and a coordinator failover came first, so
    the new coordinator loaded the old member id for static-2 and answered c2's next request
    FENCED_INSTANCE_ID (GroupCoordinator.validateCurrentMember), fatal for a Java consumer
    (AbstractCoordinator.JoinGroupResponseHandler/SyncGroupResponseHandler). Its partitions then
    stay unowned: the converges invariant counts c2 as stopped, not as a running consumer. Soak
    seed 0, schedule 15474, shrunk."""
    schedule = yaml.safe_load((Path(__file__).parent / "soak_fenced" / "seed0-schedule15474.yaml").read_text())
    with wall_clock_limit(20):
        assert check_schedule(schedule) == []
        assert run_simulation(load_scenario(schedule)).fenced == ("c2",)


def test_a_static_revoker_bounced_before_its_follow_up_leaves_the_revoked_partitions_unowned():
    """Kafka's behaviour, not ours. Cooperative c2 (static-2) leads generation 2 and gives itself
    t0-0..2, revoking t0-3, t0-4 for the newcomer c1 in the follow-up rebalance. Only the member
    that revoked asks for that rebalance (ConsumerCoordinator.onJoinComplete: requestRejoin after
    invokePartitionsRevoked), after its pre-join commit is answered (onJoinPrepare). c2 is
    bounced 14 ms after its SyncGroup answer, before that JoinGroup: a static member sends no
    LeaveGroup on close (AbstractCoordinator.maybeLeaveGroup), and back within its session it is
    replaced in place in the Stable group, no rebalance, since the selected protocol does not
    change (GroupCoordinator.updateStaticMemberAndRebalance), the returning leader skipping the
    assignor (KIP-814 skip_assignment) and getting generation 2's stored assignment. So t0-3 and
    t0-4 stay owned by nobody until the next rebalance of any cause; the converges invariant
    allows exactly that (observation.unfinished_follow_up). Soak seed 0, schedule 22436."""
    from kafka_rebalance.sim.observation import observation_of

    schedule = yaml.safe_load((Path(__file__).parent / "soak_follow_up" / "seed0-schedule22436.yaml").read_text())
    with wall_clock_limit(20):
        assert check_schedule(schedule) == []
        run = run_simulation(load_scenario(schedule))
    assert [r.generation for r in run.rebalances] == [1, 2]
    assert {m.member: m.partitions for m in run.rebalances[-1].revoked}["c2"] == ("t0-3", "t0-4")
    assert {m.member: m.partitions for m in run.final_assignment} == {"c1": (), "c2": ("t0-0", "t0-1", "t0-2")}
    assert run.final_group_state == "Stable"
    assert observation_of(run).awaiting_follow_up == ("t0-3", "t0-4")
    # Bounced after its follow-up JoinGroup went out (or not bounced), it hands them on.
    later = {**schedule, "events": [*schedule["events"][:2], {"at_ms": 7800, "restart": "c2", "after_ms": 234}]}
    assert check_schedule(later) == []
    assert observation_of(run_simulation(load_scenario(later))).awaiting_follow_up == ()


MIGRATION = Path(__file__).parent / "soak_migration"


@pytest.mark.parametrize("schedule_index", [895, 2399])
def test_a_classic_member_rejoining_from_poll_finishes_its_revocation_first(schedule_index):
    """Soak seed 0, --migrate consumer schedules 895 and 2399 (shrunk): a downgraded (classic)
    member whose loop was stuck came back to poll() with a rebalance pending; the poll ran
    onPartitionsRevoked (Kafka's ConsumerCoordinator.onJoinPrepare, eager protocol) and held the
    JoinGroup until it returned, but the simulator's loop then took the next batch as if the
    listener had returned, and the wake-up that ends the callback was dropped. The JoinGroup was
    never sent: the member sat out of the group for good (895: its partitions owned by nobody;
    2399: the group Empty with the consumer running). poll() returns no records while its own
    listener callbacks run."""
    path = next(MIGRATION.glob(f"seed0-schedule{schedule_index}-migrating-consumer-shrunk.yaml"))
    with wall_clock_limit(30):
        assert check_schedule(yaml.safe_load(path.read_text())) == []


def _records_after(result, record_type, since_ms):
    return [logged.record for logged in result.log_records
            if type(logged.record).__name__ == record_type and logged.record.time_ms >= since_ms]


LOST_DOWNGRADE = sorted(MIGRATION.glob("*-kafka-lost-downgrade.yaml"))


@pytest.mark.parametrize("path", LOST_DOWNGRADE, ids=[p.stem for p in LOST_DOWNGRADE])
def test_a_coordinator_failover_loses_the_rebalance_a_downgrade_prepared(path):
    """Kafka's own behaviour, found by the soak (seed 0, --migrate consumer; 1151, 1990, 2125,
    2414, shrunk): the last consumer-protocol member left (or was fenced), so Kafka 4.1's
    convertToClassicGroup wrote a classic group in which each remaining member holds its
    *target* assignment of the consumer group's last epoch (ClassicGroup.fromConsumerGroup), a
    target still computed with the leaving member, and prepared a rebalance to hand out what it
    held. That rebalance lives only in memory: the coordinator moved before it completed, and
    the new one loaded the group Stable (GroupMetadataManager.onLoaded prepares a rebalance only
    for a group over its maximum size). The classic members heartbeat at the loaded generation
    without error, so nothing asks them to rejoin, and the leaving member's partitions stay with
    nobody until some member joins, leaves or changes its subscription."""
    schedule = yaml.safe_load(path.read_text())
    with wall_clock_limit(30):
        assert [v.invariant for v in check_schedule(schedule)] == ["converges"]
        result = run_simulation(load_scenario(schedule))
    (downgrade,) = [r for r in _records_after(result, "PreparingRebalance", 0) if "Downgrade group" in r.reason]
    failovers = [e["at_ms"] for e in schedule["events"] if "coordinator_failover" in e]
    assert any(at > downgrade.time_ms for at in failovers)  # the coordinator moved after the downgrade
    assert _records_after(result, "Stabilized", downgrade.time_ms) == []  # and its rebalance never completed


STATIC_UPGRADE = sorted(MIGRATION.glob("*-kafka-static-upgrade.yaml"))


@pytest.mark.parametrize("path", STATIC_UPGRADE, ids=[p.stem for p in STATIC_UPGRADE])
def test_a_static_member_upgrading_alone_keeps_the_downgrade_assignment(path):
    """Kafka's own behaviour, found by the soak (seed 0, --migrate consumer; 1528, 1820, shrunk):
    a crashed consumer-protocol member was fenced, which converted the group to a classic group
    whose only member, a static one, held its target of the last epoch (ClassicGroup
    .fromConsumerGroup; the crashed member's share in nobody's). Before that rebalance ran, the
    static member was upgraded: Kafka 4.1's ConsumerGroup.fromClassicGroup converts the group
    back with the group epoch and the target epoch both at the classic generation, every member's
    last assignment as its target, and the subscription's metadata hash, and the static member
    replaces itself with a copy of its own subscription (getOrMaybeSubscribeStaticConsumerGroupMember).
    Nothing changed, so nothing bumps the group epoch (convertToConsumerGroup assumes that an
    upgrade always brings a new subscription) and no target is ever computed again: the crashed
    member's partitions stay with nobody until the group changes."""
    schedule = yaml.safe_load(path.read_text())
    with wall_clock_limit(30):
        assert [v.invariant for v in check_schedule(schedule)] == ["converges"]
        result = run_simulation(load_scenario(schedule))
    (upgrade,) = [r for r in _records_after(result, "ConsumerGroupConverted", 0) if r.direction == "upgrade"]
    assert _records_after(result, "ConsumerGroupEpochBumped", upgrade.time_ms) == []


def test_a_member_with_two_joins_in_flight_is_one_member():
    """Soak seed 0, consumer schedule 8563 (shrunk): c1's first heartbeats met a loading
    coordinator and a GC pause; back from it, its join heartbeat and the leave of its expired
    poll timer were in flight together, and its next join too. The member used to send an empty
    member id and take the coordinator's (protocol v0, Kafka 3.7-3.9), so each join became a new
    member and c1 took in two ids in turn: its hold was fenced under the phantom one while it
    committed as the other. A Kafka 4.x consumer names itself once (AbstractMembershipManager
    .memberId = Uuid.randomUuid(), KIP-1082) and the coordinator refuses an empty id from
    version 1 (GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid): both
    joins are one member and the leave removes it."""
    path = Path(__file__).parent / "soak_consumer" / "seed0-schedule8563-consumer-shrunk.yaml"
    with wall_clock_limit(20):
        assert check_schedule(yaml.safe_load(path.read_text())) == []


def test_a_pause_shorter_than_the_poll_interval_keeps_the_member_in_the_group():
    """Soak seed 0, consumer schedule 73715 (shrunk): c3, consuming continuously, was paused for
    7,500 ms with max.poll.interval.ms at 8,000. The simulator renewed such a member's poll
    timer only when it fired, so its deadline (8,040 ms) fell inside the pause: back from it, c3
    sent its overdue heartbeat, a poll-timeout leave and a join, and the first one's answer
    (epoch 5, p-0-2) arrived after the rejoin. Kafka resets the timer on every poll()
    (AsyncKafkaConsumer.poll -> PollEvent -> AbstractHeartbeatRequestManager.resetPollTimer): the
    interval starts with the pause and no leave is sent. Back from a longer pause, the poll
    timer is checked before any answer that came meanwhile (AbstractHeartbeatRequestManager.poll
    runs before ConsumerNetworkThread reads responses)."""
    path = Path(__file__).parent / "soak_consumer" / "seed0-schedule73715-consumer-shrunk.yaml"
    with wall_clock_limit(20):
        assert check_schedule(yaml.safe_load(path.read_text())) == []
    schedule = yaml.safe_load(path.read_text())
    result = run_simulation(load_scenario(schedule))
    left = [logged.record for logged in result.log_records if type(logged.record).__name__ == "ConsumerMemberLeft"]
    assert left == []


KAFKA_BEHAVIOUR = sorted((Path(__file__).parent / "soak_kafka_behaviour").glob("*.yaml"))


@pytest.mark.parametrize("path", KAFKA_BEHAVIOUR, ids=[p.stem for p in KAFKA_BEHAVIOUR])
def test_a_cooperative_member_consumes_what_it_last_learnt_until_its_next_sync(path):
    """Shrunk soak schedules (seed 0) once flagged owner-consumes: a cooperative member consumed,
    under generation g, a partition g's assignment gave to nobody (or to another member). Each is
    Kafka's own behaviour: the member never learnt g-1's assignment (its SyncGroup arrived after
    the group had moved to PreparingRebalance, REBALANCE_IN_PROGRESS in 3.9's
    GroupCoordinator.doSyncGroup; or it was paused past the rebalance while static, kept by
    GroupCoordinator.onCompleteJoin), so it rejoined still holding the partitions of the last
    generation it did learn (ConsumerCoordinator.onJoinPrepare revokes nothing for COOPERATIVE
    while the subscription covers them) and consumed them until SyncGroup of g said to revoke."""
    with wall_clock_limit(20):
        assert check_schedule(yaml.safe_load(path.read_text())) == []


def test_a_member_fenced_at_epoch_zero_retries_once_per_round_trip_until_its_session_expires():
    """Zero latency, KIP-848: c4's poll timer expired (stalled at 12,000 ms, 15 s interval) while
    the new coordinator loaded the group (24,976-27,976 ms), so its leave heartbeat was answered COORDINATOR_LOAD_IN_PROGRESS and ignored (Kafka's
    AbstractHeartbeatRequestManager.poll: "We can ignore the leave response"); the loaded group
    still held c4 at epoch 6. Back from its stall, c4 rejoined with epoch 0 and the same member
    id, was answered FENCED_MEMBER_EPOCH (GroupMetadataManager.throwIfConsumerGroupMemberEpochIsInvalid
    checks epoch 0 against the member's epoch too) and rejoined at once (no backoff after a
    fencing): the simulator repeated that exchange at one virtual instant forever. In Kafka the
    retries come once per round trip and the session timeout armed at the load (27,976 ms +
    15 s) removes the member, after which the same member id joins anew. Soak seed 0, schedule
    165, consumer protocol, with c4's stall moved from 13,653 ms (for 18 s) to 12,000 ms (for
    20 s): the soak found it while the poll timer still expired at its lazily armed 15,000 ms;
    timed from the stall, as in Kafka, it would expire after the load."""
    schedule = yaml.safe_load((Path(__file__).parent / "soak_fenced_rejoin" / "seed0-schedule165-consumer.yaml")
                              .read_text())
    with wall_clock_limit(30):
        assert check_schedule(schedule) == []
        records = [logged.record for logged in run_simulation(load_scenario(schedule)).log_records]
    fenced = [r for r in records if type(r).__name__ == "ConsumerMemberFenced"]
    assert [(r.time_ms, r.reason) for r in fenced] == [(42976, "the member session expired.")]
    rejoined = [r for r in records if type(r).__name__ == "ConsumerMemberJoined" and r.member_id == fenced[0].member_id]
    assert [r.time_ms for r in rejoined] == [0, 42976]


def _held(result, partition):
    h = result.held
    return [row for row in zip(h.partition.tolist(), h.member.tolist(), h.incarnation.tolist(), h.generation.tolist(),
                               h.start_ms.tolist(), h.end_ms.tolist(), h.fenced_ms.tolist(), strict=True)
            if row[0] == partition]


def test_a_static_member_replaced_while_its_old_process_is_paused_is_fenced():
    """A rolling upgrade (soak schedule 14 of seed 0 with each consumer upgraded in turn): c2
    (static-2) is upgraded during a GC pause, so its old process is still closing when the new
    one joins as static-2 and replaces the old member (ConsumerStaticMemberReplaced at 26,243 ms;
    Kafka's replaceStaticMember: the old member id is out of the group and its next heartbeat is
    fenced). The old process's hold is fenced from then, and each process of a consumer is its
    own incarnation (before, both were c2#1 and the old hold was never fenced)."""
    schedule = yaml.safe_load((Path(__file__).parent / "soak_migration" / "seed0-schedule14-rolling-upgrade.yaml")
                              .read_text())
    with wall_clock_limit(30):
        assert check_schedule(schedule) == []
        held = _held(run_simulation(load_scenario(schedule)), "t0-0")
    assert [(member, incarnation, fenced) for _, member, incarnation, _, _, end, fenced in held if end == 28444] == [
        ("c2", 1, 26243)]
    assert {incarnation for _, member, incarnation, *_ in held if member == "c2"} == {1, 2}


def test_a_stalled_classic_member_of_a_migrating_group_waits_for_its_loop_to_rejoin():
    """Soak schedule 18 of seed 0 as a rolling upgrade: classic c5 is stuck in its poll loop
    (18,072 ms, for 33 s) when c3's rejoin starts a rebalance. A Java consumer rejoins from
    poll() only (AbstractCoordinator.ensureActiveGroup; its heartbeat thread just asks for the
    rejoin), so stuck c5 stays in its generation, heartbeating, until its upgrade closes it at
    24,046 ms: it revokes t0-2 and leaves then, and its new process holds t0-2 from 26,103 ms.
    (The simulator used to rejoin a stuck classic member at once and stop its heartbeats while
    the JoinGroup waited for the loop: its session expired and the old process held t0-2 until
    the stall ended; the soak found a stale commit from that state, --migrate schedule 140.)
    KIP-394 ids outlive a join phase they missed (Kafka's completeClassicGroupJoin keeps
    pendingJoinMembers): c5 first holds t0-2 from 286 ms and its new process from 26,103 ms;
    when the coordinator dropped them, a JoinGroup with such an id was answered
    UNKNOWN_MEMBER_ID and those times were 1,792 and 26,143 ms."""
    schedule = yaml.safe_load((Path(__file__).parent / "soak_migration" / "seed0-schedule18-rolling-upgrade.yaml")
                              .read_text())
    with wall_clock_limit(30):
        assert check_schedule(schedule) == []
        held = _held(run_simulation(load_scenario(schedule)), "t0-2")
    assert [(member, incarnation, start, end, fenced) for _, member, incarnation, _, start, end, fenced in held
            if member == "c5"] == [("c5", 1, 286, 24046, -1), ("c5", 2, 26103, 162375, -1)]


def test_a_classic_member_of_a_migrating_group_learns_of_new_partitions_from_its_metadata():
    """Soak schedule 5 of seed 0 as a rolling upgrade: t2 grows to 2 partitions at 35,872 ms
    while the group is classic. Classic consumers learn of it at their next metadata refresh and
    the leader rejoins (ConsumerCoordinator.rejoinNeededOrPending: the assigned metadata
    changed), so t2-1 is assigned before the upgrade. On the consumer-group side the classic
    members never refreshed their metadata: nobody owned t2-1 to the end of the run."""
    schedule = yaml.safe_load((Path(__file__).parent / "soak_migration" / "seed0-schedule5-rolling-upgrade.yaml")
                              .read_text())
    with wall_clock_limit(30):
        assert check_schedule(schedule) == []
        result = run_simulation(load_scenario(schedule))
    grown = [r for r in result.rebalances if r.start_ms >= 35872 and r.group_protocol.value == "classic"]
    assert grown and any("t2-1" in m.partitions for m in grown[0].assignment)


LOADING = [Path(__file__).parent / "soak_fenced_rejoin" / f"seed0-schedule{i}-consumer.yaml" for i in (465, 685)]


@pytest.mark.parametrize("path", LOADING, ids=[p.stem for p in LOADING])
def test_a_joining_member_retries_a_loading_coordinator_once_per_round_trip(path):
    """Zero latency, KIP-848, a coordinator failover: a joining member answered
    COORDINATOR_NOT_AVAILABLE heartbeated again at once (a joining member does not wait for the
    backoff: AbstractHeartbeatRequestManager.poll, shouldHeartbeatNow; in Kafka it first finds
    the coordinator again), answered at once, ... forever at one virtual instant (the soak's
    Spark task never ended). A round trip takes time: the retry leaves on the next ms, until the
    new coordinator has loaded. Soak seed 0, schedules 465 and 685, consumer protocol."""
    with wall_clock_limit(30):
        assert check_schedule(yaml.safe_load(path.read_text())) == []


def test_a_static_member_that_leaves_temporarily_holds_its_partitions_outside_the_group():
    """KIP-848, soak seed 0 schedule 3008 (shrunk): static c1, stalled, was revoking t0-2 when
    its poll timer expired; it left with epoch -2 (temporarily). Kafka keeps its assignment for
    its return but clears what it was revoking (consumerGroupStaticMemberGroupLeave), so t0-2
    went to c2 at once (92,161 ms) while the stalled application, which runs onPartitionsLost
    only when it polls again (92,415 ms), still believed it owned it. Out of the group, its hold
    is fenced from the leave, as a session expiry's is."""
    schedule = yaml.safe_load((Path(__file__).parent / "soak_fenced_rejoin" / "seed0-schedule3008-consumer-shrunk.yaml")
                              .read_text())
    with wall_clock_limit(30):
        assert check_schedule(schedule) == []


def test_an_answer_to_a_heartbeat_sent_before_a_poll_timeout_leave_is_still_handled():
    """KIP-848, soak seed 0 schedule 5334 (shrunk): c1's pause ended with a heartbeat at its old
    epoch, the poll-timer leave (ignoreResponse) and a rejoin all on the wire. The old heartbeat's
    UNKNOWN_MEMBER_ID fenced the rejoining member, which joined again, so two joins and an
    acknowledgement were out at once; the acknowledgement's answer carried t1-0 and t2-0, just
    released by c2. The membership manager handled only the first answer after each send and
    dropped that one, so c1 ended owning nothing while the coordinator said Stable. Kafka
    completes every request with its own handler."""
    schedule = yaml.safe_load((Path(__file__).parent / "soak_fenced_rejoin" / "seed0-schedule5334-consumer-shrunk.yaml")
                              .read_text())
    with wall_clock_limit(30):
        assert check_schedule(schedule) == []


def test_a_regex_member_retrying_a_timed_out_heartbeat_learns_its_new_partition():
    """KIP-848 on a lossy network, soak seed 0 schedule 1367 (shrunk): pattern topic p-1 appeared,
    the answer giving c1 p-1-0 was lost, and c1's retried full heartbeat (names or regex, owned
    partitions, rebalance timeout) was not taken as full because it carried a regex, not names:
    no assignment in the answer, and p-1-0 stayed with nobody. Kafka 4.1 counts a regex too."""
    schedule = yaml.safe_load((Path(__file__).parent / "soak_lossy" / "seed0-schedule1367-consumer-shrunk.yaml")
                              .read_text())
    with wall_clock_limit(30):
        assert check_schedule(schedule) == []


def test_a_downgrade_and_an_upgrade_at_once_free_what_a_classic_member_was_revoking():
    """Soak seed 0 schedule 108 (--migrate, classic, shrunk): eager classic c3 held p-0-0; c2's
    upgrade converted the group and the target gave p-0-0 to c2, so c3 was revoking it. c2's
    restart then left the group with classic members only: converted back to classic, each
    member given its target assignment (Kafka 4.1 ClassicGroup.fromConsumerGroup), p-0-0 in
    nobody's; c2's new process converted it again at the same instant (ConsumerGroup.
    fromClassicGroup) and got p-0-0 at once, while c3, not yet rejoined, still held it. Kafka's
    own window: from that upgrade, the group no longer counts c3 as p-0-0's owner (its hold is
    fenced there), and what c3 commits for it from then is checked as a fenced hold's."""
    path = Path(__file__).parent / "soak_migration" / "seed0-schedule108-migrating-shrunk.yaml"
    schedule = yaml.safe_load(path.read_text())
    result = run_simulation(schedule)
    c3 = [(h, f) for p, m, h, f in zip(result.held.partition.tolist(), result.held.member.tolist(),
                                        result.held.end_ms.tolist(), result.held.fenced_ms.tolist(), strict=True)
          if p == "p-0-0" and m == "c3"]
    assert c3 and c3[0][1] == 17617 < c3[0][0]
    with wall_clock_limit(30):
        assert check_schedule(schedule) == []


def test_a_classic_member_stuck_past_its_poll_interval_leaves_and_commits_nothing_stale():
    """Soak seed 0 schedule 140 (--migrate, classic, shrunk): classic c3 is stuck in its loop
    (62,907 ms, 18 s, past its 15 s max.poll.interval.ms) when c2's upgrade converts the group
    and the target moves t1-0 to c2. Stuck, c3 cannot rejoin (a Java consumer rejoins from
    poll() only); its heartbeat thread keeps the session and sends LeaveGroup when the poll
    interval runs out (77,907 ms), and c2 takes t1-0. c3 holds t1-0 until its loop polls again
    (80,907 ms) and runs onPartitionsLost, fenced from its leave. The simulator used to rejoin
    stuck c3 at once and hold its next JoinGroup for the loop with no heartbeats, so c3 came
    back after the stall still believing it owned t1-0 and committed its stale position there
    (commits-forward)."""
    schedule = yaml.safe_load((Path(__file__).parent / "soak_migration" / "seed0-schedule140-migrating-shrunk.yaml")
                              .read_text())
    with wall_clock_limit(30):
        assert check_schedule(schedule) == []
        held = _held(run_simulation(load_scenario(schedule)), "t1-0")
    assert [(member, start, end, fenced) for _, member, _, _, start, end, fenced in held][:2] == [
        ("c3", 0, 80907, 77907), ("c2", 78768, 135907, -1)]


def test_a_member_fenced_while_taking_an_assignment_in_loses_it():
    """Soak seed 0 schedule 353 (--migrate, shrunk): c1's first answer (t0-0 at epoch 1) waited
    out a 17 s GC pause in which its session expired and c2 joined. After the pause c1 ran
    onPartitionsAssigned(t0-0), then heard it was fenced: Kafka's onPartitionsLost gets what
    SubscriptionState holds, t0-0 included, while the member forgot only its acknowledged
    assignment (empty), so c1 held t0-0 to the end beside c2."""
    schedule = yaml.safe_load((Path(__file__).parent / "soak_migration" / "seed0-schedule353-migrating-shrunk.yaml")
                              .read_text())
    with wall_clock_limit(30):
        assert check_schedule(schedule) == []


LOCAL_EPOCH = [Path(__file__).parent / "soak_migration" / "seed0-schedule549-migrating-shrunk.yaml",
               Path(__file__).parent / "soak_migration" / "seed0-schedule257-migrating-consumer-shrunk.yaml",
               Path(__file__).parent / "soak_consumer" / "seed0-schedule15367-consumer-shrunk.yaml",
               Path(__file__).parent / "soak_consumer" / "seed0-schedule26553-consumer-shrunk.yaml"]


@pytest.mark.parametrize("path", LOCAL_EPOCH, ids=[p.stem for p in LOCAL_EPOCH])
def test_a_target_taken_back_while_its_callback_waits_is_revoked_after_it(path):
    """Soak seed 0: --migrate 549 and 257, consumer 15367 and 26553 (shrunk). A member whose loop
    was stuck was given partitions (onPartitionsAssigned waiting for the loop), then, within
    the epoch or the next, was sent back the assignment it had before. Our member compared the
    new target with its current assignment by partitions alone, found them equal, went back to
    STABLE, and the waiting callback, once run, was taken as aborted: the listener kept the
    partitions for good while the coordinator, told the member did not own them, gave them to
    another. Kafka 4.1 compares local epochs too (AbstractMembershipManager
    .targetAssignmentReconciled -> LocalAssignment.equals; updateWith bumps the target's epoch on
    every change), so the member stays RECONCILING, acknowledges what the callback gave it and
    revokes the difference at once (maybeReconcile computes revoked from SubscriptionState).
    These schedules were once kept as Kafka's own behaviour on a reading without local epochs."""
    with wall_clock_limit(30):
        assert check_schedule(yaml.safe_load(path.read_text())) == []


def test_a_failover_frees_a_partition_whose_assignment_callback_is_still_pending():
    """Kafka's own behaviour, found by the soak (seed 0, consumer schedule 19082, shrunk): c2,
    its loop stuck, was given t0-4 (onPartitionsAssigned waiting). Epoch 6 moved t0-4 away; a
    coordinator failover made c2's next heartbeat a full one, which reports currentAssignment
    (ConsumerHeartbeatRequestManager.HeartbeatState.buildRequestData), still without t0-4, so
    the coordinator took it as revoked (CurrentAssignmentBuilder, UNREVOKED_PARTITIONS) and gave
    it to c5. When c2's loop ran, its callback completed (maybeAbortReconciliation only looks at
    the state and a rejoin), it read t0-4 from the committed 488 to the log end, and the commit
    before its revocation stored 568; c5 then committed its own position, 559. Kafka's
    ConsumerGroup.validateOffsetCommit checks the member epoch only, never who owns the
    partition, and OffsetMetadataManager stores any offset: the committed offset goes back.
    (The schedule's seed is 6 above the soak's: the same story with the member ids drawn since
    consumers name themselves, KIP-1082.)"""
    path = Path(__file__).parent / "soak_consumer" / "seed0-schedule19082-consumer-kafka-pending-callback.yaml"
    with wall_clock_limit(30):
        violations = check_schedule(yaml.safe_load(path.read_text()))
    assert [v.invariant for v in violations] == ["commits-forward"]
    assert "c5 committed 559" in violations[0].detail and "c2 committed 568" in violations[0].detail


def test_a_classic_member_that_dropped_its_member_id_is_still_fenced_when_left_out():
    """Soak seed 0 schedule 1594 (--migrate, lossy, shrunk): c1, downgraded and then stuck in its
    loop, got ILLEGAL_GENERATION on a heartbeat (the group had converted back to classic at a
    newer generation) and, as Kafka's consumer does, dropped its member id; the next generation
    formed without it and gave t0-0 to c2 while stuck c1 still held it. A process is judged by
    the member id it had until its machine dropped it, so that generation fences its hold."""
    schedule = yaml.safe_load((Path(__file__).parent / "soak_migration" / "seed0-schedule1594-migrating-shrunk.yaml")
                              .read_text())
    with wall_clock_limit(30):
        assert check_schedule(schedule) == []


def test_a_classic_join_to_an_empty_consumer_group_makes_it_a_classic_group():
    """Soak seed 0 schedule 935 (--migrate, consumer, shrunk): the first consumer to start was
    downgraded, so a classic JoinGroup reached a consumer group with no members. Kafka 4.1's
    classicGroupJoin sends it to classicGroupJoinToClassicGroup ("Converted the empty consumer
    group to a classic group"): only a non-empty consumer group takes classic members. Taken in
    as a classic member of a consumer group, the lone member never learnt of t0's new partition
    (classic heartbeats do not refresh a consumer group's metadata, and it is not the leader)."""
    schedule = yaml.safe_load((Path(__file__).parent / "soak_migration" / "seed0-schedule935-migrating-consumer-shrunk.yaml")
                              .read_text())
    with wall_clock_limit(30):
        assert check_schedule(schedule) == []


def test_a_group_replaced_when_empty_starts_a_new_life_whatever_its_numbers():
    """Soak seed 0 schedule 457 (--migrate, consumer, shrunk): every consumer was downgraded, the
    consumer group emptied (epoch 4), a classic JoinGroup replaced it by a classic group, and the
    upgrades converted that back at its generation: epochs 2 and 3 again, in a new life. The
    checker used to infer lives from generations going down, which these did not, and judged the
    new epoch 2 by the old one's assignment; the simulator now says when each life began."""
    schedule = yaml.safe_load((Path(__file__).parent / "soak_migration" / "seed0-schedule457-migrating-consumer-shrunk.yaml")
                              .read_text())
    with wall_clock_limit(30):
        assert check_schedule(schedule) == []
        assert len(run_simulation(load_scenario(schedule)).life_starts_ms) == 2
