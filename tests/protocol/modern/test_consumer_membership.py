"""The new consumer's membership manager, each test a fact from Kafka's client tests
(clients/src/test/java/org/apache/kafka/clients/consumer/internals/ConsumerMembershipManagerTest.java,
ConsumerHeartbeatRequestManagerTest.java) or the ConsumerMemberState table (ConsumerMemberState.java)."""

from __future__ import annotations

import pytest

from kafka_rebalance.protocol.effects import ArmTimer
from kafka_rebalance.protocol.errors import ErrorCode, IllegalStateTransition
from kafka_rebalance.protocol.modern.consumer.coordinator_events import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from kafka_rebalance.protocol.modern.consumer.member import (
    VALID_PREVIOUS_STATES,
    ConsumerMembershipManager,
    ConsumerMemberState,
    MemberConfig,
)
from kafka_rebalance.protocol.modern.consumer.member_events import (
    CallbacksCompleted,
    CommitOffsets,
    Fatal,
    HeartbeatDue,
    Output,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Poll,
    PollTimerExpired,
    ResponseReceived,
    Send,
    Subscribe,
    Unsubscribe,
)

S = ConsumerMemberState


def sent(out: list[Output]) -> list[ConsumerGroupHeartbeatRequest]:
    return [o.request for o in out if isinstance(o, Send)]


def callbacks(out: list[Output]) -> list[Output]:
    return [o for o in out if isinstance(o, CommitOffsets | PartitionsRevoked | PartitionsAssigned | PartitionsLost)]


def through_reconciliation(m: ConsumerMembershipManager, out: list[Output], now: int) -> tuple[list[Output], list[Output]]:
    """Completes a reconciliation's steps (commit, onPartitionsRevoked, onPartitionsAssigned) one
    by one: every callback asked, and the outputs of the last completion."""
    seen = batch = callbacks(out)
    while True:
        done = m.handle(CallbacksCompleted(), now)
        if any(isinstance(c, PartitionsAssigned) for c in batch):
            return seen, done
        batch = callbacks(done)
        seen = seen + batch
        if not batch:
            return seen, done


def ok(epoch: int, assignment: dict[str, list[int]] | None = None, member_id: str = "m1") -> ResponseReceived:
    tps = None if assignment is None else tuple(TopicPartitions(t, tuple(ps)) for t, ps in sorted(assignment.items()))
    return ResponseReceived(ConsumerGroupHeartbeatResponse(ErrorCode.NONE, member_id=member_id, member_epoch=epoch,
                                                   heartbeat_interval_ms=5000, assignment=tps))


def error(code: ErrorCode) -> ResponseReceived:
    return ResponseReceived(ConsumerGroupHeartbeatResponse(code))


def joined(instance_id: str | None = None, auto_commit: bool = True) -> ConsumerMembershipManager:
    m = ConsumerMembershipManager(MemberConfig("g", group_instance_id=instance_id, enable_auto_commit=auto_commit,
                                               max_poll_interval_ms=300000), "m1")
    m.handle(Subscribe(("foo",)), 0)
    out = m.handle(Poll(), 0)
    assert m.state is S.JOINING and len(sent(out)) == 1
    return m


def stable(assignment: dict[str, list[int]], **kwargs: object) -> ConsumerMembershipManager:
    m = joined(**kwargs)  # type: ignore[arg-type]
    m.handle(ok(1, assignment), 10)
    m.handle(CallbacksCompleted(), 10)
    m.handle(ok(1), 12)
    assert m.state is S.STABLE
    return m


def test_state_table_is_kafkas() -> None:
    """ConsumerMemberState's static block: the valid previous states of each state; anything else raises."""
    assert VALID_PREVIOUS_STATES[S.JOINING] == {S.FENCED, S.UNSUBSCRIBED, S.STALE}
    assert VALID_PREVIOUS_STATES[S.ACKNOWLEDGING] == {S.RECONCILING}
    assert VALID_PREVIOUS_STATES[S.LEAVING] == {S.PREPARE_LEAVING}
    assert VALID_PREVIOUS_STATES[S.STALE] == {S.LEAVING}
    assert VALID_PREVIOUS_STATES[S.UNSUBSCRIBED] == {S.PREPARE_LEAVING, S.LEAVING, S.FENCED}
    assert set(VALID_PREVIOUS_STATES) == set(ConsumerMemberState)
    m = ConsumerMembershipManager(MemberConfig("g"), "m1")
    with pytest.raises(IllegalStateTransition):
        m._transition(S.STABLE)  # noqa: SLF001 - the table itself is under test


def test_member_id_is_the_consumers_own() -> None:
    """KIP-1082 (AbstractMembershipManager.memberId = Uuid.randomUuid(), final): every heartbeat
    carries the id the consumer was made with, and a response naming another id changes nothing."""
    m = joined()
    m.handle(ok(1, {"foo": [0]}, member_id="the-coordinators"), 10)
    assert m.member_id == "m1"
    with pytest.raises(ValueError, match="member_id"):
        ConsumerMembershipManager(MemberConfig("g"), "")


