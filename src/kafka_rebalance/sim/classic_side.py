"""The classic group side of the simulator (``ClassicGroupSide``, on the driver of
``sim.driver``): one classic GroupCoordinator per broker and one ConsumerCoordinator per consumer
process, wired by a network with latency, on the driver's virtual clock and queue of typed events
(``sim.events``). The machines are driven only through their ``handle`` entry points; the
simulator plays the application (poll loop, record processing), the network and the cluster
(FindCoordinator, partition leadership of ``__consumer_offsets``).

Modelling choices (Kafka leaves these to the deployment; all deterministic for a seed):
- Every request and response takes ``network_latency_ms`` (+ a seeded jitter) one way.
  Heartbeat responses without error are not delivered as events: the client does nothing
  with them, and they are half of all messages (on a lossy network they are: the client times
  out requests it had no answer to).
- ``network_loss``: each request and each response (FindCoordinator's too) is lost on its own
  with this chance, drawn from a random stream of the seed that nothing else uses (until
  ``network_loss_until_ms``). A lost request never reaches the broker; a lost response was
  handled by the broker (a JoinGroup that got its member id) and never reaches the client.
  Consumers then time requests out after ``request_timeout_ms`` and close the connection
  (``Disconnect``): responses still on their way over the closed connection are dropped, and
  the consumer's next requests go over a new one.
- FindCoordinator is answered by any broker: the current leader of the group's
  ``__consumer_offsets`` partition. A consumer starts knowing its coordinator (its bootstrap
  found it before the scenario's join).
- The application loop. A consumer with ``processing_ms_per_record: 0`` is always inside
  ``poll()`` and consumes continuously: its positions follow the log-end offsets while it
  owns a partition and is not paused or stalled. A consumer with a processing cost takes
  batches of up to ``max_poll_records`` and is out of ``poll()`` while it processes one; a
  caught-up one polls again every ``idle_poll_ms``.
- Auto-commit of continuously consuming consumers is evaluated lazily: the commit of the last
  ``auto_commit_interval_ms`` tick (with the positions at the tick) is handed to the consumer
  as ``AutoCommitDue`` whenever its state changes and at the end; the request it sends left at
  the tick and arrives ``latency`` later (at once if that moment has passed).
- A partition with no committed offset starts at 0 (auto.offset.reset=earliest), so no
  record is ever skipped.
- Ownership (the ``ownership`` intervals): a member owns a partition from the moment it has
  its committed offset (after onPartitionsAssigned and OffsetFetch) until it revokes or loses
  it, crashes, or the coordinator removes it from the group, whichever comes first.
- Held partitions (``held``, each consumer's own view): a process holds a partition from its
  onPartitionsAssigned (or the SyncGroup assignment it adopts) until its revocation listener
  returns, its onPartitionsLost, or its end. The hold is *fenced* from the moment the group
  moves on without the process (the coordinator removes its member id, or a generation forms
  without it), and unfenced if a new coordinator loads a stored group that still has it.
- Coordinator failover: the leadership of the group's ``__consumer_offsets`` partition moves
  to the next broker at once; the old one resigns (waiting JoinGroup/SyncGroup requests get
  NOT_COORDINATOR), the new one loads the partition's records for ``coordinator_load_ms``
  (COORDINATOR_LOAD_IN_PROGRESS meanwhile) and then serves the group as it was stored.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import assert_never

from kafka_rebalance.model import GroupProtocol, RebalanceProtocol
from kafka_rebalance.protocol.classic.consumer import (
    ClassicMemberState,
    ConsumerConfig,
    ConsumerCoordinator,
)
from kafka_rebalance.protocol.classic.consumer_events import (
    AutoCommitDue,
    Close,
    CommittedOffsetsFetched,
    ConsumerInput,
    ConsumerOutput,
    ConsumerTimer,
    Disconnect,
    Fatal,
    LeftGroup,
    MetadataUpdate,
    PartitionLoadsMeasured,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Poll,
    PollReturned,
    ResponseReceived,
    Send,
    Subscribe,
)
from kafka_rebalance.protocol.classic.coordinator import GroupCoordinator
from kafka_rebalance.protocol.classic.coordinator_events import (
    BeginLoading,
    CoordinatorInput,
    CoordinatorOutput,
    CoordinatorTimer,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    GroupResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LoadCompleted,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    PartitionOffset,
    Persist,
    PersistedRecord,
    RequestReceived,
    Resign,
    Respond,
)
from kafka_rebalance.protocol.classic.group import CoordinatorConfig, coordinator_partition
from kafka_rebalance.protocol.effects import ArmTimer, CancelTimer, Log
from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.logrecords import (
    ConsumerGroupRecord,
    LogRecord,
    MemberFailed,
    MemberLeft,
    Stabilized,
)
from kafka_rebalance.sim.driver import AppProcess, ClassicRebalanceLog, Driver
from kafka_rebalance.sim.events import (
    AppActivity,
    AppWakes,
    ConsumerTimerFires,
    CoordinatorLoaded,
    CoordinatorTimerFires,
    DeferrableEvent,
    FindCoordinatorArrives,
    MetadataRefresh,
    ProcessResumes,
    ProcessStarts,
    RequestArrives,
    ResponseArrives,
    ScenarioStep,
    SimEvent,
)
from kafka_rebalance.sim.result import (
    NOT_FENCED,
    LoggedRecord,
    SimulationResult,
)
from kafka_rebalance.sim.scenario import Scenario
from kafka_rebalance.sim.scenario_events import ProtocolSwitch, SubscriptionChanged, TopicsGrown


@dataclass(slots=True, kw_only=True)
class ClassicProcess(AppProcess[DeferrableEvent]):
    """One run of a classic consumer process (a restart is a new ClassicProcess with the same name)."""

    cc: ConsumerCoordinator
    timer_events: dict[ConsumerTimer, ConsumerTimerFires] = field(default_factory=dict)
    last_timer: ConsumerTimer | None = None  # the heartbeat thread's timer, and its entry of timer_events
    last_fires: ConsumerTimerFires | None = None
    last_send: Send | None = None
    request_arrival_ms: int = 0  # when this connection's last request arrives
    listener_busy_until_ms: int = 0  # the application thread runs rebalance-listener work until then
    last_arrives: RequestArrives | None = None

    @property
    def flowing(self) -> bool:
        return self.alive and self.continuous and not self.paused and not self.stalled and self.cc.fatal is None

    @property
    def generation(self) -> int:
        return self.cc.generation

    @property
    def member_id(self) -> str:
        return self.cc.member_id

    @property
    def classic_member(self) -> tuple[str, int] | None:
        return self.cc.member_id, self.cc.generation

    @property
    def rebalance_protocol(self) -> RebalanceProtocol | None:
        return self.cc.protocol

    def position_view(self) -> Mapping[str, int]:
        return MappingProxyType(self.positions)


class ClassicGroupSide(Driver[ClassicProcess, SimEvent, DeferrableEvent]):
    def __init__(self, scenario: Scenario, seed: int | None = None):
        super().__init__(scenario, seed)
        self.armed: dict[SimEvent, int] = {}  # timer event -> the sequence number of its live queue entry
        self.coordinator_timer_events: dict[int, dict[CoordinatorTimer, CoordinatorTimerFires]] = {}
        self.offsets_partition = coordinator_partition(scenario.group, self.cfg.offsets_topic_num_partitions)
        self.leader_broker = self.offsets_partition % self.cfg.brokers
        self.leader_epoch = 0  # leadership moves of the group's __consumer_offsets partition so far
        self.brokers: dict[int, GroupCoordinator] = {}
        self.brokers[self.leader_broker] = self._new_coordinator(self.leader_broker, loaded=True)
        self.offsets_log: list[PersistedRecord] = []  # the group's __consumer_offsets partition
        self.response_arrival_ms: dict[str, int] = {}  # connection -> when its last response arrives
        self.assigned_to: dict[str, str] = {}

    # ------------------------------------------------------------------ set-up helpers

    def _new_coordinator(self, broker_id: int, loaded: bool) -> GroupCoordinator:
        cfg = self.cfg
        config = CoordinatorConfig(
            group_initial_rebalance_delay_ms=cfg.group_initial_rebalance_delay_ms,
            group_min_session_timeout_ms=cfg.group_min_session_timeout_ms,
            group_max_session_timeout_ms=cfg.group_max_session_timeout_ms,
            offsets_topic_num_partitions=cfg.offsets_topic_num_partitions,
            broker_id=broker_id,
        )
        return GroupCoordinator(config, self.rng.getrandbits(32), [self.offsets_partition] if loaded else [])

    # ------------------------------------------------------------------ main loop

    def _handle(self, time: int, seq: int, event: SimEvent) -> None:
        # The two most frequent events (heartbeats) go straight to their handlers.
        if type(event) is RequestArrives:
            self.now = time
            self._deliver_request(event.broker_id, event.received)
            return
        if type(event) is ConsumerTimerFires or type(event) is CoordinatorTimerFires:
            armed = self.armed
            if armed.get(event) != seq:
                return  # cancelled or re-armed since
            del armed[event]
        self.now = time
        if type(event) is ConsumerTimerFires:
            proc = self._running(event.connection, event)
            if proc is None:
                return
            outputs = proc.cc.handle(event.timer, time)
            if outputs:
                self._consumer_outputs(proc, outputs)
            self._maybe_poll(proc)
        else:
            self._dispatch(event)

    def _dispatch(self, event: SimEvent) -> None:
        match event:
            case RequestArrives(broker_id=broker_id, received=received):
                self._deliver_request(broker_id, received)
            case FindCoordinatorArrives(connection=connection):
                if not (self.lossy and self._lost()):
                    self._push(self.now + self._latency(),
                               ResponseArrives(connection, FindCoordinatorResponse(ErrorCode.NONE, self.leader_broker)))
            case ConsumerTimerFires(connection=connection, timer=timer):
                proc = self._running(connection, event)
                if proc is not None:
                    self._to_consumer(proc, timer)
                    self._maybe_poll(proc)
            case ResponseArrives(connection=connection, response=response):
                proc = self._running(connection, event)
                if proc is not None and connection == proc.wire:  # else its connection was closed
                    self._deliver_response(proc, response)
            case CoordinatorTimerFires(broker_id=broker_id, timer=timer):
                self._to_coordinator(broker_id, timer)
            case ScenarioStep() | AppWakes() | MetadataRefresh() | ProcessStarts() | ProcessResumes():
                self._core_event(event)
            case CoordinatorLoaded(broker_id=broker_id, partition=partition, leader_epoch=epoch):
                # Only the load of the current leadership completes. A broker that led the
                # partition before (A -> B -> A) has an older load still running; finishing it
                # would end the new load early, and its second LoadCompleted would rebuild the
                # group from the log over the live group, dropping waiting JoinGroup requests
                # (Kafka skips a load whose coordinator epoch is stale:
                # GroupMetadataManager.scheduleLoadGroupAndOffsets / maybeUpdateCoordinatorEpoch).
                if broker_id == self.leader_broker and epoch == self.leader_epoch:
                    self._to_coordinator(broker_id, LoadCompleted(partition, tuple(self.offsets_log)))
                    self._unfence_stored(self.offsets_log)
            case _:
                assert_never(event)

    # ------------------------------------------------------------------ network and machines

    def _send(self, proc: ClassicProcess, send: Send, sent_ms: int | None = None) -> None:
        now = self.now
        arrives = proc.last_arrives
        request = send.request
        if proc.listener_busy_until_ms > now and type(request) is not HeartbeatRequest:
            # Sent from the application thread, which is still inside the rebalance listener
            # (the heartbeat thread is not held up).
            sent_ms = proc.listener_busy_until_ms
        # A connection delivers in order (TCP): never before the request sent ahead of it.
        ahead_arrives_ms = proc.request_arrival_ms
        arrival = max((now if sent_ms is None else sent_ms) + self._latency(), ahead_arrives_ms)
        proc.request_arrival_ms = arrival
        if type(request) is JoinGroupRequest:
            for topic in request.protocols[0].metadata.topics:
                self.topic_wanted.setdefault(topic, now)
        if self.lossy and self._lost():
            return
        if isinstance(request, FindCoordinatorRequest):
            self._push(arrival, FindCoordinatorArrives(proc.wire, request))
            return
        if send is not proc.last_send or arrives is None:  # else: the same immutable request again (heartbeats)
            arrives = RequestArrives(send.node_id, RequestReceived(proc.wire, request))
            proc.last_send, proc.last_arrives = send, arrives
        if arrival <= now and sent_ms is not None and ahead_arrives_ms < now:
            # Sent in the past (a summarised auto-commit): it has arrived by now. (A request ahead
            # of it that arrives at this very instant is still queued: it goes behind that one.)
            self._deliver_request(arrives.broker_id, arrives.received)
        else:
            self._push(arrival, arrives)

    def _deliver_request(self, broker_id: int, received: RequestReceived) -> None:
        coordinator = self.brokers.get(broker_id)
        if coordinator is None:
            coordinator = self.brokers[broker_id] = self._new_coordinator(broker_id, loaded=False)
        request = received.request
        if type(request) is HeartbeatRequest:
            outputs = coordinator.handle(received, self.now)
            if len(outputs) == 1 and not self.lossy:
                only = outputs[0]
                if (type(only) is Respond and type(only.response) is HeartbeatResponse
                        and only.response.error_code is ErrorCode.NONE):
                    return  # an OK heartbeat answer: the client does nothing with it
            self._coordinator_outputs(broker_id, outputs)
            return
        if type(request) is OffsetFetchRequest:
            # Whoever held these partitions has committed by now what a real consumer would have.
            holders = {self.assigned_to.get(partition) for partition in request.partitions}
            for holder in sorted(h for h in holders if h is not None and h in self.processes):
                self._checkpoint(self.processes[holder])
        outputs = coordinator.handle(received, self.now)
        if type(request) is OffsetCommitRequest:
            self._commit_answered(received.connection, request, outputs)
        self._coordinator_outputs(broker_id, outputs)

    def _commit_answered(self, connection: str, request: OffsetCommitRequest, outputs: list[CoordinatorOutput]) -> None:
        error = ErrorCode.UNKNOWN_SERVER_ERROR
        for output in outputs:
            if type(output) is Respond and output.connection == connection:
                assert type(output.response) is OffsetCommitResponse
                error = output.response.error_code
                break
        proc = self.connections.get(connection)
        self._record_commit(proc.name if proc is not None else connection, proc.incarnation if proc is not None else 0,
                            request.generation_id,
                            ((entry.partition, entry.offset) for entry in request.offsets), error)

    def _to_coordinator(self, broker_id: int, event: CoordinatorInput) -> None:
        coordinator = self.brokers.get(broker_id)
        if coordinator is not None:
            self._coordinator_outputs(broker_id, coordinator.handle(event, self.now))

    def _coordinator_outputs(self, broker_id: int, outputs: list[CoordinatorOutput]) -> None:
        if len(outputs) == 1 and not self.lossy:
            only = outputs[0]
            if type(only) is Respond:
                response = only.response
                if type(response) is HeartbeatResponse and response.error_code is ErrorCode.NONE:
                    return  # an OK heartbeat answer: the client does nothing with it
                if type(response) is not JoinGroupResponse:  # (a member id to note: the full path)
                    self._respond(only.connection, response)  # a lone answer (a commit's, a sync's)
                    return
        # A member id is its consumer's from the moment the coordinator hands it out: the
        # rebalance it joins may complete (and be recorded) before the response arrives.
        for output in outputs:
            if type(output) is Respond and type(output.response) is JoinGroupResponse and output.response.member_id:
                proc = self.connections.get(output.connection)
                if proc is not None:
                    self.member_names[output.response.member_id] = proc.name
                    if output.response.error_code is ErrorCode.NONE:
                        # In the group's current generation (possibly a static member let back
                        # into it after the join phase): what it is given from now is its own.
                        proc.fenced_ms = NOT_FENCED
        # Log records first, then responses, then timers: the order the machines' effects land.
        for output in outputs:
            match output:
                case Log(record=record):
                    if type(record) is Stabilized:
                        self._fence_absent(record.generation, outputs)
                    self._on_log(record, broker_id)
                case Persist(record=record):
                    self.offsets_log.append(record)
                case Respond() | ArmTimer() | CancelTimer():
                    pass
                case _:
                    assert_never(output)
        for output in outputs:
            if type(output) is Respond:
                response = output.response
                if self.lossy:
                    if self._lost():
                        continue
                elif type(response) is HeartbeatResponse and response.error_code is ErrorCode.NONE:
                    continue
                self._respond(output.connection, response)
        cache = self.coordinator_timer_events.setdefault(broker_id, {})
        for output in outputs:
            if type(output) is ArmTimer or type(output) is CancelTimer:
                fires = cache.get(output.timer)
                if fires is None:
                    fires = cache[output.timer] = CoordinatorTimerFires(broker_id, output.timer)
                if type(output) is ArmTimer:
                    self.armed[fires] = self._push(output.deadline_ms, fires)
                else:
                    self.armed.pop(fires, None)

    def _respond(self, connection: str, response: GroupResponse) -> None:
        # In order per connection, as the request arrivals are.
        self._push(self._in_order_arrival(self.response_arrival_ms, connection), ResponseArrives(connection, response))

    def _deliver_response(self, proc: ClassicProcess, response: GroupResponse | FindCoordinatorResponse) -> None:
        if type(response) is JoinGroupResponse and response.member_id:
            self.member_names[response.member_id] = proc.name
            if response.leader == response.member_id and not response.skip_assignment:
                loads = self._measured_loads(proc)  # the leader measures what it is about to assign
                if loads is not None:
                    self._to_consumer(proc, PartitionLoadsMeasured(loads))
        self._to_consumer(proc, ResponseReceived(response))
        self._maybe_poll(proc)

    def _to_consumer(self, proc: ClassicProcess, event: ConsumerInput, sent_ms: int | None = None) -> None:
        outputs = proc.cc.handle(event, self.now)
        if outputs:
            self._consumer_outputs(proc, outputs, sent_ms)

    def _consumer_outputs(self, proc: ClassicProcess, outputs: list[ConsumerOutput], sent_ms: int | None = None) -> None:
        if len(outputs) == 2:  # the heartbeat thread's request and its next turn
            first, second = outputs
            if type(first) is Send and type(second) is ArmTimer:
                heap = self.heap
                arrives = proc.last_arrives
                if (first is proc.last_send and arrives is not None and sent_ms is None and not self.lossy
                        and type(first.request) is HeartbeatRequest):
                    # The same immutable heartbeat again (what ``_send`` does, only the arrival is new).
                    arrival = self.now + (self.latency_ms if not self.jitter_ms else self._latency())
                    if arrival < proc.request_arrival_ms:
                        arrival = proc.request_arrival_ms
                    proc.request_arrival_ms = arrival
                    self.seq += 1
                    heapq.heappush(heap, (arrival, self.seq, arrives))
                else:
                    self._send(proc, first, sent_ms)
                timer = second.timer
                fires = proc.last_fires
                if timer is not proc.last_timer or fires is None:  # else: the same timer object, not hashed again
                    fires = proc.timer_events.get(timer)
                    if fires is None:
                        fires = proc.timer_events[timer] = ConsumerTimerFires(proc.connection, timer)
                    proc.last_timer, proc.last_fires = timer, fires
                self.seq += 1
                heapq.heappush(heap, (second.deadline_ms, self.seq, fires))
                self.armed[fires] = self.seq
                return
        # Listener callbacks first, then requests, then timers.
        for output in outputs:
            kind = type(output)
            if kind is Send or kind is ArmTimer or kind is CancelTimer:
                continue
            match output:
                case PartitionsRevoked(partitions=partitions) | PartitionsLost(partitions=partitions):
                    self._revoked(proc, partitions)
                    if partitions and kind is PartitionsRevoked:
                        self._listener_work(proc, self.cfg.revocation_ms)
                    # It owns them until its listener returns (the callback may still commit).
                    self._release(proc, partitions, max(self.now, proc.listener_busy_until_ms))
                case PartitionsAssigned(partitions=partitions):
                    self._hold(proc, partitions, proc.cc.owned)
                    self._assigned(proc, partitions)
                    if partitions:
                        self._listener_work(proc, self.cfg.assignment_ms)
                case CommittedOffsetsFetched(offsets=offsets):
                    self._positions_fetched(proc, offsets)
                case Fatal():
                    self._checkpoint(proc)
                    proc.positions.clear()
                case LeftGroup():
                    pass
                case Disconnect():
                    self._reconnect(proc)
                    proc.last_send = proc.last_arrives = None
                case Send() | ArmTimer() | CancelTimer():
                    pass
                case _:
                    assert_never(output)
        for output in outputs:
            if type(output) is Send:
                self._send(proc, output, sent_ms)
        for output in outputs:
            if type(output) is ArmTimer or type(output) is CancelTimer:
                fires = proc.timer_events.get(output.timer)
                if fires is None:
                    fires = proc.timer_events[output.timer] = ConsumerTimerFires(proc.connection, output.timer)
                if type(output) is ArmTimer:
                    self.armed[fires] = self._push(output.deadline_ms, fires)
                else:
                    self.armed.pop(fires, None)

    def _listener_work(self, proc: ClassicProcess, work_ms: int) -> None:
        """``revocation_ms`` / ``assignment_ms``: the application thread's requests (JoinGroup,
        OffsetFetch, ...) wait for the listener to return, as in the consumer-group simulator."""
        if work_ms:
            proc.listener_busy_until_ms = max(proc.listener_busy_until_ms, self.now) + work_ms

    # ------------------------------------------------------------------ consumer processes

    def _new_process(self, name: str) -> ClassicProcess:
        spec = self.consumer_specs[name]
        cfg = self.cfg
        incarnation, connection = self._new_incarnation(name)
        config = ConsumerConfig(
            client_id=spec.client_id or name,
            group_id=self.scenario.group,
            strategies=tuple(spec.strategies),
            topics=tuple(spec.subscribe or ()),
            pattern=spec.pattern,
            group_instance_id=spec.group_instance_id,
            session_timeout_ms=spec.setting(cfg, "session_timeout_ms"),
            heartbeat_interval_ms=spec.setting(cfg, "heartbeat_interval_ms"),
            max_poll_interval_ms=spec.setting(cfg, "max_poll_interval_ms"),
            enable_auto_commit=spec.setting(cfg, "enable_auto_commit"),
            auto_commit_interval_ms=spec.setting(cfg, "auto_commit_interval_ms"),
            background_heartbeat=not spec.setting(cfg, "heartbeat_with_poll"),
            # Without loss every request is answered: no timeout to arm.
            request_timeout_ms=cfg.request_timeout_ms if self.lossy else None,
            strategy_options=spec.strategy_options,
        )
        cc = ConsumerCoordinator(config, self.topics, self.leader_broker)
        return ClassicProcess(name=name, spec=spec, connection=connection, wire=connection, cc=cc,
                       ms_per_record=spec.processing_ms_per_record,
                       max_poll_records=spec.setting(cfg, "max_poll_records"), mark_ms=self.now,
                       incarnation=incarnation)

    def _started(self, proc: ClassicProcess) -> None:
        pass

    def _refreshes_metadata(self, proc: ClassicProcess) -> bool:
        return True

    def _metadata_refreshed(self, proc: ClassicProcess) -> None:
        self._to_consumer(proc, MetadataUpdate(dict(self.topics)))
        self._maybe_poll(proc)

    def _checkpoint(self, proc: ClassicProcess) -> None:
        """Before a process's consumption state changes: apply its due auto-commit tick, then sync."""
        self._flush_auto_commits(proc)
        self._sync(proc)
        proc.mark_ms = self.now

    def _flush_auto_commits(self, proc: ClassicProcess) -> None:
        cc = proc.cc
        if not (proc.flowing and cc.config.enable_auto_commit and cc.state is ClassicMemberState.STABLE and proc.positions):
            return
        due = cc.next_auto_commit_ms
        if self.now < due:
            return
        interval = cc.config.auto_commit_interval_ms
        tick = due + (self.now - due) // interval * interval
        if tick < proc.mark_ms:
            self._to_consumer(proc, AutoCommitDue(tick, {}))  # nothing consumed since the last commit
            return
        positions = proc.positions
        self._to_consumer(proc, AutoCommitDue(tick, dict(zip(positions, self.traffic.leo_many(positions, tick),
                                                                 strict=True))), sent_ms=tick)

    def _revoked(self, proc: ClassicProcess, partitions: Iterable[str]) -> None:
        self._checkpoint(proc)
        for partition in partitions:
            proc.positions.pop(partition, None)
            self._end_ownership(partition, proc.name)
            if self.assigned_to.get(partition) == proc.name:
                del self.assigned_to[partition]

    def _assigned(self, proc: ClassicProcess, partitions: Iterable[str]) -> None:
        for partition in partitions:
            holder = self.assigned_to.get(partition)
            if holder is not None and holder != proc.name:
                self.ownership_conflicts += 1
            self.assigned_to[partition] = proc.name

    def _positions_fetched(self, proc: ClassicProcess, offsets: Iterable[PartitionOffset]) -> None:
        self._checkpoint(proc)
        owned = proc.cc.owned
        for entry in offsets:
            partition = entry.partition
            if partition in owned and partition not in proc.positions:
                proc.positions[partition] = max(entry.offset, 0)
                # Owned as of the generation whose assignment gave it (a SyncGroup that failed
                # since, its committed offset still being fetched, leaves the JoinGroup's newer).
                self._own(partition, proc.name, proc.cc.assignment_generation)

    def _drop_process_ownership(self, proc: ClassicProcess) -> None:
        for partition in list(proc.positions):
            self._end_ownership(partition, proc.name)
        for partition in proc.cc.owned:
            if self.assigned_to.get(partition) == proc.name:
                del self.assigned_to[partition]

    def _maybe_poll(self, proc: ClassicProcess) -> None:
        """A process inside poll() acts on a pending rejoin (or an old client's due heartbeat) at once."""
        cc = proc.cc
        if not proc.alive or proc.paused or not cc.in_poll:
            return
        if cc.wants_poll or (proc.ms_per_record != 0 and not proc.batch and cc.state is ClassicMemberState.STABLE
                             and bool(proc.positions)):
            self._app_poll(proc)

    def _app_poll(self, proc: ClassicProcess) -> None:
        cc = proc.cc
        if not proc.alive or proc.paused or proc.stalled:
            return
        if proc.continuous:
            self._checkpoint(proc)
        self._to_consumer(proc, Poll(proc.position_view()))
        if proc.continuous or not proc.alive:
            return
        if cc.state is not ClassicMemberState.STABLE or cc.rejoin_needed or not proc.positions:
            return  # still (re)joining: poll() keeps running until the group is stable
        self._take_batch(proc)

    def _batch_taken(self, proc: ClassicProcess) -> None:
        self._to_consumer(proc, PollReturned())

    def _app_event(self, proc: ClassicProcess, activity: AppActivity) -> None:
        if activity is AppActivity.BATCH_DONE:
            for partition, start, end in proc.batch:
                self._processed(proc, partition, start, end, proc.batch_start)
            proc.batch = []
        self._app_poll(proc)

    def _deferred_event(self, proc: ClassicProcess, event: DeferrableEvent) -> None:
        if isinstance(event, ConsumerTimerFires):
            self._to_consumer(proc, event.timer)
        elif event.connection == proc.wire:  # else its connection was closed meanwhile
            self._deliver_response(proc, event.response)

    def _resumed_from_pause(self, proc: ClassicProcess) -> None:
        self._replay_deferred(proc)
        if proc.continuous or (not proc.stalled and not proc.batch and not proc.cc.in_poll):
            # (A stall that ended during the pause could not restart the loop then.)
            self._app_poll(proc)
        else:
            self._maybe_poll(proc)

    def _resumed_from_stall(self, proc: ClassicProcess) -> None:
        self._app_poll(proc)

    # ------------------------------------------------------------------ scenario events (the driver dispatches them)

    def _stop_process(self, proc: ClassicProcess) -> None:
        self._checkpoint(proc)
        if proc.batch:
            self._finish_batch_partially(proc, rewind=True)
        self._to_consumer(proc, Close(proc.position_view()))
        self._drop_process_ownership(proc)
        self._release(proc, list(proc.held))
        proc.alive = False

    def _crash_process(self, proc: ClassicProcess) -> None:
        self._checkpoint(proc)
        self._finish_batch_partially(proc, rewind=False)
        self._drop_process_ownership(proc)
        self._release(proc, list(proc.held))
        proc.alive = False

    def _stalled(self, proc: ClassicProcess) -> None:
        self._to_consumer(proc, PollReturned())  # the loop left poll() now and is stuck

    def _polled_until_interrupted(self, proc: ClassicProcess) -> None:
        pass  # a classic consumer inside poll() stays there: its poll timer renews when it fires

    def _topics_grown(self, event: TopicsGrown) -> None:
        pass  # consumers see it at their next metadata refresh

    def _subscribe(self, proc: ClassicProcess, change: SubscriptionChanged) -> None:
        self._to_consumer(proc, MetadataUpdate(dict(self.topics)))
        self._to_consumer(proc, Subscribe(change.topics or (), change.pattern))
        self._maybe_poll(proc)

    def _switch_protocol(self, event: ProtocolSwitch) -> None:
        # A scenario with an upgrade runs on the consumer-group side (``Scenario.uses_consumer_protocol``),
        # and one that never upgrades has no consumer to downgrade (``Scenario`` checks).
        raise AssertionError(f"a classic group's scenario has no upgrade or downgrade: {event!r}")

    def _coordinator_fails_over(self) -> None:
        """The leadership of the group's __consumer_offsets partition moves to the next broker."""
        old = self.leader_broker
        new = (old + 1) % self.cfg.brokers
        if new == old:
            return
        self.leader_broker = new
        self.leader_epoch += 1
        self._to_coordinator(old, Resign(self.offsets_partition))
        if new not in self.brokers:
            self.brokers[new] = self._new_coordinator(new, loaded=False)
        self._to_coordinator(new, BeginLoading(self.offsets_partition))
        self._push(self.now + self.cfg.coordinator_load_ms, CoordinatorLoaded(new, self.offsets_partition,
                                                                             self.leader_epoch))

    # ------------------------------------------------------------------ rebalance bookkeeping

    def _on_log(self, record: LogRecord, broker_id: int) -> None:
        self.log_records.append(LoggedRecord(record, broker_id, self.offsets_partition))
        if isinstance(record, ClassicRebalanceLog):
            self._record_classic(record, self._owned_now)
            return
        match record:
            case MemberFailed() | MemberLeft():
                name = self.member_names.get(record.member_id)
                proc = self.processes.get(name) if name else None
                if proc is not None and proc.cc.member_id == record.member_id:
                    # The group no longer counts this member as an owner, whatever the process believes.
                    self._checkpoint(proc)
                    self._drop_process_ownership(proc)
                    self._fence(proc)
            case ConsumerGroupRecord():
                pass  # written by consumer groups (sim/consumer_group.py), not by a classic coordinator
            case _:
                assert_never(record)

    def _owned_now(self) -> dict[str, frozenset[str]]:
        return {name: p.cc.owned for name, p in self.processes.items() if p.alive}

    # ------------------------------------------------------------------ results

    def _group_protocol_now(self) -> GroupProtocol:
        return GroupProtocol.CLASSIC

    def _finish(self) -> SimulationResult:
        description = self.brokers[self.leader_broker].describe(self.scenario.group)
        return self._result(
            final_owned=lambda proc: proc.cc.owned if proc.cc.generation >= 0 else frozenset(),
            final_group_state=description.group_state,
            final_members=tuple(self._name(m.member_id) for m in description.members),
            fenced=lambda proc: proc.alive and proc.cc.fatal is ErrorCode.FENCED_INSTANCE_ID)
