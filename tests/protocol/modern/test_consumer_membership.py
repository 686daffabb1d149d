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
    Received,
    Send,
    Subscribe,
    Unsubscribe,
)

S = ConsumerMemberState


def sent(out: list[Output]) -> list[ConsumerGroupHeartbeatRequest]:
    return [o.request for o in out if isinstance(o, Send)]


def callbacks(out: list[Output]) -> list[Output]:
    return [o for o in out if isinstance(o, CommitOffsets | PartitionsRevoked | PartitionsAssigned | PartitionsLost)]


def ok(epoch: int, assignment: dict[str, list[int]] | None = None, member_id: str = "m1") -> Received:
    tps = None if assignment is None else tuple(TopicPartitions(t, tuple(ps)) for t, ps in sorted(assignment.items()))
    return Received(ConsumerGroupHeartbeatResponse(ErrorCode.NONE, member_id=member_id, member_epoch=epoch,
                                                   heartbeat_interval_ms=5000, assignment=tps))


def error(code: ErrorCode) -> Received:
    return Received(ConsumerGroupHeartbeatResponse(code))


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
    assert callbacks(out) == [CommitOffsets(("foo-0", "foo-1", "foo-2")), PartitionsRevoked(("foo-0",)),
                              PartitionsAssigned(("foo-3",))]
    assert m.owned == ("foo-0", "foo-1", "foo-2")  # nothing changes until the callbacks have run
    out = m.handle(CallbacksCompleted(), 5100)
    ack = sent(out)
    assert len(ack) == 1 and ack[0].topic_partitions == (TopicPartitions("foo", (1, 2, 3)),)
    assert m.state is S.STABLE and m.owned == ("foo-1", "foo-2", "foo-3")


def test_revocation_without_auto_commit() -> None:
    """ConsumerMembershipManagerTest.testReconcilePartitionsRevokedNoAutoCommitNoCallbacks: no
    commit when enable.auto.commit is off."""
    m = stable({"foo": [0, 1]}, auto_commit=False)
    m.handle(HeartbeatDue(), 5012)
    out = m.handle(ok(2, {"foo": [1]}), 5014)
    assert callbacks(out) == [PartitionsRevoked(("foo-0",)), PartitionsAssigned(())]


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
    assert callbacks(out) == [PartitionsLost(())]
    again = sent(m.handle(CallbacksCompleted(), 5050))
    assert [r.member_epoch for r in again] == [0]  # a second join while the first is out
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
    assert callbacks(m.handle(ok(2, {"foo": [0, 1, 2, 3]}), 5014))[-1] == PartitionsAssigned(("foo-2", "foo-3"))
    m.handle(HeartbeatDue(), 6000)
    assert callbacks(m.handle(ok(2, {"foo": [0, 1]}), 6010)) == []
    assert m.state is S.RECONCILING

    out = m.handle(CallbacksCompleted(), 7000)
    assert [r.topic_partitions for r in sent(out)] == [(TopicPartitions("foo", (0, 1, 2, 3)),)]  # B acknowledged
    assert PartitionsRevoked(("foo-2", "foo-3")) in callbacks(out)
    m.handle(ok(2), 7050)
    out = m.handle(CallbacksCompleted(), 7100)
    assert [r.topic_partitions for r in sent(out)] == [(TopicPartitions("foo", (0, 1)),)]
    assert m.owned == ("foo-0", "foo-1")