def test_join_sends_full_heartbeat_then_only_changes() -> None:
    """ConsumerHeartbeatRequestManager.HeartbeatState.buildRequestData
    (ConsumerHeartbeatRequestManagerTest.testValidateConsumerGroupHeartbeatRequest...): joining
    sends epoch 0 with every field; later heartbeats send only what changed, and the owned
    partitions once after each reconciliation."""
    m = ConsumerMembershipManager(MemberConfig("g", max_poll_interval_ms=300000, server_assignor="uniform"), "m1")
    m.handle(Subscribe(("foo", "bar")), 0)
    first = sent(m.handle(Poll(), 0))[0]
    assert (first.member_epoch, first.member_id, first.rebalance_timeout_ms) == (0, "m1", 300000)
    assert first.subscribed_topic_names == ("bar", "foo") and first.topic_partitions == ()
    assert first.server_assignor == "uniform"
    m.handle(ok(1, {"foo": [0]}), 5)
    m.handle(CallbacksCompleted(), 6)  # acknowledges at once
    m.handle(ok(1), 8)
    out = m.handle(HeartbeatDue(), 5006)
    later = sent(out)[0]
    assert (later.member_id, later.member_epoch) == ("m1", 1)
    assert later.subscribed_topic_names is None and later.rebalance_timeout_ms == -1
    assert later.topic_partitions is None


def test_reconcile_new_partitions_assigned_and_revoked() -> None:
    """ConsumerMembershipManagerTest.testReconcileNewPartitionsAssignedAndRevoked and
    testReconcilePartitionsRevokedWithSuccessfulAutoCommitNoCallbacks: commit first, then
    onPartitionsRevoked, then onPartitionsAssigned; the member acknowledges with an immediate
    heartbeat carrying what it owns (ACKNOWLEDGING -> STABLE)."""
    m = stable({"foo": [0, 1, 2]})
    m.handle(HeartbeatDue(), 5012)
    out = m.handle(ok(2, {"foo": [1, 2, 3]}), 5014)
    assert m.state is S.RECONCILING
    assert m.owned == ("foo-0", "foo-1", "foo-2")  # nothing changes until the callbacks have run
    seen, out = through_reconciliation(m, out, 5100)
    assert seen == [CommitOffsets(("foo-0", "foo-1", "foo-2")), PartitionsRevoked(("foo-0",)),
                    PartitionsAssigned(("foo-3",))]
    ack = sent(out)
    assert len(ack) == 1 and ack[0].topic_partitions == (TopicPartitions("foo", (1, 2, 3)),)
    assert m.state is S.STABLE and m.owned == ("foo-1", "foo-2", "foo-3")


def test_revocation_without_auto_commit() -> None:
    """ConsumerMembershipManagerTest.testReconcilePartitionsRevokedNoAutoCommitNoCallbacks: no
    commit when enable.auto.commit is off."""
    m = stable({"foo": [0, 1]}, auto_commit=False)
    m.handle(HeartbeatDue(), 5012)
    out = m.handle(ok(2, {"foo": [1]}), 5014)
    assert through_reconciliation(m, out, 5014)[0] == [PartitionsRevoked(("foo-0",)), PartitionsAssigned(())]


def test_joining_member_receiving_empty_assignment_calls_listener() -> None:
    """ConsumerMembershipManagerTest.testMemberJoiningCallsRebalanceListenerWhenReceivingEmptyAssignment
    and testMemberJoiningTransitionsToStableWhenReceivingEmptyAssignment."""
    m = joined()
    out = m.handle(ok(1, {}), 5)
    assert m.state is S.RECONCILING and callbacks(out) == [PartitionsAssigned(())]
    m.handle(CallbacksCompleted(), 6)
    assert m.state is S.STABLE


def test_fencing_when_stable_rejoins_with_epoch_zero() -> None:
    """ConsumerMembershipManagerTest.testFencingWhenStateIsStable and
    testMemberIdAndEpochResetOnFencedMembers: FENCED_MEMBER_EPOCH (or UNKNOWN_MEMBER_ID) loses
    the partitions (onPartitionsLost, no commit) and, once the callback ran, rejoins with epoch 0
    and a full heartbeat."""
    for code in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
        m = stable({"foo": [0, 1]})
        m.handle(HeartbeatDue(), 5000)
        out = m.handle(error(code), 5002)
        assert m.state is S.FENCED and m.member_epoch == 0
        assert callbacks(out) == [PartitionsLost(("foo-0", "foo-1"))] and sent(out) == []
        out = m.handle(CallbacksCompleted(), 5003)
        assert m.state is S.JOINING and m.owned == ()
        rejoin = sent(out)[0]
        assert (rejoin.member_epoch, rejoin.member_id, rejoin.topic_partitions) == (0, "m1", ())


def test_delayed_reconciliation_discarded_when_fenced() -> None:
    """ConsumerMembershipManagerTest.testDelayedReconciliationResultDiscardedIfMemberNotInReconcilingStateAnymore."""
    m = stable({"foo": [0]})
    m.handle(HeartbeatDue(), 5012)
    m.handle(ok(2, {"foo": [0, 1]}), 5014)
    m.handle(HeartbeatDue(), 10014)
    m.handle(error(ErrorCode.FENCED_MEMBER_EPOCH), 10016)
    m.handle(CallbacksCompleted(), 102)  # the reconciliation's callbacks
    assert m.state is S.FENCED and m.owned == ("foo-0",)
    m.handle(CallbacksCompleted(), 103)  # onPartitionsLost
    assert m.state is S.JOINING and m.owned == ()


