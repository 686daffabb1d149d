"""A consumer that still speaks the classic protocol, as the consumer-group simulator drives its
members (``sim/consumer_group.py``): the classic ``ConsumerCoordinator`` behind the interface of
the new consumer's ``ConsumerMembershipManager`` (state, epoch, owned partitions, listener
callbacks as outputs acknowledged by ``CallbacksCompleted``). This is how a rolling upgrade runs
classic and consumer-protocol members in one group.

Modelling choices (beyond the classic simulator's, ``sim/classic_side.py``):
- The application is inside ``poll()`` whenever the machine wants a poll (a rejoin), unless it
  is stuck (a ``stall``): the JoinGroup goes out at once, after listener callbacks already
  running. A stuck one rejoins when it polls again, and overruns ``max.poll.interval.ms`` as in
  the classic simulator (its heartbeat thread then leaves the group).
- OffsetCommit is the simulator's (before a revocation, and auto-commit ticks), sent as a classic
  OffsetCommit (a generation id); the machine's own commits are not sent twice.
- FindCoordinator (after NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE: the coordinator moved,
  or a request timed out) is ``ClassicFindCoordinator``, answered by the simulator at once with
  the broker that leads the group's partition (COORDINATOR_NOT_AVAILABLE while the new
  coordinator loads); it is never lost.
- On a lossy network the machine times its requests out itself (``request_timeout_ms``) and
  closes the connection (``ClassicDisconnect``), as in the classic simulator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import assert_never

from kafka_rebalance.protocol.classic import consumer_events as cc_events
from kafka_rebalance.protocol.classic.consumer import (
    ClassicMemberState,
    ConsumerConfig,
    ConsumerCoordinator,
    sorted_partitions,
)
from kafka_rebalance.protocol.classic.coordinator_events import (
    FindCoordinatorRequest,
    HeartbeatRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
)
from kafka_rebalance.protocol.effects import ArmTimer, CancelTimer
from kafka_rebalance.protocol.modern.consumer import coordinator_events as ce
from kafka_rebalance.protocol.modern.consumer import member_events as me
from kafka_rebalance.protocol.modern.consumer.assignment import Partitions, partitions
from kafka_rebalance.protocol.modern.consumer.member import ConsumerMemberState


@dataclass(frozen=True, slots=True)
class ClassicSend:
    """A classic member's request to the group coordinator."""

    request: ce.ClassicRequest


@dataclass(frozen=True, slots=True)
class ClassicFindCoordinator:
    """A classic member looks for its group's coordinator (FindCoordinator to any broker)."""


@dataclass(frozen=True, slots=True)
class ClassicDisconnect:
    """A classic member closed its connection to the coordinator (a request timed out)."""


# (PollReturned: the application's loop is stuck outside poll(), a ``stall``)
ClassicInput = (me.Input | cc_events.ConsumerTimer | cc_events.ResponseReceived | cc_events.MetadataUpdate
                | cc_events.PollReturned)
ClassicOutput = (ClassicSend | ClassicFindCoordinator | ClassicDisconnect | ArmTimer[cc_events.ConsumerTimer]
                 | CancelTimer[cc_events.ConsumerTimer] | me.CommitOffsets | me.PartitionsRevoked
                 | me.PartitionsAssigned | me.PartitionsLost | me.Fatal)


