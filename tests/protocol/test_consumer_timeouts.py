"""Request timeouts of the classic consumer, as Apache Kafka's Java client times out a request
that gets no response (NetworkClient.handleTimedOutRequests, AbstractCoordinator); these are the
client's answers to a network that loses requests or responses (scenario ``network_loss``)."""

from __future__ import annotations

from kafka_rebalance.protocol.classic.consumer import ClassicMemberState, ConsumerConfig, ConsumerCoordinator
from kafka_rebalance.protocol.classic.consumer_events import (
    ANY_BROKER,
    ApiKey,
    Disconnect,
    HeartbeatDue,
    Poll,
    RequestTimedOut,
    ResponseReceived,
    RetryFetch,
    RetryFindCoordinator,
    RetryJoin,
    Send,
)
from kafka_rebalance.protocol.classic.coordinator_events import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupResponse,
)
from kafka_rebalance.protocol.effects import ArmTimer, CancelTimer
from kafka_rebalance.protocol.errors import ErrorCode

JOIN, SYNC, HEARTBEAT, FETCH, FIND = (RequestTimedOut(ApiKey.JOIN_GROUP), RequestTimedOut(ApiKey.SYNC_GROUP),
                                      RequestTimedOut(ApiKey.HEARTBEAT), RequestTimedOut(ApiKey.OFFSET_FETCH),
                                      RequestTimedOut(ApiKey.FIND_COORDINATOR))


def sends(outputs):
    return [o for o in outputs if isinstance(o, Send)]


def consumer(max_poll_interval_ms=300000, request_timeout_ms=30000, strategy="range") -> ConsumerCoordinator:
    return ConsumerCoordinator(ConsumerConfig("c", "g", (strategy,), topics=("t0",), max_poll_interval_ms=max_poll_interval_ms,
                                              request_timeout_ms=request_timeout_ms), {"t0": 2}, coordinator_id=0)


def join_response(cc: ConsumerCoordinator, join: Send, generation=1) -> ResponseReceived:
    metadata = join.request.protocols[0].metadata
    strategy = join.request.protocols[0].name
    return ResponseReceived(JoinGroupResponse(ErrorCode.NONE, generation, "consumer", strategy, "m1", False, "m1",
                                      (JoinGroupResponseMember("m1", None, metadata),)))


def stable_consumer(strategy="range") -> ConsumerCoordinator:
    """Joined generation 1 as the only member with t0-0 and t0-1; its OffsetFetch answered."""
    cc = consumer(strategy=strategy)
    (join,) = sends(cc.handle(Poll(), 0))
    cc.handle(join_response(cc, join), 10)
    cc.handle(ResponseReceived(SyncGroupResponse(ErrorCode.NONE, "consumer", strategy, ("t0-0", "t0-1"))), 20)
    cc.handle(ResponseReceived(OffsetFetchResponse(ErrorCode.NONE, ())), 30)
    assert cc.state is ClassicMemberState.STABLE
    return cc


def test_join_group_waits_for_the_rebalance_timeout_plus_five_seconds():
    """AbstractCoordinator.sendJoinGroupRequest: joinGroupTimeoutMs = max(request.timeout.ms,
    rebalance.timeout.ms + JOIN_GROUP_TIMEOUT_LAPSE (5000)): the coordinator may hold a JoinGroup
    for the whole rebalance timeout."""
    cc = consumer(max_poll_interval_ms=300000)
    assert ArmTimer(JOIN, 300000 + 5000) in cc.handle(Poll(), 0)
    cc = consumer(max_poll_interval_ms=10000)
    assert ArmTimer(JOIN, 30000) in cc.handle(Poll(), 0)


def test_every_other_request_waits_request_timeout_ms():
    """ConsumerNetworkClient.send(node, request) uses the client's request.timeout.ms (30000 by
    default) for SyncGroup, Heartbeat, OffsetFetch and FindCoordinator."""
    cc = consumer(max_poll_interval_ms=300000)
    (join,) = sends(cc.handle(Poll(), 0))
    out = cc.handle(join_response(cc, join), 10)
    assert CancelTimer(JOIN) in out and ArmTimer(SYNC, 10 + 30000) in out
    out = cc.handle(ResponseReceived(SyncGroupResponse(ErrorCode.NONE, "consumer", "range", ("t0-0", "t0-1"))), 20)
    assert CancelTimer(SYNC) in out and ArmTimer(FETCH, 20 + 30000) in out
    out = cc.handle(HeartbeatDue(), 3010)
    assert Send(HeartbeatRequest("g", 1, "m1", None), 0) in out and ArmTimer(HEARTBEAT, 3010 + 30000) in out


