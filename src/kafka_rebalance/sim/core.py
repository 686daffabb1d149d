"""What the two simulators share: the classic engine (``sim.engine``) and the consumer-group
simulator (``sim.consumer_group``) run the same scenario on the same virtual clock, with the
same application loop in each consumer process and the same accounting of what it processed.

- ``AppProcess``: one run of a consumer process as the application sees it (alive, paused by
  a GC, stalled in its poll loop, its positions and the batch it is processing).
- ``SimulatorCore``: the scenario's events (join, leave, restart, crash, pause, stall, topic
  growth, subscription changes), a process's life cycle (start, pause/stall and resume), the
  batch poll loop (take a batch, finish it, or part of it on a crash or close) and the
  consumption ledger (records processed twice or lost against each partition's high mark).
  Each simulator supplies what its group protocol does at those points (the hooks below).
"""

from __future__ import annotations

import gc
import math
import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kafka_rebalance.sim.events import (
    AppActivity,
    AppWakes,
    Interruption,
    ProcessResumes,
    ProcessStarts,
    ScenarioStep,
)
from kafka_rebalance.sim.ownership_metrics import topic_epochs
from kafka_rebalance.sim.result import Consumption, Produced, ints, strings
from kafka_rebalance.sim.scenario import ConsumerSpec, Event, Scenario, SubscribeChange
from kafka_rebalance.sim.traffic import Traffic

