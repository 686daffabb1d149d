"""The simulator's driver: what every run has whichever group protocol its group speaks. The
group side plugs in (``sim.classic_side.ClassicGroupSide``: the classic ``GroupCoordinator`` per
broker and the classic consumer; ``sim.consumer_group.ConsumerGroupSide``: the
``ConsumerGroupCoordinator`` and the new consumer, classic members and a migrating group
included) by filling in the hooks below.

- ``AppProcess``: one run of a consumer process as the application sees it (alive, paused by
  a GC, stalled in its poll loop, its positions and the batch it is processing, what it
  believes it holds and since when the group fenced it).
- ``Driver``: the virtual clock and the seeded randomness (network latency and jitter),
  the scenario's events (join, leave, restart, crash, pause, stall, topic growth, subscription
  changes), a process's life cycle (start, pause/stall and resume), the batch poll loop (take a
  batch, finish it, or part of it on a crash or close), the one ledger of every run (ownership
  intervals, each consumer's holds and their fencing, consumption with records processed twice
  or lost, commits with offset regressions), the one rebalance recorder (``RebalanceRecorder``)
  and the one result builder (``_result``).
"""

from __future__ import annotations

import gc
import heapq
import math
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar, assert_never

from kafka_rebalance.model import GroupProtocol, RebalanceProtocol
from kafka_rebalance.protocol.classic.consumer import partition_sort_key, sorted_partitions
from kafka_rebalance.protocol.classic.coordinator_events import (
    GroupMetadataRecord,
    GroupTombstone,
    JoinGroupResponse,
    PersistedRecord,
    Respond,
)
from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.logrecords import AssignmentReceived, GroupEmpty, PreparingRebalance, Stabilized
from kafka_rebalance.sim.events import (
    AppActivity,
    AppWakes,
    Interruption,
    MetadataRefresh,
    ProcessResumes,
    ProcessStarts,
    ScenarioStep,
)
from kafka_rebalance.sim.load import LoadModel
from kafka_rebalance.sim.ownership_metrics import ownership_metrics, topic_epochs
from kafka_rebalance.sim.rebalance_recorder import RebalanceRecorder
from kafka_rebalance.sim.result import (
    NOT_FENCED,
    Commits,
    Consumption,
    Held,
    LoggedRecord,
    MemberPartitions,
    Metrics,
    Ownership,
    Produced,
    SimulationResult,
    ints,
    strings,
)
from kafka_rebalance.sim.scenario import ConsumerSpec, Scenario
from kafka_rebalance.sim.scenario_events import (
    ConsumerCrashes,
    ConsumerDowngrades,
    ConsumerJoins,
    ConsumerLeaves,
    ConsumerPauses,
    ConsumerRestarts,
    ConsumerStalls,
    ConsumerUpgrades,
    CoordinatorFailsOver,
    PartitionsAdded,
    ProtocolSwitch,
    ScenarioEvent,
    SubscriptionChanged,
    TopicCreated,
    TopicsGrown,
)
from kafka_rebalance.sim.traffic import Traffic

CoreEvent = ScenarioStep | AppWakes | MetadataRefresh | ProcessStarts | ProcessResumes  # what the shared code queues
ClassicRebalanceLog = PreparingRebalance | Stabilized | AssignmentReceived | GroupEmpty


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


D = TypeVar("D")  # the events a group side holds back while a process is paused


