"""The discrete-event simulator: a virtual clock, a heap of events, one GroupCoordinator and
one ConsumerCoordinator per consumer process, wired by a network with latency.

Modelling choices (Kafka leaves these to the deployment; all deterministic for a seed):
- Every request and response takes ``network_latency_ms`` (+ a seeded jitter) one way.
  Heartbeat responses without error are not delivered as events: the client does nothing
  with them, and they are half of all messages.
- The application loop. A consumer with ``processing_ms_per_record: 0`` is always inside
  ``poll()`` and consumes continuously: its positions follow the log-end offsets while it
  owns a partition and is not paused or stalled. A consumer with a processing cost takes
  batches of up to ``max_poll_records`` and is out of ``poll()`` while it processes one; a
  caught-up one polls again every ``idle_poll_ms``.
- Auto-commit of continuously consuming consumers is evaluated lazily: the commits of the
  ``auto_commit_interval_ms`` ticks are applied (with the positions at the tick) whenever
  the consumer's state changes and at the end, which gives the committed offsets a real
  consumer would have at every moment anyone reads them, without an event per tick.
- A partition with no committed offset starts at 0 (auto.offset.reset=earliest), so no
  record is ever skipped.
- Ownership (the ``ownership`` intervals): a member owns a partition from the moment it has
  its committed offset (after onPartitionsAssigned and OffsetFetch) until it revokes or loses
  it, crashes, or the coordinator removes it from the group, whichever comes first.
"""

from __future__ import annotations