CoreEvent = ScenarioStep | AppWakes | ProcessStarts | ProcessResumes  # what the shared code queues


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """A simulation run allocates millions of short-lived, acyclic event objects; the cyclic
    collector would only rescan the long-lived tables (ownership, commits, log records) again and
    again (about 7-15% of a run). Restores the collector as it was."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def partition_order(partition: str) -> tuple[str, int]:
    """Topics by name, then partition numbers ascending (Kafka's fetch order in the model)."""
    topic, _, number = partition.rpartition("-")
    return topic, int(number)


@dataclass(slots=True)
class AppProcess:
    """One run of a consumer process (a restart is a new one with the same name)."""

    name: str
    spec: ConsumerSpec
    connection: str
    ms_per_record: float
    max_poll_records: int
    alive: bool = True
    paused: bool = False
    stalled: bool = False
    positions: dict[str, int] = field(default_factory=dict)
    mark_ms: int = 0  # since when positions and the flowing state have been unchanged
    app_token: int = 0  # guards against wake-ups of a loop that was restarted since
    batch: list[tuple[str, int, int]] = field(default_factory=list)
    batch_start: int = 0
    order: list[str] = field(default_factory=list)  # positions in fetch order (cached)

    @property
    def continuous(self) -> bool:
        return self.ms_per_record == 0

    @property
    def flowing(self) -> bool:
        """Consuming continuously right now (positions follow the log-end offsets)."""
        raise NotImplementedError

    @property
    def generation(self) -> int:
        """The generation (classic) or member epoch (consumer group) its consumption counts under."""
        raise NotImplementedError


P = TypeVar("P", bound=AppProcess)


class SimulatorCore(Generic[P]):
    def __init__(self, scenario: Scenario, seed: int | None = None):
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else seed
        self.cfg = scenario.config
        self.rng = random.Random(self.seed)
        self.latency_ms = self.cfg.network_latency_ms  # read once per message: kept at hand
        self.jitter_ms = self.cfg.network_jitter_ms
        self.end_ms = scenario.effective_end_ms
        self.now = 0
        self.seq = 0
        self.topics: dict[str, int] = dict(scenario.topics)
        self.partition_created: dict[str, int] = {f"{t}-{p}": 0 for t, n in self.topics.items() for p in range(n)}
        self.traffic = Traffic(scenario.produce, topic_epochs(self.scenario), self.end_ms)
        self.processes: dict[str, P] = {}
        self.connections: dict[str, P] = {}
        self.incarnations: dict[str, int] = {}
        self.member_names: dict[str, str] = {}
        # (partition, member, generation, from_offset, to_offset, start_ms, end_ms)
        self.consumption_rows: list[tuple[str, str, int, int, int, int, int]] = []
        self.processed_high: dict[str, int] = {}
        self.records_twice = 0
        self.records_lost = 0
        self.topic_wanted: dict[str, int] = {}

    # ------------------------------------------------------------------ what each simulator does

    def _push(self, time: int, event: CoreEvent) -> int:
        raise NotImplementedError

    def _new_process(self, name: str) -> P:
        raise NotImplementedError

    def _started(self, proc: P) -> None:
        """A new process is registered; its application polls next."""
        raise NotImplementedError

    def _app_poll(self, proc: P) -> None:
        raise NotImplementedError

    def _checkpoint(self, proc: P) -> None:
        """Before a process's consumption state changes: due auto-commits, then consume up to now."""
        raise NotImplementedError

    def _batch_taken(self, proc: P) -> None:
        """poll() returned a batch (``proc.batch``); the application processes it now."""
        raise NotImplementedError

    def _resumed_from_pause(self, proc: P) -> None:
        raise NotImplementedError

    def _resumed_from_stall(self, proc: P) -> None:
        raise NotImplementedError

    def _stalled(self, proc: P) -> None:
        """The poll loop got stuck (the process goes on)."""
        raise NotImplementedError

    def _stop_process(self, proc: P) -> None:
        """A clean shutdown (``close()``) of a running process."""
        raise NotImplementedError

    def _crash_process(self, proc: P) -> None:
        raise NotImplementedError

    def _topics_grown(self, event: Event) -> None:
        """A topic was created or grew (``self.topics`` and ``partition_created`` already say so)."""
        raise NotImplementedError

    def _subscribe(self, proc: P, change: SubscribeChange) -> None:
        raise NotImplementedError

    def _other_scenario_event(self, event: Event) -> None:
        """A scenario event only one group protocol knows (coordinator failover, upgrade, ...)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ shared

    def _latency(self) -> int:
        jitter = self.jitter_ms
        return self.latency_ms + (self.rng.randint(0, jitter) if jitter else 0)

    def _scenario_event(self, event: Event) -> None:
        action = event.action
        if action == "join":
            assert event.join is not None
            self._start_process(event.join)
        elif action in ("leave", "restart"):
            name = event.leave if action == "leave" else event.restart
            assert name is not None
            proc = self.processes.get(name)
            if proc is not None and proc.alive:
                self._stop_process(proc)
            if action == "restart":
                self._push(self.now + (event.after_ms or 0), ProcessStarts(name))
        elif action == "crash":
            assert event.crash is not None
            proc = self.processes.get(event.crash)
            if proc is not None and proc.alive:
                self._crash_process(proc)
        elif action in ("pause", "stall"):
            self._interrupt(event, Interruption.PAUSE if action == "pause" else Interruption.STALL)
        elif action in ("create_topic", "add_partitions"):
            self._grow_topics(event)
            self._topics_grown(event)
        elif action == "subscribe":
            change = event.subscribe
            assert change is not None
            proc = self.processes.get(change.consumer)
            if proc is not None and proc.alive:
                self._subscribe(proc, change)
        else:
            self._other_scenario_event(event)

    def _grow_topics(self, event: Event) -> None:
        now = self.now
        if event.create_topic is not None:
            spec = event.create_topic
            self.topics[spec.name] = spec.partitions
            for p in range(spec.partitions):
                self.partition_created[f"{spec.name}-{p}"] = now
        elif event.add_partitions is not None:
            grow = event.add_partitions
            current = self.topics[grow.topic]
            if grow.count > current:
                self.topics[grow.topic] = grow.count
                for p in range(current, grow.count):
                    self.partition_created[f"{grow.topic}-{p}"] = now

    def _interrupt(self, event: Event, interruption: Interruption) -> None:
        name = event.pause if interruption is Interruption.PAUSE else event.stall
        proc = self.processes.get(name) if name is not None else None
        if (proc is not None and proc.alive and not proc.paused
                and not (interruption is Interruption.STALL and proc.stalled)):
            self._checkpoint(proc)
            if interruption is Interruption.PAUSE:
                proc.paused = True
            else:
                proc.stalled = True
                self._stalled(proc)
            assert event.for_ms is not None
            self._push(self.now + event.for_ms, ProcessResumes(proc.connection, interruption))

    def _resume(self, proc: P, interruption: Interruption) -> None:
        if interruption is Interruption.PAUSE and proc.paused:
            proc.paused = False
            proc.mark_ms = self.now
            self._resumed_from_pause(proc)
        elif interruption is Interruption.STALL and proc.stalled:
            proc.stalled = False
            proc.mark_ms = self.now
            self._resumed_from_stall(proc)

    def _start_process(self, name: str) -> None:
        old = self.processes.get(name)
        if old is not None and old.alive:
            return  # already running: a join for a running consumer changes nothing
        proc = self._new_process(name)
        self.processes[name] = proc
        self.connections[proc.connection] = proc
        self._started(proc)
        self._app_poll(proc)

    def _checkpoint_running(self) -> None:
        for proc in self.processes.values():
            if proc.alive:
                self._checkpoint(proc)

    # ------------------------------------------------------------------ consumption

    def _processed(self, proc: P, partition: str, start: int, end: int, since_ms: int) -> None:
        high = self.processed_high.get(partition, 0)
        if start > high:
            self.records_lost += start - high
        if start < high:
            self.records_twice += min(end, high) - start
        if end > high:
            self.processed_high[partition] = end
        self.consumption_rows.append((partition, proc.name, proc.generation, start, end, since_ms, self.now))

    def _sync(self, proc: P) -> None:
        """Bring a continuously consuming process's positions up to now (recording what it processed)."""
        if not proc.flowing:
            return
        now = self.now
        positions = proc.positions
        ends = self.traffic.leo_many(positions, now)
        for (partition, position), end in zip(positions.items(), ends, strict=True):
            if end > position:
                self._processed(proc, partition, position, end, proc.mark_ms)
                positions[partition] = end

    def _take_batch(self, proc: P) -> None:
        """poll() of a consumer with a processing cost: up to ``max_poll_records`` in fetch order,
        or, caught up, another poll after ``idle_poll_ms``."""
        now = self.now
        room = proc.max_poll_records
        batch = []
        leo = self.traffic.leo_of
        positions = proc.positions
        if len(proc.order) != len(positions) or not all(p in positions for p in proc.order):
            proc.order = sorted(positions, key=partition_order)
        for partition in proc.order:
            if room == 0:
                break
            position = positions[partition]
            available = leo(partition, now) - position
            if available > 0:
                take = min(room, available)
                batch.append((partition, position, position + take))
                positions[partition] = position + take
                room -= take
        proc.app_token += 1
        if batch:
            records = proc.max_poll_records - room
            proc.batch = batch
            proc.batch_start = now
            self._batch_taken(proc)
            self._push(now + max(1, math.ceil(records * proc.ms_per_record)),
                       AppWakes(proc.connection, proc.app_token, AppActivity.BATCH_DONE))
        else:
            self._push(now + self.cfg.idle_poll_ms, AppWakes(proc.connection, proc.app_token, AppActivity.IDLE_POLL))

    def _finish_batch_partially(self, proc: P, *, rewind: bool) -> None:
        """A crash or a close mid-batch: the records processed before it count as processed. With
        ``rewind`` (a clean close) the positions stop after them, so a commit on close claims only
        them (a well-behaved application commits what it processed on shutdown)."""
        if not proc.batch:
            return
        done = int((self.now - proc.batch_start) / proc.ms_per_record) if proc.ms_per_record else 0
        for partition, start, end in proc.batch:
            take = max(0, min(done, end - start))
            if take > 0:
                self._processed(proc, partition, start, start + take, proc.batch_start)
            if rewind and partition in proc.positions:
                proc.positions[partition] = start + take
            done -= take
        proc.batch = []

    # ------------------------------------------------------------------ result tables

    def _consumption_table(self) -> Consumption:
        rows = self.consumption_rows
        return Consumption(strings([r[0] for r in rows]), strings([r[1] for r in rows]), ints([r[2] for r in rows]),
                           ints([r[3] for r in rows]), ints([r[4] for r in rows]), ints([r[5] for r in rows]),
                           ints([r[6] for r in rows]))

    def _produced_table(self) -> Produced:
        """Every partition's log-end offset at the end of the run."""
        partitions = sorted(self.partition_created, key=partition_order)
        return Produced(strings(partitions), ints([self.traffic.leo_of(p, self.end_ms) for p in partitions]))