def test_without_a_request_timeout_no_timer_is_armed():
    """A network that loses nothing answers every request: no timeout to keep (the simulator's
    default, which leaves every loss-free scenario as it was)."""
    cc = consumer(request_timeout_ms=None)
    out = cc.handle(Poll(), 0)
    assert not [o for o in out if isinstance(o, ArmTimer | CancelTimer) and isinstance(o.timer, RequestTimedOut)]


def test_a_new_member_whose_join_response_is_lost_joins_again_without_a_member_id():
    """NetworkClient.handleTimedOutRequests closes the connection (DisconnectException);
    CoordinatorResponseHandler.onFailure marks the coordinator unknown (markCoordinatorUnknown);
    joinGroupIfNeeded backs off retry.backoff.ms, finds the coordinator (ensureCoordinatorReady)
    and sends JoinGroup again with generation.memberId, which a new member whose response was lost
    never learnt: it joins as a new member (the coordinator's first member id expires)."""
    cc = consumer(max_poll_interval_ms=10000)
    cc.handle(Poll(), 0)
    out = cc.handle(JOIN, 30000)
    assert Disconnect(0) in out
    assert sends(out) == [Send(FindCoordinatorRequest("g"), ANY_BROKER)]
    assert ArmTimer(RetryJoin(), 30100) in out
    assert cc.coordinator_id is None and cc.state is ClassicMemberState.UNJOINED and cc.rejoin_needed
    cc.handle(ResponseReceived(FindCoordinatorResponse(ErrorCode.NONE, 2)), 30050)
    assert not cc.ready_to_join  # still backing off
    cc.handle(RetryJoin(), 30100)
    (join,) = sends(cc.handle(Poll(), 30100))
    assert isinstance(join.request, JoinGroupRequest) and join.node_id == 2
    assert join.request.member_id == "" and join.request.reason == "rebalance failed due to DisconnectException"


def test_a_member_that_got_its_id_retries_the_join_with_it():
    """JoinGroupResponseHandler, MEMBER_ID_REQUIRED: generation = (NO_GENERATION, memberId); the
    retried JoinGroup after a timeout carries that member id."""
    cc = consumer(max_poll_interval_ms=10000)
    cc.handle(Poll(), 0)
    cc.handle(ResponseReceived(JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id="m7")), 5)
    cc.handle(JOIN, 5 + 30000)
    cc.handle(ResponseReceived(FindCoordinatorResponse(ErrorCode.NONE, 0)), 30010)
    cc.handle(RetryJoin(), 30105)
    (join,) = sends(cc.handle(Poll(), 30105))
    assert join.request.member_id == "m7"


def test_a_lost_sync_group_response_rejoins_with_the_generation():
    """A SyncGroup with no response fails the join future (DisconnectException, retriable):
    the member rejoins after the backoff with its member id and generation."""
    cc = consumer(max_poll_interval_ms=10000)
    (join,) = sends(cc.handle(Poll(), 0))
    cc.handle(join_response(cc, join), 10)
    out = cc.handle(SYNC, 10 + 30000)
    assert Disconnect(0) in out and cc.coordinator_id is None
    cc.handle(ResponseReceived(FindCoordinatorResponse(ErrorCode.NONE, 0)), 30020)
    cc.handle(RetryJoin(), 30110)
    (rejoin,) = sends(cc.handle(Poll(), 30110))
    assert isinstance(rejoin.request, JoinGroupRequest)
    assert rejoin.request.member_id == "m1" and cc.generation == 1


def test_a_timeout_fails_every_request_in_flight_on_the_connection():
    """NetworkClient.cancelInFlightRequests: the closed connection fails every request still in
    flight on it; OffsetFetch is retried after retry.backoff.ms, and a response that still
    arrives for a failed request is never read."""
    cc = consumer()
    (join,) = sends(cc.handle(Poll(), 0))
    cc.handle(join_response(cc, join), 10)
    cc.handle(ResponseReceived(SyncGroupResponse(ErrorCode.NONE, "consumer", "range", ("t0-0", "t0-1"))), 20)  # OffsetFetch sent
    cc.handle(HeartbeatDue(), 3010)  # a heartbeat is lost
    out = cc.handle(FETCH, 20 + 30000)  # the OffsetFetch times out first
    assert Disconnect(0) in out and CancelTimer(HEARTBEAT) in out
    assert ArmTimer(RetryFetch(), 30020 + 100) in out
    assert cc.handle(ResponseReceived(OffsetFetchResponse(ErrorCode.NONE, ())), 30030) == []  # its connection is closed
    out = cc.handle(ResponseReceived(FindCoordinatorResponse(ErrorCode.NONE, 0)), 30040)
    assert sends(out) == [Send(OffsetFetchRequest("g", ("t0-0", "t0-1")), 0)]