@pytest.mark.parametrize(("instance_id", "epoch"), [(None, -1), ("i1", -2)])
def test_leave_group_epoch(instance_id: str | None, epoch: int) -> None:
    """ConsumerMembershipManagerTest.testLeaveGroupEpoch and testLeaveGroupWhenStateIsStable:
    unsubscribe commits and revokes (PREPARE_LEAVING), then sends one heartbeat with epoch -1
    (-2 for a static member) and is UNSUBSCRIBED without waiting for the answer."""
    m = stable({"foo": [0]}, instance_id=instance_id)
    out = m.handle(Unsubscribe(), 100)
    assert m.state is S.PREPARE_LEAVING
    assert callbacks(out) == [CommitOffsets(("foo-0",)), PartitionsRevoked(("foo-0",))]
    out = m.handle(CallbacksCompleted(), 110)
    leave = sent(out)
    assert len(leave) == 1 and leave[0].member_epoch == epoch
    assert m.state is S.UNSUBSCRIBED


def test_new_assignment_ignored_when_preparing_to_leave() -> None:
    """ConsumerMembershipManagerTest.testNewAssignmentIgnoredWhenStateIsPrepareLeaving."""
    m = stable({"foo": [0]})
    m.handle(HeartbeatDue(), 5012)
    m.handle(Unsubscribe(), 5013)
    out = m.handle(ok(2, {"foo": [0, 1]}), 5014)
    assert callbacks(out) == [] and m.state is S.PREPARE_LEAVING


def test_poll_timer_expiry_leaves_and_rejoins_on_next_poll() -> None:
    """AbstractHeartbeatRequestManager.poll and ConsumerMembershipManagerTest
    .testTransitionToLeavingWhileStableDueToStaleMember / testStaleMemberWaitsForCallbackToRejoinWhenTimerReset:
    max.poll.interval.ms expires -> a leave heartbeat (epoch -1), STALE, onPartitionsLost; no
    heartbeats while stale; the next poll() rejoins with epoch 0."""
    m = stable({"foo": [0, 1]})
    out = m.handle(PollTimerExpired(), 300000)
    leave = [o for o in out if isinstance(o, Send)]
    assert len(leave) == 1 and leave[0].request.member_epoch == -1 and leave[0].ignore_response
    assert m.state is S.STALE and callbacks(out) == [PartitionsLost(("foo-0", "foo-1"))]
    assert sent(m.handle(HeartbeatDue(), 305000)) == []
    m.handle(CallbacksCompleted(), 300001)
    assert m.state is S.STALE  # waits for the application
    out = m.handle(Poll(), 400000)
    assert m.state is S.JOINING and sent(out)[0].member_epoch == 0
    assert ArmTimer(PollTimerExpired(), 700000) in out


@pytest.mark.parametrize("code", [ErrorCode.GROUP_MAX_SIZE_REACHED, ErrorCode.INVALID_REQUEST,
                                  ErrorCode.UNSUPPORTED_ASSIGNOR, ErrorCode.UNRELEASED_INSTANCE_ID])
def test_fatal_errors(code: ErrorCode) -> None:
    """AbstractHeartbeatRequestManager.onErrorResponse (ConsumerMembershipManagerTest.testTransitionToFatal,
    testTransitionToFailedWhenTryingToJoin): these errors are fatal; the member stops heartbeating."""
    m = joined()
    out = m.handle(error(code), 5)
    assert m.state is S.FATAL and any(isinstance(o, Fatal) and o.error_code is code for o in out)
    assert sent(m.handle(HeartbeatDue(), 6000)) == []


def test_retriable_error_retries_after_backoff() -> None:
    """AbstractHeartbeatRequestManager.onErrorResponse: COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR
    are retried (after retry.backoff.ms), membership unchanged."""
    m = stable({"foo": [0]})
    m.handle(HeartbeatDue(), 5000)
    out = m.handle(error(ErrorCode.COORDINATOR_NOT_AVAILABLE), 5002)
    assert m.state is S.STABLE and ArmTimer(HeartbeatDue(), 5102) in out
    retry = sent(m.handle(HeartbeatDue(), 5102))[0]
    assert retry.member_epoch == 1 and retry.topic_partitions is not None  # full again after an error