import heapq
import math
import random
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from kafka_rebalance.model import RebalanceProtocol
from kafka_rebalance.protocol.consumer import (
    ConsumerConfig,
    ConsumerCoordinator,
    MemberState,
    partition_sort_key,
    partition_topic,
    sorted_partitions,
)
from kafka_rebalance.protocol.coordinator import CoordinatorConfig, GroupCoordinator, coordinator_partition
from kafka_rebalance.protocol.messages import (
    Errors,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka_rebalance.sim.scenario import ConsumerSpec, Scenario, load_scenario
from kafka_rebalance.sim.traffic import Traffic

# Event kinds (ints: the heap compares tuples; kinds never tie-break before the sequence number).
TO_COORDINATOR, TO_CONSUMER, COORDINATOR_TIMER, CONSUMER_TIMER, SCENARIO, APP, METADATA, COORDINATOR_LOAD, \
    RESUME, START = range(10)

_UNAVAILABLE = {
    HeartbeatRequest: lambda: HeartbeatResponse(Errors.COORDINATOR_NOT_AVAILABLE),
    JoinGroupRequest: lambda: JoinGroupResponse(Errors.COORDINATOR_NOT_AVAILABLE),
    SyncGroupRequest: lambda: SyncGroupResponse(Errors.COORDINATOR_NOT_AVAILABLE),
    LeaveGroupRequest: lambda: LeaveGroupResponse(Errors.COORDINATOR_NOT_AVAILABLE),
    OffsetCommitRequest: lambda: OffsetCommitResponse(Errors.COORDINATOR_NOT_AVAILABLE),
    OffsetFetchRequest: lambda: OffsetFetchResponse(Errors.COORDINATOR_NOT_AVAILABLE),
}


@dataclass
class Process:
    """One run of a consumer process (a restart is a new Process with the same name)."""

    name: str
    spec: ConsumerSpec
    connection: str
    cc: ConsumerCoordinator
    ms_per_record: float
    max_poll_records: int
    alive: bool = True
    paused: bool = False
    stalled: bool = False
    positions: dict[str, int] = field(default_factory=dict)
    mark_ms: int = 0  # since when positions and the flowing state have been unchanged
    app_token: int = 0
    batch: list[tuple[str, int, int]] = field(default_factory=list)
    batch_start: int = 0
    deferred: list[tuple] = field(default_factory=list)

    @property
    def continuous(self) -> bool:
        return self.ms_per_record == 0

    @property
    def flowing(self) -> bool:
        return self.alive and self.continuous and not self.paused and not self.stalled and self.cc.fatal is None


@dataclass
class SimulationRun:
    """A finished simulation: the result dict and the coordinator's log records."""

    scenario: Scenario
    result: dict[str, Any]
    log_records: list[tuple[dict[str, Any], int, int]]  # (record, broker id, __consumer_offsets partition)
    offset_regressions: int = 0
    ownership_conflicts: int = 0
    final_state: str = ""
    final_members: list[str] = field(default_factory=list)


class Simulation:
    def __init__(self, scenario: Scenario, seed: int | None = None):
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else seed
        self.cfg = scenario.config
        self.rng = random.Random(self.seed)
        self.end_ms = scenario.effective_end_ms
        self.now = 0
        self.heap: list[tuple] = []
        self.seq = 0
        self.topics: dict[str, int] = dict(scenario.topics)
        self.partition_created: dict[str, int] = {}
        for topic, count in self.topics.items():
            for p in range(count):
                self.partition_created[f"{topic}-{p}"] = 0
        self.traffic = Traffic(scenario.produce, self._topic_epochs(), self.end_ms)
        coordinator_config = CoordinatorConfig(
            group_initial_rebalance_delay_ms=self.cfg.group_initial_rebalance_delay_ms,
            group_min_session_timeout_ms=self.cfg.group_min_session_timeout_ms,
            group_max_session_timeout_ms=self.cfg.group_max_session_timeout_ms,
            offsets_topic_num_partitions=self.cfg.offsets_topic_num_partitions,
        )
        self.offsets_partition = coordinator_partition(scenario.group, self.cfg.offsets_topic_num_partitions)
        self.broker = self.offsets_partition % self.cfg.brokers
        coordinator_config.broker_id = self.broker
        self.coordinator: GroupCoordinator | None = GroupCoordinator(scenario.group, coordinator_config, self.rng.getrandbits(32))
        self.coordinator_epoch = 0
        self._last_coordinator = self.coordinator
        self.processes: dict[str, Process] = {}
        self.connections: dict[str, Process] = {}
        self.incarnations: dict[str, int] = {}
        self.member_names: dict[str, str] = {}
        # Accounting
        self.open_ownership: dict[str, tuple[str, int]] = {}
        self.ownership: list[tuple[str, str, int, int]] = []
        self.assigned_to: dict[str, str] = {}
        self.ownership_conflicts = 0
        self.processed_high: dict[str, int] = {}
        self.records_twice = 0
        self.records_lost = 0
        self.topic_wanted: dict[str, int] = {}
        self.log_records: list[tuple[dict[str, Any], int, int]] = []
        self.rebalances: list[dict[str, Any]] = []
        self.open_rebalance: dict[str, Any] | None = None

    # ------------------------------------------------------------------ set-up helpers

    def _topic_epochs(self) -> dict[str, list[tuple[int, int]]]:
        epochs = {t: [(0, n)] for t, n in self.scenario.topics.items()}
        for event in sorted(self.scenario.events, key=lambda e: e.at_ms):
            if event.create_topic is not None:
                epochs[event.create_topic.name] = [(event.at_ms, event.create_topic.partitions)]
            elif event.add_partitions is not None:
                current = epochs[event.add_partitions.topic][-1][1]
                if event.add_partitions.count > current:
                    epochs[event.add_partitions.topic].append((event.at_ms, event.add_partitions.count))
        return epochs

    def _push(self, time: int, kind: int, a: Any = None, b: Any = None, c: Any = None) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (time, self.seq, kind, a, b, c))

    def _latency(self) -> int:
        jitter = self.cfg.network_jitter_ms
        return self.cfg.network_latency_ms + (self.rng.randint(0, jitter) if jitter else 0)

    # ------------------------------------------------------------------ main loop

    def run(self) -> SimulationRun:
        for index, event in enumerate(self.scenario.events):
            self._push(event.at_ms, SCENARIO, index)
        heap = self.heap
        end = self.end_ms
        pop = heapq.heappop
        while heap:
            time, _, kind, a, b, c = heap[0]
            if time > end:
                break
            pop(heap)
            self.now = time
            if kind == TO_COORDINATOR:
                self._deliver_to_coordinator(a, b)
            elif kind == CONSUMER_TIMER:
                proc = self.connections.get(a)
                if proc is not None and proc.alive:
                    if proc.paused:
                        proc.deferred.append((CONSUMER_TIMER, b))
                    else:
                        self._consumer_output(proc, proc.cc.on_timer(b, time))
                        self._maybe_poll(proc)
            elif kind == TO_CONSUMER:
                proc = self.connections.get(a)
                if proc is not None and proc.alive:
                    if proc.paused:
                        proc.deferred.append((TO_CONSUMER, b))
                    else:
                        self._deliver_to_consumer(proc, b)
            elif kind == COORDINATOR_TIMER:
                if a == self.coordinator_epoch and self.coordinator is not None:
                    self._coordinator_output(self.coordinator.on_timer(b, time))
            elif kind == SCENARIO:
                self._scenario_event(self.scenario.events[a])
            elif kind == APP:
                proc = self.connections.get(a)
                if proc is not None and proc.alive and b == proc.app_token:
                    if proc.paused:
                        proc.deferred.append((APP, c))
                    else:
                        self._app_event(proc, c)
            elif kind == METADATA:
                proc = self.connections.get(a)
                if proc is not None and proc.alive:
                    self._push(time + self.cfg.metadata_max_age_ms, METADATA, a)
                    if not proc.paused:
                        self._consumer_output(proc, proc.cc.on_metadata(self.topics, time))
                        self._maybe_poll(proc)
            elif kind == RESUME:
                proc = self.connections.get(a)
                if proc is not None and proc.alive:
                    self._resume(proc, c)
            elif kind == COORDINATOR_LOAD:
                self._load_coordinator()
            elif kind == START:
                self._start_process(a)
        self.now = end
        return self._finish()

    # ------------------------------------------------------------------ network

    def _send(self, proc: Process, request: Any) -> None:
        if isinstance(request, JoinGroupRequest):
            for topic in request.subscription.topics:
                self.topic_wanted.setdefault(topic, self.now)
        self._push(self.now + self._latency(), TO_COORDINATOR, proc.connection, request)

    def _deliver_to_coordinator(self, connection: str, request: Any) -> None:
        coordinator = self.coordinator
        if coordinator is None:
            self._push(self.now + self._latency(), TO_CONSUMER, connection, _UNAVAILABLE[type(request)]())
            return
        if isinstance(request, OffsetFetchRequest):
            # Whoever held these partitions has committed by now what a real consumer would have.
            holders = {self.assigned_to.get(partition) for partition in request.partitions}
            for holder in sorted(h for h in holders if h is not None and h in self.processes):
                self._checkpoint(self.processes[holder])
        self._coordinator_output(coordinator.handle(connection, request, self.now))

    def _coordinator_output(self, out) -> None:
        for record in out.logs:
            self._on_log(record)
        now = self.now
        for connection, response in out.responses:
            if type(response) is HeartbeatResponse and response.error is Errors.NONE:
                continue
            self._push(now + self._latency(), TO_CONSUMER, connection, response)
        for deadline, key in out.timers:
            self._push(deadline, COORDINATOR_TIMER, self.coordinator_epoch, key)

    def _deliver_to_consumer(self, proc: Process, response: Any) -> None:
        if isinstance(response, JoinGroupResponse) and response.member_id:
            self.member_names[response.member_id] = proc.name
        self._consumer_output(proc, proc.cc.on_response(response, self.now))
        self._maybe_poll(proc)

    def _consumer_output(self, proc: Process, out) -> None:
        for event in out.events:
            self._listener_event(proc, event)
        for request in out.requests:
            self._send(proc, request)
        for deadline, key in out.timers:
            self._push(deadline, CONSUMER_TIMER, proc.connection, key)

    # ------------------------------------------------------------------ consumer processes

    def _new_process(self, name: str) -> Process:
        spec = next(c for c in self.scenario.consumers if c.id == name)
        cfg = self.cfg
        incarnation = self.incarnations.get(name, 0) + 1
        self.incarnations[name] = incarnation
        connection = f"{name}#{incarnation}"
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
        )
        cc = ConsumerCoordinator(config)
        proc = Process(name=name, spec=spec, connection=connection, cc=cc, ms_per_record=spec.processing_ms_per_record,
                       max_poll_records=spec.setting(cfg, "max_poll_records"), mark_ms=self.now)
        cc.positions = lambda now, proc=proc: self._positions(proc, now)
        cc.metadata = dict(self.topics)
        cc.subscribed = cc._resolve_subscription()
        return proc

    def _start_process(self, name: str) -> None:
        old = self.processes.get(name)
        if old is not None and old.alive:
            return  # already running: a join for a running consumer changes nothing
        proc = self._new_process(name)
        self.processes[name] = proc
        self.connections[proc.connection] = proc
        self._push(self.now + self.cfg.metadata_max_age_ms, METADATA, proc.connection)
        self._app_poll(proc)

    def _positions(self, proc: Process, now: int) -> dict[str, int]:
        self._sync(proc)
        return dict(proc.positions)

    def _sync(self, proc: Process) -> None:
        """Bring a continuously consuming process's positions up to now (recording what it processed)."""
        if not proc.flowing:
            return
        now = self.now
        leo = self.traffic.leo_of
        positions = proc.positions
        for partition, position in positions.items():
            end = leo(partition, now)
            if end > position:
                self._processed(partition, position, end)
                positions[partition] = end

    def _checkpoint(self, proc: Process) -> None:
        """Before a process's consumption state changes: apply its due auto-commit ticks, then sync."""
        self._flush_auto_commits(proc)
        self._sync(proc)
        proc.mark_ms = self.now

    def _flush_auto_commits(self, proc: Process) -> None:
        cc = proc.cc
        if not (proc.flowing and cc.config.enable_auto_commit and cc.state is MemberState.STABLE and proc.positions):
            return
        due = cc.next_auto_commit_ms
        if self.now < due:
            return
        interval = cc.config.auto_commit_interval_ms
        tick = due + (self.now - due) // interval * interval
        cc.next_auto_commit_ms = tick + interval
        if tick < proc.mark_ms or self.coordinator is None:
            return
        leo = self.traffic.leo_of
        offsets = {p: leo(p, tick) for p in proc.positions}
        request = cc.commit_request(tick, offsets)
        if request is not None:
            self._coordinator_output(self.coordinator.handle(proc.connection, request, self.now))

    def _processed(self, partition: str, start: int, end: int) -> None:
        high = self.processed_high.get(partition, 0)
        if start > high:
            self.records_lost += start - high
        if start < high:
            self.records_twice += min(end, high) - start
        if end > high:
            self.processed_high[partition] = end

    def _listener_event(self, proc: Process, event: tuple) -> None:
        kind = event[0]
        now = self.now
        if kind in ("revoked", "lost"):
            self._checkpoint(proc)
            for partition in event[1]:
                proc.positions.pop(partition, None)
                self._end_ownership(partition, proc.name)
                if self.assigned_to.get(partition) == proc.name:
                    del self.assigned_to[partition]
        elif kind == "assigned":
            for partition in event[1]:
                holder = self.assigned_to.get(partition)
                if holder is not None and holder != proc.name:
                    self.ownership_conflicts += 1
                self.assigned_to[partition] = proc.name
        elif kind == "positions":
            self._checkpoint(proc)
            for partition, committed in event[1].items():
                if partition in proc.cc.owned and partition not in proc.positions:
                    proc.positions[partition] = max(committed, 0)
                    if partition not in self.open_ownership:
                        self.open_ownership[partition] = (proc.name, now)
        elif kind == "fatal":
            self._checkpoint(proc)
            proc.positions.clear()

    def _end_ownership(self, partition: str, name: str) -> None:
        current = self.open_ownership.get(partition)
        if current is not None and current[0] == name:
            del self.open_ownership[partition]
            if self.now > current[1]:
                self.ownership.append((partition, name, current[1], self.now))

    def _drop_process_ownership(self, proc: Process) -> None:
        for partition in list(proc.positions):
            self._end_ownership(partition, proc.name)
        for partition in list(proc.cc.owned):
            if self.assigned_to.get(partition) == proc.name:
                del self.assigned_to[partition]

    def _maybe_poll(self, proc: Process) -> None:
        """A process inside poll() acts on a pending rejoin (or an old client's due heartbeat) at once."""
        cc = proc.cc
        if not proc.alive or proc.paused or not cc.app_in_poll:
            return
        wants_batch = not proc.continuous and not proc.batch and cc.state is MemberState.STABLE and bool(proc.positions)
        if cc.ready_to_join or cc._heartbeat_due or wants_batch:
            self._app_poll(proc)

    def _app_poll(self, proc: Process) -> None:
        cc = proc.cc
        if not proc.alive or proc.paused or proc.stalled:
            return
        cc.app_in_poll = True
        if proc.continuous:
            self._checkpoint(proc)
        self._consumer_output(proc, cc.poll(self.now))
        if proc.continuous or not proc.alive:
            return
        if cc.state is not MemberState.STABLE or cc.rejoin_needed or not proc.positions:
            return  # still (re)joining: poll() keeps running until the group is stable
        self._take_batch(proc)

    def _take_batch(self, proc: Process) -> None:
        now = self.now
        room = proc.max_poll_records
        batch = []
        leo = self.traffic.leo_of
        for partition in sorted_partitions(proc.positions):
            if room == 0:
                break
            position = proc.positions[partition]
            available = leo(partition, now) - position
            if available > 0:
                take = min(room, available)
                batch.append((partition, position, position + take))
                proc.positions[partition] = position + take
                room -= take
        proc.app_token += 1
        if batch:
            records = proc.max_poll_records - room
            proc.batch = batch
            proc.batch_start = now
            proc.cc.app_in_poll = False
            self._push(now + max(1, math.ceil(records * proc.ms_per_record)), APP, proc.connection, proc.app_token, "batch_done")
        else:
            self._push(now + self.cfg.idle_poll_ms, APP, proc.connection, proc.app_token, "idle")

    def _app_event(self, proc: Process, what: str) -> None:
        if what == "batch_done":
            for partition, start, end in proc.batch:
                self._processed(partition, start, end)
            proc.batch = []
        self._app_poll(proc)

    def _finish_batch_partially(self, proc: Process) -> None:
        """A crash mid-batch: the records processed before the crash count as processed."""
        if not proc.batch:
            return
        done = int((self.now - proc.batch_start) / proc.ms_per_record) if proc.ms_per_record else 0
        for partition, start, end in proc.batch:
            take = min(done, end - start)
            if take > 0:
                self._processed(partition, start, start + take)
            done -= take
        proc.batch = []

    def _resume(self, proc: Process, what: str) -> None:
        if what == "pause" and proc.paused:
            proc.paused = False
            proc.mark_ms = self.now
            deferred, proc.deferred = proc.deferred, []
            for kind, payload in deferred:
                if not proc.alive:
                    break
                if kind == TO_CONSUMER:
                    self._deliver_to_consumer(proc, payload)
                elif kind == CONSUMER_TIMER:
                    self._consumer_output(proc, proc.cc.on_timer(payload, self.now))
                elif kind == APP:
                    self._app_event(proc, payload)
            if proc.continuous:
                self._app_poll(proc)
            else:
                self._maybe_poll(proc)
        elif what == "stall" and proc.stalled:
            proc.stalled = False
            proc.mark_ms = self.now
            self._app_poll(proc)

    # ------------------------------------------------------------------ scenario events

    def _scenario_event(self, event) -> None:
        action = event.action
        now = self.now
        if action == "join":
            self._start_process(event.join)
        elif action in ("leave", "restart"):
            name = event.leave if action == "leave" else event.restart
            proc = self.processes.get(name)
            if proc is not None and proc.alive:
                self._checkpoint(proc)
                if proc.batch:
                    self._finish_batch_partially(proc)
                out = proc.cc.close(now)
                self._consumer_output(proc, out)
                self._drop_process_ownership(proc)
                proc.alive = False
            if action == "restart":
                self._push(now + (event.after_ms or 0), START, name)
        elif action == "crash":
            proc = self.processes.get(event.crash)
            if proc is not None and proc.alive:
                self._checkpoint(proc)
                self._finish_batch_partially(proc)
                self._drop_process_ownership(proc)
                proc.alive = False
        elif action in ("pause", "stall"):
            proc = self.processes.get(getattr(event, action))
            if proc is not None and proc.alive and not proc.paused and not (action == "stall" and proc.stalled):
                self._checkpoint(proc)
                if action == "pause":
                    proc.paused = True
                else:
                    proc.stalled = True
                    if proc.cc.app_in_poll:
                        proc.cc.last_poll_ms = now  # the loop was inside poll() until now
                    proc.cc.app_in_poll = False
                self._push(now + event.for_ms, RESUME, proc.connection, proc.app_token, action)
        elif action == "create_topic":
            spec = event.create_topic
            self.topics[spec.name] = spec.partitions
            for p in range(spec.partitions):
                self.partition_created[f"{spec.name}-{p}"] = now
        elif action == "add_partitions":
            spec = event.add_partitions
            current = self.topics[spec.topic]
            if spec.count > current:
                self.topics[spec.topic] = spec.count
                for p in range(current, spec.count):
                    self.partition_created[f"{spec.topic}-{p}"] = now
        elif action == "subscribe":
            spec = event.subscribe
            proc = self.processes.get(spec.consumer)
            if proc is not None and proc.alive:
                proc.cc.metadata = dict(self.topics)
                proc.cc.subscribe(tuple(spec.topics or ()), spec.pattern)
                self._maybe_poll(proc)
        elif action == "coordinator_failover" and self.coordinator is not None:
            self._coordinator_output(self.coordinator.unload(now))
            self._last_coordinator = self.coordinator
            self.coordinator = None
            self.coordinator_epoch += 1
            self._push(now + self.cfg.coordinator_load_ms, COORDINATOR_LOAD)

    def _load_coordinator(self) -> None:
        self.broker = (self.broker + 1) % self.cfg.brokers
        coordinator, out = GroupCoordinator.load(self._last_coordinator, self.now, self.broker, self.rng.getrandbits(32))
        self.coordinator = coordinator
        self._coordinator_output(out)

    # ------------------------------------------------------------------ rebalance bookkeeping

    def _name(self, member_id: str) -> str:
        return self.member_names.get(member_id, member_id)

    def _on_log(self, record: dict[str, Any]) -> None:
        self.log_records.append((record, self.broker, self.offsets_partition))
        kind = record["kind"]
        now = self.now
        current = self.open_rebalance
        if kind == "preparing_rebalance":
            if current is None:
                held = {name: set(p.cc.owned) for name, p in self.processes.items() if p.alive}
                self.open_rebalance = {"start_ms": now, "reason": record["reason"], "held": held}
        elif kind == "stabilized":
            if current is not None:
                current["generation"] = record["generation"]
                current["member_ids"] = record["member_ids"]
                current["leader"] = record["leader"]
                current["strategy"] = record["protocol"]
        elif kind in ("member_failed", "member_left"):
            name = self.member_names.get(record["member"])
            proc = self.processes.get(name) if name else None
            if proc is not None and proc.cc.member_id == record["member"]:
                # The group no longer counts this member as an owner, whatever the process believes.
                self._checkpoint(proc)
                self._drop_process_ownership(proc)
        elif kind == "assignment_received" and current is not None:
            self._close_rebalance(current, record["generation"], record["assignment"])
        elif kind == "group_empty" and current is not None:
            self._close_rebalance(current, record["generation"], None)

    def _close_rebalance(self, current: dict[str, Any], generation: int, assignment: dict[str, list[str]] | None) -> None:
        self.open_rebalance = None
        held = current["held"]
        if assignment is None:
            entry = {"generation": generation, "start_ms": current["start_ms"], "end_ms": self.now,
                     "reason": current["reason"], "strategy": None, "protocol": None, "leader": None,
                     "members": [], "assignment": {}, "revoked": {}, "added": {}}
            self.rebalances.append(entry)
            return
        by_name = {self._name(mid): sorted_partitions(parts) for mid, parts in assignment.items()}
        names = [self._name(mid) for mid in current["member_ids"]]
        protocol = self._group_protocol(names)
        revoked, added = {}, {}
        for name in names:
            before = held.get(name, set())
            now_assigned = set(by_name.get(name, ()))
            if protocol is RebalanceProtocol.EAGER:
                revoked[name] = sorted_partitions(before)
                added[name] = sorted_partitions(now_assigned)
            else:
                revoked[name] = sorted_partitions(before - now_assigned)
                added[name] = sorted_partitions(now_assigned - before)
        self.rebalances.append({
            "generation": generation, "start_ms": current["start_ms"], "end_ms": self.now, "reason": current["reason"],
            "strategy": current["strategy"], "protocol": protocol.value, "leader": self._name(current["leader"]),
            "members": names, "assignment": {name: by_name.get(name, []) for name in names},
            "revoked": revoked, "added": added,
        })

    def _group_protocol(self, names: list[str]) -> RebalanceProtocol:
        protocols = [self.processes[n].cc.protocol for n in names if n in self.processes]
        if protocols and all(p is RebalanceProtocol.COOPERATIVE for p in protocols):
            return RebalanceProtocol.COOPERATIVE
        return RebalanceProtocol.EAGER

    # ------------------------------------------------------------------ results

    def _finish(self) -> SimulationRun:
        for proc in self.processes.values():
            if proc.alive:
                self._checkpoint(proc)
        end = self.end_ms
        for partition, (name, start) in list(self.open_ownership.items()):
            if end > start:
                self.ownership.append((partition, name, start, end))
        self.open_ownership.clear()
        if self.open_rebalance is not None:
            current = self.open_rebalance
            self.rebalances.append({
                "generation": current.get("generation"), "start_ms": current["start_ms"], "end_ms": None,
                "reason": current["reason"], "strategy": current.get("strategy"), "protocol": None, "leader": None,
                "members": [], "assignment": {}, "revoked": {}, "added": {},
            })
        ownership = sorted(self.ownership, key=lambda o: (partition_sort_key(o[0]), o[2], o[1]))
        metrics = self._metrics(ownership)
        final = {}
        for spec in self.scenario.consumers:
            proc = self.processes.get(spec.id)
            owned = proc.cc.owned if proc is not None and proc.alive and proc.cc.generation >= 0 else ()
            final[spec.id] = sorted_partitions(owned)
        result = {
            "scenario": self.scenario.name,
            "coordinator_partition": self.offsets_partition,
            "rebalances": self.rebalances,
            "final_assignment": final,
            "metrics": metrics,
            "ownership": [{"partition": p, "member": m, "start_ms": s, "end_ms": e} for p, m, s, e in ownership],
        }
        coordinator = self.coordinator or self._last_coordinator
        return SimulationRun(
            scenario=self.scenario, result=result, log_records=self.log_records,
            offset_regressions=coordinator.offset_regressions + (self._last_coordinator.offset_regressions
                                                                 if self._last_coordinator is not coordinator else 0),
            ownership_conflicts=self.ownership_conflicts,
            final_state=coordinator.state.value, final_members=[self._name(m) for m in coordinator.members],
        )

    def _metrics(self, ownership: list[tuple[str, str, int, int]]) -> dict[str, int]:
        windows = sorted(
            (r["start_ms"], r["end_ms"] if r["end_ms"] is not None else self.end_ms, index)
            for index, r in enumerate(self.rebalances)
        )
        window_starts = [w[0] for w in windows]
        per_rebalance = [0] * len(self.rebalances)

        def rebalance_at(moment: int) -> int | None:
            """Index of the rebalance under way at ``moment``, if any."""
            i = bisect_right(window_starts, moment) - 1
            return windows[i][2] if i >= 0 and windows[i][0] <= moment <= windows[i][1] else None

        moved = 0
        stop_the_world = 0
        max_unowned = 0
        by_partition: dict[str, list[tuple[str, int, int]]] = {}
        for partition, name, start, end in ownership:
            by_partition.setdefault(partition, []).append((name, start, end))
        wanted_partitions = [p for p, created in self.partition_created.items()
                             if partition_topic(p) in self.topic_wanted]
        for partition in wanted_partitions:
            intervals = by_partition.get(partition, [])
            topic = partition_topic(partition)
            cursor = max(self.topic_wanted[topic], self.partition_created[partition])
            for i, (name, start, end) in enumerate(intervals):
                if start > cursor:
                    max_unowned = max(max_unowned, start - cursor)
                cursor = max(cursor, end)
                if i:
                    previous_name, _, previous_end = intervals[i - 1]
                    if previous_name != name:
                        moved += 1
                    elif start > previous_end and (during := rebalance_at(previous_end)) is not None:
                        stop_the_world += start - previous_end
                        per_rebalance[during] += start - previous_end
            if self.end_ms > cursor:
                max_unowned = max(max_unowned, self.end_ms - cursor)
        # Optional per-rebalance figure (the spec's core fields are unchanged); sums to the metric.
        for rebalance, pause in zip(self.rebalances, per_rebalance, strict=True):
            rebalance["stop_the_world_partition_ms"] = pause
        return {
            "rebalances": len(self.rebalances),
            "partitions_moved": moved,
            "stop_the_world_partition_ms": stop_the_world,
            "max_partition_unowned_ms": max_unowned,
            "records_processed_twice": self.records_twice,
            "records_lost": self.records_lost,
        }


def run_simulation(scenario: Scenario | dict | str, seed: int | None = None) -> SimulationRun:
    """Run a scenario and keep everything (result, log records, internal checks)."""
    return Simulation(load_scenario(scenario), seed).run()


def simulate(scenario: Scenario | dict | str, seed: int | None = None) -> dict[str, Any]:
    """The result of shared/spec/scenario.md (plus ``ownership``) for a scenario and seed."""
    return run_simulation(scenario, seed).result

