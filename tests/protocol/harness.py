"""A tiny driver for the classic GroupCoordinator in tests: requests in, responses by
connection, log records, and the coordinator's timers fired in deadline order (arming a timer
again replaces its deadline, as the simulator does)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_rebalance.protocol.classic.coordinator import GroupCoordinator
from kafka_rebalance.protocol.classic.coordinator_events import (
    CONSUMER_PROTOCOL_TYPE,
    ConsumerProtocolSubscription,
    CoordinatorInput,
    CoordinatorOutput,
    CoordinatorTimer,
    GroupRequest,
    GroupResponse,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    PartitionOffset,
    Persist,
    PersistedRecord,
    RequestReceived,
    Respond,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)
from kafka_rebalance.protocol.classic.group import CoordinatorConfig, GroupState
from kafka_rebalance.protocol.effects import ArmTimer, CancelTimer, Log
from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.logrecords import LogRecord

GROUP = "g"


def protocols(topics=("t0",), names=("range",), owned=()) -> tuple[JoinGroupRequestProtocol, ...]:
    subscription = ConsumerProtocolSubscription(tuple(topics), None, tuple(owned))
    return tuple(JoinGroupRequestProtocol(name, subscription) for name in names)


def join_request(member_id="", *, instance=None, session=10000, rebalance=20000, topics=("t0",), names=("range",),
                 owned=(), protocol_type=CONSUMER_PROTOCOL_TYPE, reason=None, group=GROUP, client="consumer",
                 protocol_list=None) -> JoinGroupRequest:
    return JoinGroupRequest(group, session, rebalance, member_id, instance, protocol_type,
                            protocols(topics, names, owned) if protocol_list is None else protocol_list, reason, client)


@dataclass
class Step:
    """What one input produced."""

    outputs: list[CoordinatorOutput]

    @property
    def responses(self) -> dict[str, GroupResponse]:
        return {o.connection: o.response for o in self.outputs if isinstance(o, Respond)}

    @property
    def logs(self) -> list[LogRecord]:
        return [o.record for o in self.outputs if isinstance(o, Log)]

    @property
    def kinds(self) -> list[str]:
        return [r.KIND for r in self.logs]

    @property
    def persisted(self) -> list[PersistedRecord]:
        return [o.record for o in self.outputs if isinstance(o, Persist)]


@dataclass
class Broker:
    coordinator: GroupCoordinator = field(default_factory=GroupCoordinator)
    now: int = 0
    timers: dict[CoordinatorTimer, int] = field(default_factory=dict)
    log: list[LogRecord] = field(default_factory=list)
    persisted: list[PersistedRecord] = field(default_factory=list)

    @classmethod
    def with_config(cls, **config) -> Broker:
        return cls(GroupCoordinator(CoordinatorConfig(**config)))

    @property
    def group(self):
        return self.coordinator.group(GROUP)

    @property
    def state(self) -> GroupState | None:
        group = self.group
        return group.state if group is not None else None

    def _apply(self, outputs: list[CoordinatorOutput]) -> Step:
        for output in outputs:
            if isinstance(output, ArmTimer):
                self.timers[output.timer] = output.deadline_ms
            elif isinstance(output, CancelTimer):
                self.timers.pop(output.timer, None)
            elif isinstance(output, Log):
                self.log.append(output.record)
            elif isinstance(output, Persist):
                self.persisted.append(output.record)
        return Step(outputs)

    def handle(self, event: CoordinatorInput, at: int | None = None) -> Step:
        if at is not None:
            self.advance(at)
        return self._apply(self.coordinator.handle(event, self.now))

    def send(self, connection: str, request: GroupRequest, at: int | None = None) -> Step:
        return self.handle(RequestReceived(connection, request), at)

    def advance(self, until: int) -> list[Step]:
        """Fire every timer due up to ``until``, in deadline order."""
        fired = []
        while self.timers:
            timer, deadline = min(self.timers.items(), key=lambda item: item[1])
            if deadline > until:
                break
            del self.timers[timer]
            self.now = max(self.now, deadline)
            fired.append(self._apply(self.coordinator.handle(timer, self.now)))
        self.now = max(self.now, until)
        return fired

    def keep_alive(self, members: dict[str, str], until: int, every: int = 3000) -> list[Step]:
        """Advance to ``until`` while ``members`` (connection -> member id) heartbeat every ``every`` ms."""
        fired = []
        while self.now + every <= until:
            fired += self.advance(self.now + every)
            for connection, member_id in members.items():
                self.heartbeat(connection, member_id)
        fired += self.advance(until)
        return fired

    # ---------------------------------------------------------------- common conversations

    def join(self, connection: str, member_id: str = "", at: int | None = None, **kwargs) -> Step:
        return self.send(connection, join_request(member_id, **kwargs), at)

    def join_new(self, connection: str, at: int | None = None, **kwargs) -> str:
        """KIP-394: learn a member id (MEMBER_ID_REQUIRED), join with it; returns the id."""
        first = self.join(connection, at=at, **kwargs).responses[connection]
        assert isinstance(first, JoinGroupResponse)
        if first.error_code is ErrorCode.MEMBER_ID_REQUIRED:
            self.join(connection, first.member_id, **kwargs)
            return first.member_id
        return first.member_id

    def heartbeat(self, connection: str, member_id: str, generation: int | None = None, instance=None,
                  at: int | None = None) -> ErrorCode:
        group = self.group
        generation = group.generation if generation is None and group is not None else generation
        step = self.send(connection, HeartbeatRequest(GROUP, generation if generation is not None else -1, member_id,
                                                      instance), at)
        return step.responses[connection].error_code

    def sync(self, connection: str, member_id: str, generation: int | None = None, assignments=None, instance=None,
             at: int | None = None) -> Step:
        generation = self.group.generation if generation is None else generation
        assignment = tuple(SyncGroupRequestAssignment(m, tuple(p)) for m, p in (assignments or {}).items())
        return self.send(connection, SyncGroupRequest(GROUP, generation, member_id, instance, None, None, assignment), at)

    def leave(self, connection: str, *members: MemberIdentity, at: int | None = None) -> Step:
        return self.send(connection, LeaveGroupRequest(GROUP, members), at)

    def commit(self, connection: str, member_id: str, generation: int, offsets: dict[str, int], instance=None,
               at: int | None = None) -> ErrorCode:
        request = OffsetCommitRequest(GROUP, generation, member_id, instance,
                                      tuple(PartitionOffset(p, o) for p, o in offsets.items()))
        return self.send(connection, request, at).responses[connection].error_code


def stable_group(n: int = 2, **join_kwargs) -> tuple[Broker, dict[str, str]]:
    """``n`` dynamic members c0..c{n-1} joined at 0, leader's assignment synced: the group is Stable."""
    broker = Broker()
    ids = {f"c{i}": broker.join_new(f"c{i}", at=0, **join_kwargs) for i in range(n)}
    for _ in range(30):  # the initial delay may be extended by each join
        if broker.state is GroupState.COMPLETING_REBALANCE:
            break
        broker.advance(broker.now + 500)
    assert broker.state is GroupState.COMPLETING_REBALANCE
    leader = broker.group.leader
    assignments = {mid: (f"t0-{k}",) for k, mid in enumerate(ids.values())}
    for conn, mid in ids.items():
        broker.sync(conn, mid, assignments=assignments if mid == leader else None)
    assert broker.state is GroupState.STABLE
    return broker, ids
