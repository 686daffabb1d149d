"""The classic consumer machine on its own: explicit application input, FindCoordinator,
retries (AbstractCoordinator / ConsumerCoordinator behaviour)."""

from __future__ import annotations

from kafka_rebalance.protocol.classic.consumer import ClassicMemberState, ConsumerConfig, ConsumerCoordinator
from kafka_rebalance.protocol.classic.consumer_events import (
    ANY_BROKER,
    CommittedOffsetsFetched,
    PartitionLoadsMeasured,
    PartitionsAssigned,
    Poll,
    ResponseReceived,
    RetryFetch,
    Send,
)
from kafka_rebalance.protocol.classic.coordinator_events import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionOffset,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka_rebalance.protocol.effects import ArmTimer
from kafka_rebalance.protocol.errors import ErrorCode


def sends(outputs):
    return [o for o in outputs if isinstance(o, Send)]


def joined_consumer() -> tuple[ConsumerCoordinator, list]:
    """A consumer that joined generation 1 as leader of a one-member group and got t0-0, t0-1."""
    cc = ConsumerCoordinator(ConsumerConfig("c", "g", ("range",), topics=("t0",)), {"t0": 2}, coordinator_id=0)
    (join,) = sends(cc.handle(Poll(), 0))
    assert isinstance(join.request, JoinGroupRequest) and join.node_id == 0
    metadata = join.request.protocols[0].metadata
    out = cc.handle(ResponseReceived(JoinGroupResponse(ErrorCode.NONE, 1, "consumer", "range", "m1", False, "m1",
                                               (JoinGroupResponseMember("m1", None, metadata),))), 10)
    (sync,) = sends(out)
    assert isinstance(sync.request, SyncGroupRequest) and sync.request.assignments[0].assignment == ("t0-0", "t0-1")
    out = cc.handle(ResponseReceived(SyncGroupResponse(ErrorCode.NONE, "consumer", "range", ("t0-0", "t0-1"))), 20)
    assert cc.state is ClassicMemberState.STABLE
    return cc, out


def test_assignment_is_followed_by_an_offset_fetch():
    """ConsumerCoordinator.onJoinComplete -> onPartitionsAssigned, then the committed offsets
    are fetched for the new partitions."""
    cc, out = joined_consumer()
    assert PartitionsAssigned(("t0-0", "t0-1")) in out
    (fetch,) = sends(out)
    assert fetch.request == OffsetFetchRequest("g", ("t0-0", "t0-1"))


def test_a_failed_offset_fetch_is_retried_with_the_new_coordinator():
    """A failed OffsetFetch is retried after retry.backoff.ms (ConsumerCoordinator
    .refreshCommittedOffsetsIfNeeded runs on every poll until positions are known); on
    NOT_COORDINATOR the consumer first finds the coordinator again (markCoordinatorUnknown).
    Before issue 11 the retry timer was armed and never handled."""
    cc, _ = joined_consumer()
    out = cc.handle(ResponseReceived(OffsetFetchResponse(ErrorCode.NOT_COORDINATOR)), 30)
    assert sends(out) == [Send(FindCoordinatorRequest("g"), ANY_BROKER)]
    assert ArmTimer(RetryFetch(), 130) in out
    assert cc.coordinator_id is None
    assert sends(cc.handle(RetryFetch(), 130)) == []  # still looking for the coordinator
    out = cc.handle(ResponseReceived(FindCoordinatorResponse(ErrorCode.NONE, 2)), 140)
    assert sends(out) == [Send(OffsetFetchRequest("g", ("t0-0", "t0-1")), 2)]
    out = cc.handle(ResponseReceived(OffsetFetchResponse(ErrorCode.NONE, (PartitionOffset("t0-0", 5), PartitionOffset("t0-1", -1)))), 150)
    assert CommittedOffsetsFetched((PartitionOffset("t0-0", 5), PartitionOffset("t0-1", -1))) in out


def test_load_in_progress_offset_fetch_is_retried_on_the_same_coordinator():
    cc, _ = joined_consumer()
    out = cc.handle(ResponseReceived(OffsetFetchResponse(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)), 30)
    assert sends(out) == [] and ArmTimer(RetryFetch(), 130) in out
    assert sends(cc.handle(RetryFetch(), 130)) == [Send(OffsetFetchRequest("g", ("t0-0", "t0-1")), 0)]