def test_every_delivered_answer_is_handled_even_with_two_heartbeats_out() -> None:
    """AbstractHeartbeatRequestManager.makeHeartbeatRequest completes each request with its own
    handler; a poll-timer leave (ignoreResponse) resets the request state, so the heartbeat sent
    before it is still answered while the rejoin is out. Soak schedule 5334 (consumer, seed 0):
    the stale UNKNOWN_MEMBER_ID fences the rejoining member, which joins again; the answers to the
    two joins and to the acknowledgement then arrive in turn, and the last one's assignment (the
    partitions another member has just released) must be reconciled, not dropped."""
    m = stable({"foo": [0]})
    m.handle(HeartbeatDue(), 5000)  # a heartbeat at epoch 1 is out
    m.handle(PollTimerExpired(), 5000)  # the leave, sent with ignoreResponse
    m.handle(CallbacksCompleted(), 5000)  # onPartitionsLost
    rejoin = sent(m.handle(Poll(), 5000))
    assert [r.member_epoch for r in rejoin] == [0] and m.state is S.JOINING
    out = m.handle(error(ErrorCode.UNKNOWN_MEMBER_ID), 5050)  # the answer to the epoch-1 heartbeat
    assert callbacks(out) == []  # nothing to lose: no onPartitionsLost, rejoined at once
    assert [r.member_epoch for r in sent(out)] == [0]  # a second join while the first is out
    out = m.handle(ok(7, {}), 5060)  # the first join's answer: nothing free yet
    assert callbacks(out) == [PartitionsAssigned(())]
    ack = sent(m.handle(CallbacksCompleted(), 5060))
    assert [r.member_epoch for r in ack] == [7]
    assert callbacks(m.handle(ok(7, {}), 5070)) == []  # the second join's answer
    out = m.handle(ok(7, {"foo": [1]}), 5080)  # the acknowledgement's answer
    assert callbacks(out) == [PartitionsAssigned(("foo-1",))]
    m.handle(CallbacksCompleted(), 5080)
    assert m.owned == ("foo-1",)


def test_fenced_mid_reconciliation_loses_what_it_was_being_given() -> None:
    """AbstractMembershipManager.revokeAndAssign puts the new assignment in SubscriptionState
    (assignFromSubscribedAwaitingCallback) before onPartitionsAssigned runs, and transitionToFenced
    gives onPartitionsLost subscriptions.assignedPartitions(): a member fenced while its
    onPartitionsAssigned is running loses those partitions too (soak --migrate seed 0 schedule
    353: a GC pause held back the answer that gave c1 t0-0, and the session expired meanwhile)."""
    m = joined()
    out = m.handle(ok(1, {"foo": [0, 1]}), 10)
    assert callbacks(out) == [PartitionsAssigned(("foo-0", "foo-1"))]
    m.handle(HeartbeatDue(), 20)
    out = m.handle(error(ErrorCode.FENCED_MEMBER_EPOCH), 30)
    assert callbacks(out) == [PartitionsLost(("foo-0", "foo-1"))]
    m.handle(CallbacksCompleted(), 40)  # onPartitionsAssigned returns: the reconciliation is aborted
    m.handle(CallbacksCompleted(), 40)  # onPartitionsLost returns: joining again
    assert m.owned == () and m.state is S.JOINING


def test_a_fatal_answer_to_a_heartbeat_sent_before_the_poll_timeout_leaves_the_member_stale() -> None:
    """MemberState.FATAL.previousValidStates has no STALE (Kafka 4.1): a fatal error answering the
    heartbeat that was in flight when the poll timer expired (GROUP_ID_NOT_FOUND once that leave
    converted the group back to classic: soak --migrate seed 0 schedule 1834) changes nothing; the
    member rejoins at its next poll."""
    m = stable({"foo": [0]})
    m.handle(HeartbeatDue(), 5000)
    m.handle(PollTimerExpired(), 5000)
    m.handle(CallbacksCompleted(), 5000)
    assert m.state is S.STALE
    out = m.handle(error(ErrorCode.GROUP_ID_NOT_FOUND), 5050)
    assert m.state is S.STALE and not [o for o in out if isinstance(o, Fatal)]
    assert [r.member_epoch for r in sent(m.handle(Poll(), 6000))] == [0] and m.state is S.JOINING


def test_a_target_that_changes_back_while_its_callback_waits_is_not_reconciled_by_partitions_alone():
    """Kafka 4.1's AbstractMembershipManager: every new target bumps its local epoch
    (LocalAssignment.updateWith) and targetAssignmentReconciled compares epochs too
    (LocalAssignment.equals). So A -> B (onPartitionsAssigned waiting) -> A leaves the member
    RECONCILING; when B's callback completes, revokeAndAssign is not aborted, the member
    acknowledges B and maybeReconcile revokes B - A at once (soak consumer 15367, 26553)."""
    m = stable({"foo": [0, 1]})
    m.handle(HeartbeatDue(), 5012)
    seen = callbacks(m.handle(ok(2, {"foo": [0, 1, 2, 3]}), 5014))
    while not any(isinstance(c, PartitionsAssigned) for c in seen):  # up to B's onPartitionsAssigned
        seen += callbacks(m.handle(CallbacksCompleted(), 5020))
    assert seen == [CommitOffsets(("foo-0", "foo-1")), PartitionsAssigned(("foo-2", "foo-3"))]
    m.handle(HeartbeatDue(), 6000)
    assert callbacks(m.handle(ok(2, {"foo": [0, 1]}), 6010)) == []
    assert m.state is S.RECONCILING

    out = m.handle(CallbacksCompleted(), 7000)
    assert [r.topic_partitions for r in sent(out)] == [(TopicPartitions("foo", (0, 1, 2, 3)),)]  # B acknowledged
    m.handle(ok(2), 7050)
    seen, out = through_reconciliation(m, out, 7100)
    assert PartitionsRevoked(("foo-2", "foo-3")) in seen
    assert [r.topic_partitions for r in sent(out)] == [(TopicPartitions("foo", (0, 1)),)]
    assert m.owned == ("foo-0", "foo-1")