def test_a_lost_heartbeat_times_out_at_its_own_deadline():
    """InFlightRequests.nodesWithTimedOutRequests times each request on its own: a heartbeat
    whose request or response was lost times out request.timeout.ms after it was sent, though
    the heartbeats after it are answered."""
    cc = stable_consumer()
    cc.handle(HeartbeatDue(), 3020)  # lost
    for sent in range(6020, 33021, 3000):
        out = cc.handle(HeartbeatDue(), sent)
        out += cc.handle(ResponseReceived(HeartbeatResponse(ErrorCode.NONE)), sent + 5)
        assert ArmTimer(HEARTBEAT, 3020 + 30000) in out
    assert Disconnect(0) in cc.handle(HEARTBEAT, 33020)
    assert cc.coordinator_id is None


def test_an_answer_in_time_cancels_the_timeout():
    cc = stable_consumer()
    cc.handle(HeartbeatDue(), 3020)
    assert CancelTimer(HEARTBEAT) in cc.handle(ResponseReceived(HeartbeatResponse(ErrorCode.NONE)), 3030)
    assert cc.handle(HEARTBEAT, 33020) == []  # a stale timer event does nothing


def test_a_timed_out_find_coordinator_is_asked_again_after_the_backoff():
    """AbstractCoordinator.ensureCoordinatorReady: a failed lookup (retriable) backs off
    retry.backoff.ms and sends FindCoordinator again; its connection (the least loaded broker)
    is not the coordinator's."""
    cc = ConsumerCoordinator(ConsumerConfig("c", "g", ("range",), topics=("t0",), request_timeout_ms=30000), {"t0": 2})
    out = cc.handle(Poll(), 0)
    assert ArmTimer(FIND, 30000) in out
    out = cc.handle(FIND, 30000)
    assert [o for o in out if isinstance(o, Disconnect)] == [] and ArmTimer(RetryFindCoordinator(), 30100) in out
    assert sends(cc.handle(RetryFindCoordinator(), 30100)) == [Send(FindCoordinatorRequest("g"), ANY_BROKER)]


def test_an_error_that_marks_the_coordinator_unknown_fails_the_requests_in_flight_to_it():
    """AbstractCoordinator.markCoordinatorUnknown(error): client.disconnectAsync(oldCoordinator),
    so a SyncGroup still in flight to the old coordinator fails with a DisconnectException and the
    member rejoins; its deadline does not linger to fail a later SyncGroup. (Found by the soak: a
    stale deadline timed out the next rebalance's SyncGroup.)"""
    cc = consumer(max_poll_interval_ms=10000)
    (join,) = sends(cc.handle(Poll(), 0))
    cc.handle(join_response(cc, join), 10)  # SyncGroup in flight
    cc.handle(HeartbeatDue(), 3010)
    out = cc.handle(ResponseReceived(HeartbeatResponse(ErrorCode.NOT_COORDINATOR)), 3020)
    assert Disconnect(0) in out and CancelTimer(SYNC) in out and ArmTimer(RetryJoin(), 3120) in out
    assert sends(out) == [Send(FindCoordinatorRequest("g"), ANY_BROKER)]
    cc.handle(ResponseReceived(FindCoordinatorResponse(ErrorCode.NONE, 1)), 3030)
    cc.handle(RetryJoin(), 3120)
    (rejoin,) = sends(cc.handle(Poll(), 3120))
    assert isinstance(rejoin.request, JoinGroupRequest) and rejoin.node_id == 1


def test_a_failed_sync_group_leaves_the_assignment_of_the_generation_before():
    """JoinGroupResponseHandler sets the generation; only a completed SyncGroup brings its
    assignment. A member whose SyncGroup failed holds the partitions of the generation before
    (``assignment_generation``), though its generation is the new one."""
    cc = stable_consumer("cooperative-sticky")  # keeps its partitions through the rebalance
    cc.handle(HeartbeatDue(), 2990)
    cc.handle(ResponseReceived(HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS)), 3000)
    (join,) = sends(cc.handle(Poll(), 3000))
    cc.handle(join_response(cc, join, generation=2), 3010)
    cc.handle(SYNC, 3010 + 30000)
    assert cc.generation == 2 and cc.assignment_generation == 1 and cc.owned == {"t0-0", "t0-1"}