@dataclass(slots=True)
class AppProcess(ABC, Generic[D]):
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
    order_set: frozenset[str] = frozenset()  # what ``order`` holds: the cache is good while it is ``positions``
    incarnation: int = 1
    # the consumer's own view: partition -> [since_ms, generation, fenced_ms] (see result.Held)
    held: dict[str, list[int]] = field(default_factory=dict)
    # since when the group has moved on without this process (NOT_FENCED: it has not)
    fenced_ms: int = NOT_FENCED
    deferred: list[D | AppWakes] = field(default_factory=list)  # what reached it while it was paused, in order
    wire: str = ""  # the connection its requests go over now (a new one after each request timeout)
    # the member id it had before its machine dropped it (a poll-timeout leave, ILLEGAL_GENERATION):
    # the coordinator may still know it by that id, and remove it or leave it out by it
    former_member_id: str = ""
    reconnects: int = 0

    @property
    def continuous(self) -> bool:
        return self.ms_per_record == 0

    @property
    @abstractmethod
    def flowing(self) -> bool:
        """Consuming continuously right now (positions follow the log-end offsets)."""

    @property
    @abstractmethod
    def generation(self) -> int:
        """The generation (classic) or member epoch (consumer group) its consumption counts under."""

    @property
    @abstractmethod
    def member_id(self) -> str:
        """The member id the group knows it by ("" before the group gave or took one)."""

    @property
    @abstractmethod
    def classic_member(self) -> tuple[str, int] | None:
        """Its member id and generation in a classic group (None: it speaks the consumer protocol)."""

    @property
    @abstractmethod
    def rebalance_protocol(self) -> RebalanceProtocol | None:
        """How its classic consumer rebalances (the protocol every assignor it lists supports;
        None: it speaks the consumer protocol)."""


P = TypeVar("P", bound="AppProcess[Any]")
E = TypeVar("E")  # a group side's closed union of queued events (CoreEvent among them)