# ---------------------------------------------------------------- reconciliation (Kafka 4.1, 13f7025)
# Kafka's tests drive the manager with mocks (no rebalance listener, so callbacks complete at
# once); these keep the facts in our events, where every callback batch waits for the application's
# CallbacksCompleted, in the order asked (Kafka's application thread runs them in order). A
# commit's outcome is not an input: the member hears only that the batch ran. Topic ids and
# metadata are not modelled: the member is given topic names. Where Kafka's fact fails on the
# member the test is a strict xfail naming the difference.


def test_fencing_when_state_is_reconciling() -> None:
    """ConsumerMembershipManagerTest.testFencingWhenStateIsReconciling: fenced while RECONCILING,
    the epoch is reset to 0, SubscriptionState is emptied (assignFromSubscribed(emptySet)) and the
    member rejoins with nothing owned."""
    m = joined()
    m.handle(ok(1, {"foo": [0, 1]}), 10)
    assert m.state is S.RECONCILING
    out = m.handle(error(ErrorCode.FENCED_MEMBER_EPOCH), 20)
    assert m.state is S.FENCED and m.member_epoch == 0 and sent(out) == []
    m.handle(CallbacksCompleted(), 30)  # the reconciliation's batch: discarded, the member is fenced
    assert m.state is S.FENCED and sent(out) == []
    out = m.handle(CallbacksCompleted(), 40)  # onPartitionsLost
    assert m.state is S.JOINING and m.owned == () and m.member_epoch == 0
    assert [(r.member_epoch, r.topic_partitions) for r in sent(out)] == [(0, ())]


def _fenced_mid_reconciliation_then_given_another(m: ConsumerMembershipManager, lost: tuple[str, ...]) -> None:
    """The tail of Kafka's testDelayedReconciliationResultDiscarded*IfMemberRejoins
    (assertInitialReconciliationDiscardedAfterRejoin): the reconciliation that was running when
    the member was fenced changes nothing when it completes (no assignment, no acknowledgement),
    and the assignment received after rejoining is reconciled next, from an empty SubscriptionState
    (nothing to commit or revoke)."""
    epoch = m.member_epoch
    m.handle(HeartbeatDue(), 20000)
    out = m.handle(error(ErrorCode.FENCED_MEMBER_EPOCH), 20010)
    assert callbacks(out) == [PartitionsLost(lost)] and m.state is S.FENCED
    owned = m.owned
    out = m.handle(CallbacksCompleted(), 20020)  # the delayed reconciliation completes
    assert sent(out) == [] and callbacks(out) == [] and m.state is S.FENCED and m.owned == owned
    out = m.handle(CallbacksCompleted(), 20030)  # onPartitionsLost: rejoin
    assert [(r.member_epoch, r.topic_partitions) for r in sent(out)] == [(0, ())]
    out = m.handle(ok(epoch + 1, {"foo": [5]}), 20040)  # the assignment after rejoining
    assert m.state is S.RECONCILING and callbacks(out) == [PartitionsAssigned(("foo-5",))]
    out = m.handle(CallbacksCompleted(), 20050)
    assert [r.topic_partitions for r in sent(out)] == [(TopicPartitions("foo", (5,)),)]
    assert m.state is S.STABLE and m.owned == ("foo-5",) and m.member_epoch == epoch + 1


def test_delayed_reconciliation_discarded_after_commit_if_member_rejoins() -> None:
    """ConsumerMembershipManagerTest.testDelayedReconciliationResultDiscardedAfterCommitIfMemberRejoins
    (AbstractMembershipManager.maybeReconcile at 13f7025): owning topic1-0 and assigned 1 and 2, the
    member first commits; onPartitionsRevoked is asked only once the commit completes and
    maybeAbortReconciliation finds the member still reconciling. Fenced meanwhile, SubscriptionState
    holds topic1-0 alone, so that is what is lost; the commit's late completion neither revokes,
    assigns nor acknowledges, and the assignment received after rejoining is reconciled next."""
    m = stable({"foo": [0]})
    m.handle(HeartbeatDue(), 5012)
    out = m.handle(ok(2, {"foo": [1, 2]}), 5014)
    assert callbacks(out) == [CommitOffsets(("foo-0",))] and m.state is S.RECONCILING
    _fenced_mid_reconciliation_then_given_another(m, ("foo-0",))


def test_delayed_reconciliation_discarded_after_partitions_revoked_callback_if_member_rejoins() -> None:
    """ConsumerMembershipManagerTest.testDelayedReconciliationResultDiscardedAfterPartitionsRevokedCallbackIfMemberRejoins
    (AbstractMembershipManager.revokeAndAssign at 13f7025; no auto-commit): onPartitionsAssigned is
    asked only once onPartitionsRevoked(topic1-0) has returned with the member still reconciling, and
    the new partitions enter SubscriptionState just before it (assignPartitions). Fenced while
    revoking, the member loses topic1-0 alone and topic1-1/2 are never given to the listener; the
    assignment received after rejoining is reconciled next."""
    m = stable({"foo": [0]}, auto_commit=False)
    m.handle(HeartbeatDue(), 5012)
    out = m.handle(ok(2, {"foo": [1, 2]}), 5014)
    assert callbacks(out) == [PartitionsRevoked(("foo-0",))] and m.state is S.RECONCILING
    _fenced_mid_reconciliation_then_given_another(m, ("foo-0",))