def test_join_answered_not_coordinator_finds_the_coordinator_and_rejoins():
    """AbstractCoordinator.JoinGroupResponseHandler: NOT_COORDINATOR marks the coordinator
    unknown; the join is retried once FindCoordinator has answered."""
    cc = ConsumerCoordinator(ConsumerConfig("c", "g", ("range",), topics=("t0",)), {"t0": 2}, coordinator_id=0)
    cc.handle(Poll(), 0)
    out = cc.handle(ResponseReceived(JoinGroupResponse(ErrorCode.NOT_COORDINATOR)), 5)
    assert sends(out) == [Send(FindCoordinatorRequest("g"), ANY_BROKER)]
    assert not cc.ready_to_join  # no coordinator yet
    cc.handle(ResponseReceived(FindCoordinatorResponse(ErrorCode.NONE, 1)), 10)
    assert cc.ready_to_join
    (join,) = sends(cc.handle(Poll(), 11))
    assert isinstance(join.request, JoinGroupRequest) and join.node_id == 1


def test_a_consumer_without_a_coordinator_finds_it_first():
    """AbstractCoordinator.ensureCoordinatorReady: FindCoordinator before any group request."""
    cc = ConsumerCoordinator(ConsumerConfig("c", "g", ("range",), topics=("t0",)), {"t0": 2})
    assert sends(cc.handle(Poll(), 0)) == [Send(FindCoordinatorRequest("g"), ANY_BROKER)]
    cc.handle(ResponseReceived(FindCoordinatorResponse(ErrorCode.NONE, 4)), 5)
    (join,) = sends(cc.handle(Poll(), 6))
    assert join.node_id == 4


def test_skip_assignment_leader_does_not_run_the_assignor():
    """KIP-814: a leader told skip_assignment sends SyncGroup without assignments."""
    cc = ConsumerCoordinator(ConsumerConfig("c", "g", ("range",), topics=("t0",), group_instance_id="i"),
                             {"t0": 2}, coordinator_id=0)
    (join,) = sends(cc.handle(Poll(), 0))
    metadata = join.request.protocols[0].metadata
    out = cc.handle(ResponseReceived(JoinGroupResponse(ErrorCode.NONE, 3, "consumer", "range", "i-1", True, "i-1",
                                               (JoinGroupResponseMember("i-1", "i", metadata),))), 10)
    (sync,) = sends(out)
    assert sync.request.assignments == ()


def _leader_assignment(*loads_events: PartitionLoadsMeasured) -> dict[str, tuple[str, ...]]:
    """What a load-aware leader of two members assigns of t0's four partitions, after
    ``loads_events``."""
    cc = ConsumerCoordinator(ConsumerConfig("c", "g", ("load-aware",), topics=("t0",)), {"t0": 4}, coordinator_id=0)
    (join,) = sends(cc.handle(Poll(), 0))
    metadata = join.request.protocols[0].metadata
    for event in loads_events:
        assert cc.handle(event, 5) == []
    out = cc.handle(ResponseReceived(JoinGroupResponse(ErrorCode.NONE, 1, "consumer", "load-aware", "m1", False, "m1", (
        JoinGroupResponseMember("m1", None, metadata), JoinGroupResponseMember("m2", None, metadata)))), 10)
    (sync,) = sends(out)
    return {a.member_id: a.assignment for a in sync.request.assignments}


def test_the_leader_assigns_with_the_partition_loads_it_was_given():
    """PartitionLoadsMeasured reaches the assignor (GroupSnapshot.partition_loads): the two hot
    partitions go to different members; a list of the wrong length is ignored (equal loads)."""
    equal = _leader_assignment()
    assert equal == {"m1": ("t0-0", "t0-2"), "m2": ("t0-1", "t0-3")}
    assigned = _leader_assignment(PartitionLoadsMeasured({"t0": (10.0, 1.0, 9.0, 1.0)}))
    assert sorted(len(parts) for parts in assigned.values()) == [2, 2]
    owner = {p: m for m, parts in assigned.items() for p in parts}
    assert owner["t0-0"] != owner["t0-2"]
    assert _leader_assignment(PartitionLoadsMeasured({"t0": (10.0, 1.0, 9.0)})) == equal