class Driver(ABC, Generic[P, E, D]):
    """A run of a scenario: ``P`` the group side's consumer process, ``E`` its queued events,
    ``D`` the events it holds back while a process is paused. The group side (a subclass) fills
    in the abstract hooks below (a side that forgets one cannot be built, and mypy names it),
    ``_finish`` among them, which returns ``_result(...)``."""

    def __init__(self, scenario: Scenario, seed: int | None = None):
        self.scenario = scenario
        self.consumer_specs = {spec.id: spec for spec in scenario.consumers}  # ids are unique (Scenario checks)
        self.seed = scenario.seed if seed is None else seed
        self.cfg = scenario.config
        self.rng = random.Random(self.seed)
        self.latency_ms = self.cfg.network_latency_ms  # read once per message: kept at hand
        self.jitter_ms = self.cfg.network_jitter_ms
        self.end_ms = scenario.effective_end_ms
        # Lost messages: each request and each response on its own, from a random stream of the
        # seed that nothing else draws from, until ``network_loss_until_ms``.
        self.loss = self.cfg.network_loss
        self.lossy = self.loss > 0
        self.loss_until_ms = self.end_ms if self.cfg.network_loss_until_ms is None else self.cfg.network_loss_until_ms
        self.loss_rng = random.Random(f"network-loss/{self.seed}")
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
        self.offsets_partition = 0  # the group's __consumer_offsets partition (the group side sets it)
        # Ledger
        self.open_ownership: dict[str, tuple[str, int, int]] = {}  # partition -> (name, since, generation)
        self.ownership_rows: list[tuple[str, str, int, int, int]] = []  # partition, member, generation, start, end
        # partition, member, incarnation, generation, start, end, fenced (result.Held)
        self.held_rows: list[tuple[str, str, int, int, int, int, int]] = []
        # time, partition, offset, member, generation, error code
        # (time, partition, offset, member, generation, error code, incarnation)
        self.commit_rows: list[tuple[int, str, int, str, int, int, int]] = []
        self.committed_high: dict[str, int] = {}
        self.offset_regressions = 0
        self.ownership_conflicts = 0
        self.log_records: list[LoggedRecord] = []
        self.recorder = RebalanceRecorder()
        self.life_starts_ms = [0]  # see SimulationResult.life_starts_ms
        self.heap: list[tuple[int, int, E | CoreEvent]] = []
        # The load model (a scenario with ``load``): the spans consumers were paused or stalled,
        # and when each leader (by connection) last measured the produce rates.
        self.load = LoadModel(scenario, topic_epochs(scenario)) if scenario.load is not None else None
        self.interruptions: list[tuple[str, int, int]] = []
        self.loads_measured_ms: dict[str, int] = {}

    # ------------------------------------------------------------------ the clock and the network

    def run(self) -> SimulationResult:
        """Every scenario event, then whatever the machines make happen, in virtual time order up
        to the end of the scenario; then the result."""
        with no_cyclic_gc():
            for index, step in enumerate(self.scenario.timeline):
                self._push(step.at_ms, ScenarioStep(index))
            heap = self.heap
            end = self.end_ms
            pop = heapq.heappop
            handle = self._handle
            app_wakes = self._app_wakes
            while heap:
                time, seq, event = heap[0]
                if time > end:
                    break
                pop(heap)
                if type(event) is AppWakes:  # the most frequent event (the poll loops), for either side
                    self.now = time
                    app_wakes(event)
                else:
                    handle(time, seq, event)
            self.now = end
            return self._finish()

    def _push(self, time: int, event: E | CoreEvent) -> int:
        self.seq += 1
        heapq.heappush(self.heap, (time, self.seq, event))
        return self.seq

    def _in_order_arrival(self, in_order: dict[str, int], connection: str, sent_ms: int | None = None) -> int:
        """When a message sent now (or at ``sent_ms``) arrives: after the latency, and never before
        an earlier message on the same connection (TCP; Kafka answers a connection in order)."""
        at = max((self.now if sent_ms is None else sent_ms) + self._latency(), in_order.get(connection, 0))
        in_order[connection] = at
        return at

    # ------------------------------------------------------------------ what each group side does

    @abstractmethod
    def _group_protocol_now(self) -> GroupProtocol:
        """What the group speaks at the end of the run (a rebalance still open is recorded so)."""

    @abstractmethod
    def _handle(self, time: int, seq: int, event: E | CoreEvent) -> None:
        """One event of the queue is due (``seq``: its queue entry, which a timer table may check)."""

    @abstractmethod
    def _finish(self) -> SimulationResult:
        """The run is over: the result, built by ``_result`` from the group side's final view."""

    @abstractmethod
    def _new_process(self, name: str) -> P:
        """A new process of consumer ``name`` (``_new_incarnation`` numbers it), not yet started."""

    @abstractmethod
    def _deferred_event(self, proc: P, event: D) -> None:
        """A network message or timer held back while ``proc`` was paused, now that it runs again."""

    @abstractmethod
    def _app_event(self, proc: P, activity: AppActivity) -> None:
        """The application loop's wake-up (a batch or the listener's work done, an idle poll)."""

    def _new_incarnation(self, name: str) -> tuple[int, str]:
        """A new process of consumer ``name``: its incarnation number and connection name."""
        incarnation = self.incarnations.get(name, 0) + 1
        self.incarnations[name] = incarnation
        return incarnation, f"{name}#{incarnation}"

    @abstractmethod
    def _started(self, proc: P) -> None:
        """A new process is registered; its application polls next."""

    @abstractmethod
    def _refreshes_metadata(self, proc: P) -> bool:
        """Whether the consumer learns of topic changes from its own metadata refreshes
        (``metadata.max.age.ms``): a classic consumer; the new consumer's coordinator tells it."""

    @abstractmethod
    def _metadata_refreshed(self, proc: P) -> None:
        """Its metadata refresh came back with the cluster's topics as they are now."""

    @abstractmethod
    def _app_poll(self, proc: P) -> None:
        """The application calls ``poll()`` (a process with a processing cost takes its next
        batch through ``_take_batch`` once the group lets it consume)."""

    @abstractmethod
    def _checkpoint(self, proc: P) -> None:
        """Before a process's consumption state changes: due auto-commits, then consume up to now."""

    @abstractmethod
    def _batch_taken(self, proc: P) -> None:
        """poll() returned a batch (``proc.batch``); the application processes it now."""

    @abstractmethod
    def _resumed_from_pause(self, proc: P) -> None:
        """A pause ended (``proc.paused`` is False again): replay what reached it, poll again."""

    @abstractmethod
    def _resumed_from_stall(self, proc: P) -> None:
        """A stall ended (``proc.stalled`` is False again): the poll loop goes on."""

    @abstractmethod
    def _stalled(self, proc: P) -> None:
        """The poll loop got stuck (the process goes on)."""

    @abstractmethod
    def _polled_until_interrupted(self, proc: P) -> None:
        """A pause or stall begins: a continuously consuming loop was inside poll() until now."""

    @abstractmethod
    def _stop_process(self, proc: P) -> None:
        """A clean shutdown (``close()``) of a running process."""

    def _closing(self, proc: P) -> bool:
        """Still shutting down after its ``close()`` (a process started again under the same
        name runs beside it: the old one goes on leaving the group on its own)."""
        return False

    @abstractmethod
    def _crash_process(self, proc: P) -> None:
        """A running process dies at once, telling nobody."""

    @abstractmethod
    def _topics_grown(self, event: TopicsGrown) -> None:
        """A topic was created or grew (``self.topics`` and ``partition_created`` already say so)."""

    @abstractmethod
    def _subscribe(self, proc: P, change: SubscriptionChanged) -> None:
        """A running process changes its subscription."""

    @abstractmethod
    def _coordinator_fails_over(self) -> None:
        """Leadership of the group's ``__consumer_offsets`` partition moves to the next broker."""

    @abstractmethod
    def _switch_protocol(self, event: ProtocolSwitch) -> None:
        """A rolling upgrade's (or downgrade's) step: the consumer restarts with the other group
        protocol."""

    # ------------------------------------------------------------------ shared

    def _running(self, connection: str, event: D | AppWakes) -> P | None:
        """The live, running process of ``connection``; an event for a paused one waits for it."""
        proc = self.connections.get(connection)
        if proc is None or not proc.alive:
            return None
        if proc.paused:
            proc.deferred.append(event)
            return None
        return proc

    def _replay_deferred(self, proc: P) -> None:
        """A paused process runs again: what reached it meanwhile, in the order it came."""
        deferred, proc.deferred = proc.deferred, []
        for event in deferred:
            if not proc.alive:
                break
            if isinstance(event, AppWakes):
                # An earlier deferred event may have made the loop poll again since.
                if event.token == proc.app_token:
                    self._app_event(proc, event.activity)
            else:
                self._deferred_event(proc, event)

    def _core_event(self, event: CoreEvent) -> None:
        """The events the driver queues itself, whichever group side runs."""
        match event:
            case ScenarioStep(index=index):
                self._scenario_event(self.scenario.timeline[index])
            case AppWakes():
                self._app_wakes(event)
            case MetadataRefresh(connection=connection):
                proc = self.connections.get(connection)
                if proc is not None and proc.alive:
                    self._push(self.now + self.cfg.metadata_max_age_ms, event)
                    if not proc.paused:
                        self._metadata_refreshed(proc)
            case ProcessStarts(name=name):
                self._start_process(name)
            case ProcessResumes(connection=connection, interruption=interruption):
                proc = self.connections.get(connection)
                if proc is not None and proc.alive:
                    self._resume(proc, interruption)
            case _:
                assert_never(event)

    def _app_wakes(self, event: AppWakes) -> None:
        current = self.connections.get(event.connection)
        if current is not None and event.token == current.app_token:  # else the loop moved on since
            proc = self._running(event.connection, event)
            if proc is not None:
                self._app_event(proc, event.activity)

    def _latency(self) -> int:
        jitter = self.jitter_ms
        return self.latency_ms + (self.rng.randint(0, jitter) if jitter else 0)

    def _lost(self) -> bool:
        """Whether the message sent now is lost (only asked on a lossy network)."""
        return self.now <= self.loss_until_ms and self.loss_rng.random() < self.loss

    def _reconnect(self, proc: P) -> None:
        """The client closed its connection (a request timed out): what is still on the wire over
        it is never read, and its next requests go over a new one."""
        proc.reconnects += 1
        proc.wire = f"{proc.connection}/{proc.reconnects}"
        self.connections[proc.wire] = proc

    def _scenario_event(self, event: ScenarioEvent) -> None:
        match event:
            case ConsumerJoins(consumer=name):
                self._start_process(name)
            case ConsumerLeaves(consumer=name):
                self._stop_if_running(name)
            case ConsumerRestarts(consumer=name, after_ms=after_ms):
                self._stop_if_running(name)
                self._push(self.now + after_ms, ProcessStarts(name))
            case ConsumerCrashes(consumer=name):
                proc = self.processes.get(name)
                if proc is not None and proc.alive:
                    self._crash_process(proc)
            case ConsumerPauses(consumer=name, for_ms=for_ms):
                self._interrupt(name, for_ms, Interruption.PAUSE)
            case ConsumerStalls(consumer=name, for_ms=for_ms):
                self._interrupt(name, for_ms, Interruption.STALL)
            case TopicCreated() | PartitionsAdded():
                self._grow_topics(event)
                self._topics_grown(event)
            case SubscriptionChanged(consumer=name):
                proc = self.processes.get(name)
                if proc is not None and proc.alive:
                    self._subscribe(proc, event)
            case CoordinatorFailsOver():
                self._coordinator_fails_over()
            case ConsumerUpgrades() | ConsumerDowngrades():
                self._switch_protocol(event)
            case _:
                assert_never(event)

    def _stop_if_running(self, name: str) -> None:
        proc = self.processes.get(name)
        if proc is not None and proc.alive:
            self._stop_process(proc)

    def _grow_topics(self, event: TopicsGrown) -> None:
        now = self.now
        match event:
            case TopicCreated(topic=topic, partitions=partitions):
                self.topics[topic] = partitions
                for p in range(partitions):
                    self.partition_created[f"{topic}-{p}"] = now
            case PartitionsAdded(topic=topic, count=count):
                current = self.topics[topic]
                if count > current:
                    self.topics[topic] = count
                    for p in range(current, count):
                        self.partition_created[f"{topic}-{p}"] = now
            case _:
                assert_never(event)

    def _interrupt(self, name: str, for_ms: int, interruption: Interruption) -> None:
        proc = self.processes.get(name)
        if (proc is not None and proc.alive and not proc.paused
                and not (interruption is Interruption.STALL and proc.stalled)):
            self._checkpoint(proc)
            self._polled_until_interrupted(proc)
            if interruption is Interruption.PAUSE:
                proc.paused = True
            else:
                proc.stalled = True
                self._stalled(proc)
            self.interruptions.append((proc.name, self.now, self.now + for_ms))
            self._push(self.now + for_ms, ProcessResumes(proc.connection, interruption))

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
        if old is not None and old.alive and not self._closing(old):
            return  # already running: a join for a running consumer changes nothing
        proc = self._new_process(name)
        self.processes[name] = proc
        self.connections[proc.connection] = proc
        if self._refreshes_metadata(proc):
            self._push(self.now + self.cfg.metadata_max_age_ms, MetadataRefresh(proc.connection))
        self._started(proc)
        self._app_poll(proc)

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
        if positions.keys() != proc.order_set:
            proc.order = sorted(positions, key=partition_sort_key)
            proc.order_set = frozenset(proc.order)
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

    # ------------------------------------------------------------------ ownership, holds, commits

    def _own(self, partition: str, name: str, generation: int) -> None:
        """``name`` owns (and consumes) ``partition`` from now, unless someone already does."""
        if partition not in self.open_ownership:
            self.open_ownership[partition] = (name, self.now, generation)

    def _end_ownership(self, partition: str, name: str) -> None:
        current = self.open_ownership.get(partition)
        if current is not None and current[0] == name:
            del self.open_ownership[partition]
            self._ownership_row(partition, current, self.now)

    def _ownership_row(self, partition: str, current: tuple[str, int, int], end: int) -> None:
        name, start, generation = current
        if end > start:
            self.ownership_rows.append((partition, name, generation, start, end))

    def _hold(self, proc: P, added: Iterable[str], owned: Collection[str], at_ms: int | None = None) -> None:
        """onPartitionsAssigned (from ``at_ms``, default now): the consumer holds ``added`` and,
        having adopted the group's assignment (``owned``: all it owns now), holds afresh what it
        kept of a hold the group had fenced."""
        now = self.now if at_ms is None else at_ms
        generation = proc.generation
        held = proc.held
        # A zombie adopting the assignment of a generation the group has already left behind
        # (an answer that waited out a GC pause) holds it outside the group from the start.
        fenced = proc.fenced_ms
        for partition in added:
            if partition not in held:
                held[partition] = [now, generation, fenced]
        if fenced == NOT_FENCED:
            self._hold_afresh(proc, owned, now)

    def _hold_afresh(self, proc: P, owned: Collection[str], at_ms: int | None = None,
                     generation: int | None = None) -> None:
        """The group counts ``proc`` as the owner of ``owned`` again (from ``at_ms``, default
        now): the fenced part of a hold it kept ends, a hold of its own begins."""
        now = self.now if at_ms is None else at_ms
        held = proc.held
        for partition, entry in held.items():
            if entry[2] != NOT_FENCED and partition in owned:
                self._held_row(proc, partition, entry, now)
                held[partition] = [now, proc.generation if generation is None else generation, NOT_FENCED]

    def _release(self, proc: P, partitions: Iterable[str], end_ms: int | None = None) -> None:
        """onPartitionsRevoked / onPartitionsLost (held until ``end_ms``, when the listener
        returns), or the end of the process."""
        held = proc.held
        if not held:
            return
        end = self.now if end_ms is None else end_ms
        rows, name, incarnation = self.held_rows, proc.name, proc.incarnation
        for partition in partitions:
            entry = held.pop(partition, None)
            if entry is not None and end > entry[0]:
                rows.append((partition, name, incarnation, entry[1], entry[0], end, entry[2]))

    def _held_row(self, proc: P, partition: str, entry: list[int], end_ms: int | None = None) -> None:
        start, generation, fenced = entry
        end = self.now if end_ms is None else end_ms
        if end > start:
            self.held_rows.append((partition, proc.name, proc.incarnation, generation, start, end, fenced))

    def _fence(self, proc: P) -> None:
        """The group no longer counts ``proc`` as the owner of what it holds (it is not told yet)."""
        if proc.fenced_ms == NOT_FENCED:
            proc.fenced_ms = self.now
        for entry in proc.held.values():
            if entry[2] == NOT_FENCED:
                entry[2] = self.now

    def _fence_partitions(self, proc: P, partitions: Iterable[str]) -> None:
        """The group no longer counts ``proc`` as the owner of ``partitions`` (it keeps the rest)."""
        for partition in partitions:
            entry = proc.held.get(partition)
            if entry is not None and entry[2] == NOT_FENCED:
                entry[2] = self.now

    def _unfence(self, proc: P) -> None:
        """The group counts ``proc`` as a member again: what it holds from now is its own."""
        proc.fenced_ms = NOT_FENCED

    def _record_classic(self, record: ClassicRebalanceLog, holdings: Callable[[], dict[str, frozenset[str]]]) -> None:
        """What a classic coordinator logs of the group's rebalances (a classic group, or a
        migrating group's classic phase), for the recorder: ``holdings`` tells what each running
        consumer holds when one begins."""
        recorder = self.recorder
        match record:
            case PreparingRebalance(reason=reason):
                recorder.begin(self.now, reason, holdings)
            case Stabilized(generation=generation, protocol_name=protocol_name, member_ids=member_ids, leader=leader):
                recorder.formed(generation, protocol_name, member_ids, leader)
            case AssignmentReceived(generation=generation, assignment=assignment):
                current = recorder.open
                if current is not None:
                    names = [self._name(m) for m in current.member_ids]
                    recorder.complete(self.now, generation, GroupProtocol.CLASSIC, self._classic_rebalance_protocol(names),
                                      names, None if current.leader_id is None else self._name(current.leader_id),
                                      {self._name(a.member_id): sorted_partitions(a.partitions) for a in assignment})
            case GroupEmpty(generation=generation):
                recorder.emptied(self.now, generation, GroupProtocol.CLASSIC)
            case _:
                assert_never(record)

    def _classic_rebalance_protocol(self, names: Sequence[str]) -> RebalanceProtocol:
        """COOPERATIVE only when every classic member of the generation rebalances cooperatively."""
        processes = self.processes
        protocols = [protocol for name in names if name in processes
                     and (protocol := processes[name].rebalance_protocol) is not None]
        if protocols and all(p is RebalanceProtocol.COOPERATIVE for p in protocols):
            return RebalanceProtocol.COOPERATIVE
        return RebalanceProtocol.EAGER

    def _fence_absent(self, generation: int, answers: Iterable[object]) -> None:
        """A classic generation's join phase completed (``answers``: the coordinator's outputs
        with it): every process of the classic group that did not join it (removed, or a static
        member kept without rejoining: GroupCoordinator.onCompleteJoin keeps those) holds its
        partitions outside the group from now."""
        joined = {id(self.connections.get(answer.connection)) for answer in answers
                  if type(answer) is Respond and type(answer.response) is JoinGroupResponse
                  and answer.response.error_code is ErrorCode.NONE and answer.response.generation_id == generation}
        for proc in self.processes.values():
            member = proc.classic_member if proc.alive else None
            # (One whose machine has dropped its member id is out all the same.)
            if member is not None and (member[0] or proc.former_member_id) and id(proc) not in joined:
                self._fence(proc)

    def _unfence_stored(self, log: Iterable[PersistedRecord]) -> None:
        """A new coordinator serves the classic group as last stored in ``log``: a member the old
        one had removed (or left out of a generation whose assignment was never stored) is a
        member again, its generation valid, if the stored group holds its member id at its
        generation (GroupMetadataManager.loadGroup; removals are stored only with the next
        generation)."""
        group = self.scenario.group
        stored = None
        for record in log:
            if type(record) is GroupMetadataRecord and record.group_id == group:
                stored = record
            elif type(record) is GroupTombstone and record.group_id == group:
                stored = None
        if stored is None:
            return
        members = {member.member_id for member in stored.members}
        for proc in self.processes.values():
            member = proc.classic_member if proc.alive else None
            if member is None or member[0] not in members or member[1] != stored.generation:
                continue
            proc.fenced_ms = NOT_FENCED
            for partition, entry in proc.held.items():
                if entry[2] != NOT_FENCED:
                    self._held_row(proc, partition, entry)
                    proc.held[partition] = [self.now, entry[1], NOT_FENCED]

    def _record_commit(self, member: str, incarnation: int, generation: int, offsets: Iterable[tuple[str, int]],
                       error: ErrorCode) -> None:
        """An OffsetCommit the coordinator answered with ``error``; an accepted one lower than
        the partition's committed offset is an offset regression."""
        now = self.now
        code = int(error)
        rows = self.commit_rows
        accepted = error is ErrorCode.NONE
        committed = self.committed_high
        for partition, offset in offsets:
            rows.append((now, partition, offset, member, generation, code, incarnation))
            if accepted:
                if offset < committed.get(partition, -1):
                    self.offset_regressions += 1
                committed[partition] = offset

    def _process_of_member(self, member_id: str) -> P | None:
        """The running process the group knows as ``member_id``: the consumer's latest, or an
        older one still closing beside it (a restart or an upgrade while it was paused or stalled)."""
        name = self.member_names.get(member_id)
        latest = self.processes.get(name) if name else None
        if latest is not None and latest.alive and member_id in (latest.member_id, latest.former_member_id):
            return latest
        return next((proc for proc in self.connections.values()
                     if proc.alive and member_id in (proc.member_id, proc.former_member_id)), None)

    def _measured_loads(self, proc: P) -> dict[str, tuple[float, ...]] | None:
        """The produce rate of each partition as ``proc``, about to assign as leader, measures
        it: since its previous assignment (the first: over the load's ``measure_window_ms``);
        None without a load model."""
        if self.load is None:
            return None
        now = self.now
        since = self.loads_measured_ms.get(proc.connection, max(0, now - self.load.spec.measure_window_ms))
        self.loads_measured_ms[proc.connection] = now
        return self.load.measured_loads(since, now, self.topics)

    def _name(self, member_id: str) -> str:
        return self.member_names.get(member_id, member_id)

    # ------------------------------------------------------------------ the result

    def _result(self, *, final_owned: Callable[[P], Collection[str]], final_group_state: str,
                final_members: tuple[str, ...], fenced: Callable[[P], bool]) -> SimulationResult:
        """The one result builder: every process's holds end, ownership closes at the end of the
        run, rebalances get their stop-the-world cost, and the tables are built."""
        for proc in self.processes.values():
            if proc.alive:
                self._checkpoint(proc)
                self._release(proc, list(proc.held))
        end = self.end_ms
        for partition, current in list(self.open_ownership.items()):
            self._ownership_row(partition, current, end)
        self.open_ownership.clear()
        records = self.recorder.records(self._group_protocol_now())
        ownership = self._ownership_table()
        rows = list(zip(ownership.partition.tolist(), ownership.member.tolist(), ownership.start_ms.tolist(),
                        ownership.end_ms.tolist(), strict=True))
        metrics, pauses = ownership_metrics(rows, [(r.start_ms, r.end_ms) for r in records], self.partition_created,
                                            self.topic_wanted, end, self.records_twice, self.records_lost)
        final = []
        for spec in self.scenario.consumers:
            running = self.processes.get(spec.id)
            owned = final_owned(running) if running is not None and running.alive else ()
            final.append(MemberPartitions(spec.id, sorted_partitions(owned)))
        return SimulationResult(
            scenario=self.scenario, coordinator_partition=self.offsets_partition,
            rebalances=tuple(replace(r, stop_the_world_partition_ms=pause)
                             for r, pause in zip(records, pauses, strict=True)),
            final_assignment=tuple(final), metrics=Metrics(**metrics), ownership=ownership,
            consumption=self._consumption_table(), commits=self._commit_table(), produced=self._produced_table(),
            final_group_state=final_group_state, final_members=final_members,
            offset_regressions=self.offset_regressions, ownership_conflicts=self.ownership_conflicts,
            log_records=tuple(self.log_records), held=self._held_table(),
            fenced=tuple(spec.id for spec in self.scenario.consumers
                         if (last := self.processes.get(spec.id)) is not None and fenced(last)),
            load=None if self.load is None else self.load.metrics(ownership, self.interruptions, records, end),
            life_starts_ms=tuple(self.life_starts_ms),
        )

    def _ownership_table(self) -> Ownership:
        rows = self.ownership_rows
        order_of = {p: partition_sort_key(p) for p in {row[0] for row in rows}}
        rows.sort(key=lambda row: (order_of[row[0]], row[3], row[1]))
        columns = list(zip(*rows, strict=True)) if rows else [()] * 5
        return Ownership(strings(list(columns[0])), strings(list(columns[1])), ints(list(columns[2])),
                         ints(list(columns[3])), ints(list(columns[4])))

    def _held_table(self) -> Held:
        rows = self.held_rows  # in the order the holds ended
        columns = list(zip(*rows, strict=True)) if rows else [()] * 7
        return Held(strings(list(columns[0])), strings(list(columns[1])),
                    *(ints(list(column)) for column in columns[2:]))

    def _commit_table(self) -> Commits:
        rows = self.commit_rows
        columns = list(zip(*rows, strict=True)) if rows else [()] * 7
        return Commits(ints(list(columns[0])), strings(list(columns[1])), ints(list(columns[2])),
                       strings(list(columns[3])), ints(list(columns[4])), ints(list(columns[5])),
                       ints(list(columns[6])))

    def _consumption_table(self) -> Consumption:
        rows = self.consumption_rows
        columns = list(zip(*rows, strict=True)) if rows else [()] * 7
        return Consumption(strings(list(columns[0])), strings(list(columns[1])),
                           *(ints(list(column)) for column in columns[2:]))

    def _produced_table(self) -> Produced:
        """Every partition's log-end offset at the end of the run."""
        partitions = sorted(self.partition_created, key=partition_sort_key)
        return Produced(strings(partitions), ints([self.traffic.leo_of(p, self.end_ms) for p in partitions]))