def test_delayed_reconciliation_discarded_after_partitions_assigned_callback_if_member_rejoins() -> None:
    """ConsumerMembershipManagerTest.testDelayedReconciliationResultDiscardedAfterPartitionsAssignedCallbackIfMemberRejoins
    (no auto-commit, nothing owned): stuck in onPartitionsAssigned(topic1-1), fenced; SubscriptionState
    already holds topic1-1 (assignFromSubscribedAwaitingCallback), so that is what is lost; the
    callback's late completion is discarded and the assignment after rejoining is reconciled next."""
    m = stable({}, auto_commit=False)
    m.handle(HeartbeatDue(), 5012)
    out = m.handle(ok(2, {"foo": [1]}), 5014)
    assert callbacks(out) == [PartitionsAssigned(("foo-1",))] and m.state is S.RECONCILING
    _fenced_mid_reconciliation_then_given_another(m, ("foo-1",))


def test_same_assignment_reconciled_again_when_fenced() -> None:
    """ConsumerMembershipManagerTest.testSameAssignmentReconciledAgainWhenFenced: stable with an
    empty assignment, given topic1 0-2, fenced before that completes; after rejoining, the same
    (empty) assignment it had before is reconciled and acknowledged again, because fencing reset
    currentAssignment to LocalAssignment.NONE."""
    m = stable({})
    m.handle(HeartbeatDue(), 5012)
    m.handle(ok(2, {"foo": [0, 1, 2]}), 5014)
    m.handle(error(ErrorCode.FENCED_MEMBER_EPOCH), 5020)
    m.handle(CallbacksCompleted(), 5030)  # the reconciliation ("commit completes")
    assert m.state is S.FENCED and m.owned == ()
    m.handle(CallbacksCompleted(), 5040)  # onPartitionsLost
    assert m.state is S.JOINING and m.owned == ()
    out = m.handle(ok(3, {}), 5050)
    assert m.state is S.RECONCILING and callbacks(out) == [PartitionsAssigned(())]
    out = m.handle(CallbacksCompleted(), 5060)
    assert [(r.member_epoch, r.topic_partitions) for r in sent(out)] == [(3, ())]
    assert m.state is S.STABLE and m.owned == ()


def test_delayed_reconciliation_result_applied_when_target_changed_with_new_assignment() -> None:
    """ConsumerMembershipManagerTest.testDelayedReconciliationResultAppliedWhenTargetChangedWithNewAssignment:
    a joining member reconciling topic1-0 is given topic1-0 and topic2-0 meanwhile; no second
    reconciliation starts while the first runs; when it completes, topic1-0 is applied and
    acknowledged (ACKNOWLEDGING), the heartbeat takes the member back to RECONCILING, and the next
    loop reconciles both partitions."""
    m = joined()
    out = m.handle(ok(1, {"foo": [0]}), 10)
    assert callbacks(out) == [PartitionsAssigned(("foo-0",))]
    m.handle(HeartbeatDue(), 5010)
    out = m.handle(ok(1, {"foo": [0], "bar": [0]}), 5020)
    assert callbacks(out) == [] and m.state is S.RECONCILING
    out = m.handle(CallbacksCompleted(), 5030)
    assert [r.topic_partitions for r in sent(out)] == [(TopicPartitions("foo", (0,)),)]
    assert m.owned == ("foo-0",) and m.state is S.RECONCILING
    m.handle(ok(1), 5040)
    seen, out = through_reconciliation(m, out, 5050)
    assert seen == [CommitOffsets(("foo-0",)), PartitionsAssigned(("bar-0",))]
    assert [r.topic_partitions for r in sent(out)] == [(TopicPartitions("bar", (0,)), TopicPartitions("foo", (0,)))]
    assert m.state is S.STABLE and m.owned == ("bar-0", "foo-0")


def test_reconciliation_skipped_when_same_assignment_received() -> None:
    """ConsumerMembershipManagerTest.testReconciliationSkippedWhenSameAssignmentReceived: a stable
    member given the assignment it owns again starts no reconciliation: no callbacks, no commit,
    no acknowledgement, still STABLE."""
    m = stable({"foo": [0, 1]})
    m.handle(HeartbeatDue(), 5012)
    out = m.handle(ok(1, {"foo": [0, 1]}), 5014)
    assert callbacks(out) == [] and sent(out) == [] and m.state is S.STABLE and m.pending_callbacks == 0
    later = sent(m.handle(HeartbeatDue(), 10014))
    assert [r.topic_partitions for r in later] == [None]  # nothing new to report


def test_reconcile_new_partitions_assigned_when_other_partitions_owned() -> None:
    """ConsumerMembershipManagerTest.testReconcileNewPartitionsAssignedWhenOtherPartitionsOwned:
    owning topic1-0 and given 0-2, nothing is revoked, onPartitionsAssigned gets 1 and 2, and the
    member then owns (and acknowledges) all three."""
    m = stable({"foo": [0]})
    m.handle(HeartbeatDue(), 5012)
    out = m.handle(ok(2, {"foo": [0, 1, 2]}), 5014)
    seen, out = through_reconciliation(m, out, 5020)
    assert seen == [CommitOffsets(("foo-0",)), PartitionsAssigned(("foo-1", "foo-2"))]
    assert [r.topic_partitions for r in sent(out)] == [(TopicPartitions("foo", (0, 1, 2)),)]
    assert m.owned == ("foo-0", "foo-1", "foo-2")