class ClassicMembership:
    """The classic consumer in the shape of ``ConsumerMembershipManager``."""

    def __init__(self, config: ConsumerConfig, topics: Mapping[str, int], coordinator_broker: int):
        self.cc = ConsumerCoordinator(config, dict(topics), coordinator_broker)
        self.heartbeat_interval_ms = config.heartbeat_interval_ms
        self.pending_callbacks = 0
        self.left = False
        self.fatal = False
        self.held: list[ClassicSend] = []  # requests the application thread sends once the listener returns

    @property
    def member_id(self) -> str:
        return self.cc.member_id

    @property
    def member_epoch(self) -> int:
        return self.cc.generation

    @property
    def owned(self) -> tuple[str, ...]:
        return tuple(sorted_partitions(self.cc.owned))

    @property
    def pending_revocation(self) -> tuple[str, ...]:
        return ()  # a classic consumer drops what it revokes from its assignment as it revokes it

    @property
    def assignment(self) -> Partitions:
        by_topic: dict[str, set[int]] = {}
        for partition in self.cc.owned:
            topic, _, number = partition.rpartition("-")
            by_topic.setdefault(topic, set()).add(int(number))
        return partitions(by_topic)

    @property
    def state(self) -> ConsumerMemberState:
        if self.fatal:
            return ConsumerMemberState.FATAL
        if self.left:
            return ConsumerMemberState.UNSUBSCRIBED
        match self.cc.state:
            case ClassicMemberState.STABLE:
                return ConsumerMemberState.STABLE
            case ClassicMemberState.UNJOINED:
                return ConsumerMemberState.JOINING
            case ClassicMemberState.PREPARING_REBALANCE | ClassicMemberState.COMPLETING_REBALANCE:
                return ConsumerMemberState.RECONCILING  # rejoining: a cooperative member keeps consuming
            case _:
                assert_never(self.cc.state)

    def handle(self, event: ClassicInput, now_ms: int) -> list[ClassicOutput]:
        out: list[ClassicOutput] = []
        match event:
            case me.Subscribe(topics=topics, regex=regex):
                self._run(cc_events.Subscribe(topics, regex), now_ms, out)
            case me.Poll():
                self._run(cc_events.Poll(), now_ms, out)
            case me.Unsubscribe():
                self._run(cc_events.Close(), now_ms, out)
                self.left = True
            case me.CallbacksCompleted():
                self.pending_callbacks -= 1
                if not self.pending_callbacks:
                    out.extend(self.held)
                    self.held = []
                    if self.cc.wants_poll and not self.left and self.cc.in_poll:
                        self._run(cc_events.Poll(), now_ms, out)
            case me.ResponseReceived(response=response):
                raise AssertionError(f"{response!r}: a classic member gets no ConsumerGroupHeartbeat answer")
            case me.RequestFailed() | me.HeartbeatDue() | me.PollTimerExpired():
                pass  # the new consumer's inputs; the classic machine has its own timers
            case (cc_events.ResponseReceived() | cc_events.MetadataUpdate() | cc_events.PollReturned() | cc_events.HeartbeatDue()
                  | cc_events.PollIntervalExpired()
                  | cc_events.RetryJoin() | cc_events.RetryFetch() | cc_events.RetryFindCoordinator()
                  | cc_events.RequestTimedOut()):
                self._run(event, now_ms, out)
            case _:
                assert_never(event)
        return out

    def _run(self, event: cc_events.ConsumerInput, now_ms: int, out: list[ClassicOutput]) -> None:
        callbacks = False
        timed_out = False  # the heartbeat thread left the group: max.poll.interval.ms ran out
        sends: list[ClassicSend] = []
        for _ in range(3):  # a poll that acts may leave another rejoin due (bounded)
            items = self.cc.handle(event, now_ms)
            # A poll timeout (the heartbeat thread leaves): Kafka's next poll() runs
            # onPartitionsLost with no commit (ConsumerCoordinator.onJoinPrepare, the generation
            # reset), where the machine reports a revocation.
            timed_out = timed_out or any(type(item) is cc_events.LeftGroup for item in items)
            for item in items:
                match item:
                    case cc_events.Send(request=request):
                        if isinstance(request, FindCoordinatorRequest):
                            out.append(ClassicFindCoordinator())
                            continue
                        if isinstance(request, OffsetCommitRequest):
                            continue
                        # (DescribeGroups, ListGroups, DeleteGroups are the admin client's, never a consumer's.)
                        assert isinstance(request, ce.ClassicRequest), f"{request!r} is not a consumer's request"
                        sends.append(ClassicSend(request))
                    case ArmTimer() | CancelTimer():
                        out.append(item)
                    case cc_events.PartitionsRevoked(partitions=revoked) if timed_out:
                        out.append(me.PartitionsLost(tuple(revoked)))
                        callbacks = True
                    case cc_events.PartitionsRevoked(partitions=revoked):
                        if revoked:
                            out.append(me.CommitOffsets(tuple(revoked)))
                        out.append(me.PartitionsRevoked(tuple(revoked)))
                        callbacks = True
                    case cc_events.PartitionsLost(partitions=lost):
                        out.append(me.PartitionsLost(tuple(lost)))
                        callbacks = True
                    case cc_events.PartitionsAssigned(partitions=assigned):
                        out.append(me.PartitionsAssigned(tuple(assigned)))
                        callbacks = True
                    case cc_events.Fatal(error_code=error):
                        self.fatal = True
                        out.append(me.Fatal(error, None))
                    case cc_events.LeftGroup():
                        pass  # out of the group until the loop polls again and rejoins (not a close)
                    case cc_events.CommittedOffsetsFetched():
                        pass  # positions come from the committed offsets when the callbacks end
                    case cc_events.Disconnect():
                        out.append(ClassicDisconnect())
                    case _:
                        assert_never(item)
            if callbacks or self.left or timed_out or self.fatal or not self.cc.wants_poll or not self.cc.in_poll:
                break
            event = cc_events.Poll()
        if callbacks or self.pending_callbacks:
            # The application thread is in the listener: what it sends next waits (JoinGroup after
            # an eager revocation, OffsetFetch after an assignment, LeaveGroup after close's
            # revocation); the heartbeat thread's requests do not (its heartbeats, and the
            # LeaveGroup it sends when the poll interval runs out).
            def from_heartbeat_thread(send: ClassicSend) -> bool:
                return isinstance(send.request, HeartbeatRequest) or (
                    timed_out and isinstance(send.request, LeaveGroupRequest))

            self.held.extend(s for s in sends if not from_heartbeat_thread(s))
            out.extend(s for s in sends if from_heartbeat_thread(s))
        else:
            out.extend(sends)
        if callbacks:
            self.pending_callbacks += 1