def test_reconcile_partitions_revoked_with_failed_auto_commit_completes_revocation_anyway() -> None:
    """ConsumerMembershipManagerTest.testReconcilePartitionsRevokedWithFailedAutoCommitCompletesRevocationAnyway
    (and ...WithSuccessfulAutoCommitNoCallbacks): an empty assignment revokes what the member owns;
    it stays RECONCILING, owning it, until the commit (whatever its outcome: the member never hears
    it, only that the batch ran) and the callbacks are done, then acknowledges owning nothing."""
    m = stable({"foo": [0]})
    m.handle(HeartbeatDue(), 5012)
    out = m.handle(ok(2, {}), 5014)
    assert m.state is S.RECONCILING and m.owned == ("foo-0",)
    seen, out = through_reconciliation(m, out, 5020)
    assert seen == [CommitOffsets(("foo-0",)), PartitionsRevoked(("foo-0",)), PartitionsAssigned(())]
    assert [(r.member_epoch, r.topic_partitions) for r in sent(out)] == [(2, ())]
    assert m.owned == () and m.state is S.STABLE


def test_transition_to_leaving_while_reconciling_due_to_stale_member() -> None:
    """ConsumerMembershipManagerTest.testTransitionToLeavingWhileReconcilingDueToStaleMember
    (assertLeaveGroupDueToExpiredPollAndTransitionToStale): the poll timer expires while RECONCILING;
    the member sends the leave (epoch -1), is STALE, releases its assignment (onPartitionsLost, then
    currentAssignment NONE and no target left to reconcile) and does not unsubscribe: the next
    poll() rejoins."""
    m = stable({"foo": [0]}, auto_commit=False)
    m.handle(HeartbeatDue(), 5012)
    assert callbacks(m.handle(ok(2, {"foo": [0, 1]}), 5014)) == [PartitionsAssigned(("foo-1",))]
    assert m.state is S.RECONCILING
    out = m.handle(PollTimerExpired(), 6000)
    assert [(r.member_epoch, o.ignore_response) for o in out if isinstance(o, Send) for r in [o.request]] == [(-1, True)]
    assert m.state is S.STALE and m.member_epoch == -1
    assert callbacks(out) == [PartitionsLost(("foo-0", "foo-1"))]  # SubscriptionState holds foo-1 already
    m.handle(CallbacksCompleted(), 6010)  # the reconciliation: discarded
    m.handle(CallbacksCompleted(), 6020)  # onPartitionsLost
    assert m.state is S.STALE and m.owned == () and m.target == {} and m.pending_callbacks == 0
    assert m.topics == ("foo",)  # still subscribed
    out = m.handle(Poll(), 7000)
    assert m.state is S.JOINING and [(r.member_epoch, r.topic_partitions) for r in sent(out)] == [(0, ())]


def test_transition_to_leaving_while_acknowledging_due_to_stale_member() -> None:
    """ConsumerMembershipManagerTest.testTransitionToLeavingWhileAcknowledgingDueToStaleMember: the
    poll timer expires while the acknowledgement waits for the heartbeat in flight; the leave goes
    out at once and the member is STALE, losing what it had just been given."""
    m = joined()
    m.handle(ok(1, {"foo": [0]}), 10)
    m.handle(HeartbeatDue(), 5010)  # a heartbeat is out
    m.handle(CallbacksCompleted(), 5020)
    assert m.state is S.ACKNOWLEDGING
    out = m.handle(PollTimerExpired(), 5030)
    assert [r.member_epoch for r in sent(out)] == [-1] and m.state is S.STALE
    assert callbacks(out) == [PartitionsLost(("foo-0",))]


def test_fenced_when_assignment_empty() -> None:
    """ConsumerMembershipManagerTest.testFencedWhenAssignmentEmpty, with
    ConsumerMembershipManager.invokeOnPartitionsLostCallback: a member fenced while it owns nothing
    calls no listener; the lost future is already complete, so transitionToFenced's whenComplete
    rejoins at once (FENCED -> JOINING) with epoch 0."""
    m = stable({})
    m.handle(HeartbeatDue(), 5012)
    out = m.handle(error(ErrorCode.FENCED_MEMBER_EPOCH), 5014)
    assert callbacks(out) == [] and m.pending_callbacks == 0
    assert m.state is S.JOINING and [r.member_epoch for r in sent(out)] == [0]


def test_leave_group_when_member_owns_assignment() -> None:
    """ConsumerMembershipManagerTest.testLeaveGroupWhenMemberOwnsAssignment: a member that has just
    reconciled topic1 0-1 (ACKNOWLEDGING) leaves: it releases them (commit, onPartitionsRevoked),
    sends the leave with epoch -1 and ends UNSUBSCRIBED owning nothing."""
    m = joined()
    m.handle(ok(1, {"foo": [0, 1]}), 10)
    m.handle(HeartbeatDue(), 5010)  # a heartbeat is out, so the acknowledgement waits
    m.handle(CallbacksCompleted(), 5020)
    assert m.state is S.ACKNOWLEDGING and m.owned == ("foo-0", "foo-1")
    out = m.handle(Unsubscribe(), 5030)
    assert m.state is S.PREPARE_LEAVING
    assert callbacks(out) == [CommitOffsets(("foo-0", "foo-1")), PartitionsRevoked(("foo-0", "foo-1"))]
    out = m.handle(CallbacksCompleted(), 5040)
    assert [r.member_epoch for r in sent(out)] == [-1]
    assert m.state is S.UNSUBSCRIBED and m.owned == () and m.member_epoch == -1


def test_fencing_when_state_is_prepare_leaving() -> None:
    """ConsumerMembershipManagerTest.testFencingWhenStateIsPrepareLeaving: fenced while its leave
    callbacks run, the member calls no onPartitionsLost and does not rejoin: it is UNSUBSCRIBED at
    once with the leave epoch, and stays so, sending nothing, when the callbacks complete."""
    m = stable({"foo": [0]})
    m.handle(HeartbeatDue(), 5012)
    m.handle(Unsubscribe(), 5013)
    out = m.handle(error(ErrorCode.FENCED_MEMBER_EPOCH), 5014)
    assert callbacks(out) == [] and sent(out) == []
    assert m.state is S.UNSUBSCRIBED and m.member_epoch == -1
    out = m.handle(CallbacksCompleted(), 5020)
    assert m.state is S.UNSUBSCRIBED and sent(out) == [] and m.owned == ()
    assert sent(m.handle(HeartbeatDue(), 10014)) == []


def test_leave_group_when_member_fenced() -> None:
    """ConsumerMembershipManagerTest.testLeaveGroupWhenMemberFenced: a fenced member whose
    onPartitionsLost is still running unsubscribes: its assignment is cleared and it is UNSUBSCRIBED
    at once, and stays so when the callback completes (no rejoin)."""
    m = stable({"foo": [0]})
    m.handle(HeartbeatDue(), 5012)
    m.handle(error(ErrorCode.FENCED_MEMBER_EPOCH), 5014)
    out = m.handle(Unsubscribe(), 5020)
    assert m.state is S.UNSUBSCRIBED and m.owned == () and callbacks(out) == [] and sent(out) == []
    out = m.handle(CallbacksCompleted(), 5030)
    assert m.state is S.UNSUBSCRIBED and sent(out) == []


def test_leave_group_when_member_is_stale() -> None:
    """ConsumerMembershipManagerTest.testLeaveGroupWhenMemberIsStale: a stale member that
    unsubscribes has already left: nothing is sent and it stays STALE."""
    m = stable({"foo": [0]})
    m.handle(PollTimerExpired(), 300000)
    out = m.handle(Unsubscribe(), 300010)
    assert m.state is S.STALE and sent(out) == [] and callbacks(out) == []



def test_transition_to_reconciling_if_empty_assignment_received() -> None:
    """ConsumerMembershipManagerTest.testTransitionToReconcilingIfEmptyAssignmentReceived: a joining
    member given an empty assignment reconciles it (RECONCILING), and stays RECONCILING when a
    non-empty one follows before that completes."""
    m = joined()
    m.handle(ok(1, {}), 10)
    assert m.state is S.RECONCILING
    m.handle(HeartbeatDue(), 5010)
    m.handle(ok(1, {"foo": [0]}), 5020)
    assert m.state is S.RECONCILING


def test_leave_group_when_member_already_leaving() -> None:
    """ConsumerMembershipManagerTest.testLeaveGroupWhenMemberAlreadyLeaving: a second unsubscribe
    while the first one's callbacks run asks for nothing more; the first completes the leave (one
    heartbeat, epoch -1)."""
    m = stable({"foo": [0]})
    m.handle(Unsubscribe(), 100)
    out = m.handle(Unsubscribe(), 101)
    assert callbacks(out) == [] and sent(out) == [] and m.pending_callbacks == 1
    out = m.handle(CallbacksCompleted(), 110)
    assert [r.member_epoch for r in sent(out)] == [-1] and m.state is S.UNSUBSCRIBED


@pytest.mark.parametrize("leaving", [False, True])
def test_fatal_failure_keeps_member_id_and_epoch(leaving: bool) -> None:
    """ConsumerMembershipManagerTest.testFatalFailureWhenStateIsStable and
    testFatalFailureWhenStateIsPrepareLeaving (testStateUpdateOnFatalFailure): FATAL keeps the last
    member id and epoch; a member that was preparing to leave stays FATAL when its leave callbacks
    complete, and sends nothing more."""
    m = stable({"foo": [0]})
    if leaving:
        m.handle(Unsubscribe(), 100)
        assert m.state is S.PREPARE_LEAVING
    m.handle(HeartbeatDue(), 5012)
    m.handle(error(ErrorCode.GROUP_MAX_SIZE_REACHED), 5014)
    assert m.state is S.FATAL and (m.member_id, m.member_epoch) == ("m1", 1)
    if leaving:
        assert sent(m.handle(CallbacksCompleted(), 5020)) == [] and m.state is S.FATAL
    assert sent(m.handle(HeartbeatDue(), 10014)) == []
