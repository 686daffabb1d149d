"""The simulator for KIP-848 consumer groups (``group_protocol: consumer``, and groups migrating
between the protocols): the group's coordinator (``GroupCoordinatorShard``, which holds the group
as a classic or a consumer group and converts it) and one ``ConsumerMembershipManager`` (or a
classic member, ``sim.classic_member``) per consumer process (``sim.consumer_group_process``), on
the same virtual clock, network latency, traffic and metrics as the classic simulator. The
simulator only delivers: requests, timers and the ``__consumer_offsets`` partition's movements go
to the coordinator, whose records it appends to its copy of the partition (the log a new
coordinator loads after a failover) and whose log records it reads.

Modelling choices (beyond those of ``sim.classic_side``, which this follows):
- Heartbeats run on the consumer's background thread (the new consumer's design): a stalled
  application keeps heartbeating, a paused process (GC, ``pause``) does nothing at all.
- Listener callbacks (and the commit before a revocation) run on the application thread, i.e.
  inside ``poll()``: at once for a continuously consuming consumer, after the current batch for
  one with a processing cost, and not before a stall ends. ``revocation_ms`` / ``assignment_ms``
  are the work done inside them; the member acknowledges once they are done.
- A partition is owned (consumed) from the end of ``on_partitions_assigned`` until
  ``on_partitions_revoked`` / ``on_partitions_lost`` runs or the process dies.
- OffsetCommit and OffsetFetch go straight to the coordinator (no latency, never lost): only
  their effect on duplicates matters here.
- ``network_loss``: a heartbeat or its answer is lost as in ``sim.classic_side``; the heartbeat then
  times out after ``request_timeout_ms`` (``RequestTimesOut``), its connection is closed and the
  member retries after its backoff with every field.
- A fatal error (GROUP_MAX_SIZE_REACHED, UNRELEASED_INSTANCE_ID, ...) ends the process: the
  application's ``poll()`` throws it, and a service exits (a ``join`` event starts it again).
- A rebalance is a window that opens at a group epoch bump and closes when the group is Stable
  (or Empty) again; bumps inside an open window extend it. Kafka counts every bump as a
  rebalance (its ``consumer-group-rebalance`` sensor); the log has one "Bumped group epoch" line each.
- A joining or acknowledging member answered with an error (fenced at epoch 0 because the
  group still holds it under an older epoch, or a coordinator still loading) heartbeats again at
  once, as Kafka's does, once per round trip; at zero latency that retry leaves on the next
  millisecond (``_send_heartbeat``), so virtual time reaches the session timeout or the load's end.
- Coordinator timers that are re-armed on every heartbeat (session timeouts) keep one heap
  entry each, moved forward lazily, so a heartbeat costs no heap growth.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import assert_never

from kafka_rebalance.model import GroupProtocol
from kafka_rebalance.model.java import kafka_random_uuid
from kafka_rebalance.protocol.classic import consumer_events as cc_events
from kafka_rebalance.protocol.classic import coordinator_events as cl
from kafka_rebalance.protocol.classic.consumer import ConsumerConfig
from kafka_rebalance.protocol.classic.group import CoordinatorConfig, coordinator_partition
from kafka_rebalance.protocol.effects import ArmTimer, CancelTimer, Log
from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.logrecords import (
    ConsumerGroupConverted,
    ConsumerGroupEpochBumped,
    ConsumerGroupLoaded,
    ConsumerGroupStateChanged,
    ConsumerMemberAssignmentUpdated,
    ConsumerMemberFenced,
    ConsumerMemberJoined,
    ConsumerMemberLeft,
    ConsumerStaticMemberReplaced,
    ConsumerTargetAssignmentComputed,
    LogRecord,
    MemberFailed,
    MemberLeft,
    Stabilized,
)
from kafka_rebalance.protocol.modern.consumer import coordinator_events as ce
from kafka_rebalance.protocol.modern.consumer import member_events as me
from kafka_rebalance.protocol.modern.consumer.assignment import to_strings
from kafka_rebalance.protocol.modern.consumer.coordinator import ConsumerGroupConfig
from kafka_rebalance.protocol.modern.consumer.member import (
    ConsumerMembershipManager,
    ConsumerMemberState,
    MemberConfig,
)
from kafka_rebalance.protocol.modern.consumer.records import OffsetsTopicRecord
from kafka_rebalance.protocol.modern.shard import (
    AppendRecord,
    ConsumerGroupTimer,
    GroupCoordinatorShard,
    PartitionLoaded,
    PartitionLoading,
    PartitionResigned,
    ShardInput,
    ShardOutput,
)
from kafka_rebalance.sim.classic_member import (
    ClassicDisconnect,
    ClassicFindCoordinator,
    ClassicInput,
    ClassicMembership,
    ClassicOutput,
    ClassicSend,
)
from kafka_rebalance.sim.consumer_group_process import ConsumerGroupProcess, ListenerCallback
from kafka_rebalance.sim.driver import ClassicRebalanceLog, Driver
from kafka_rebalance.sim.events import (
    AppActivity,
    AppWakes,
    ConsumerGroupDeferrable,
    ConsumerGroupEvent,
    CoordinatorLoaded,
    GroupRequestArrives,
    GroupResponseArrives,
    GroupTimer,
    GroupTimerFires,
    MemberTimer,
    MemberTimerFires,
    MetadataRefresh,
    ProcessResumes,
    ProcessStarts,
    RequestTimesOut,
    ScenarioStep,
)
from kafka_rebalance.sim.result import NOT_FENCED, LoggedRecord, SimulationResult
from kafka_rebalance.sim.scenario import ConsumerSpec, Scenario
from kafka_rebalance.sim.scenario_events import (
    ConsumerDowngrades,
    ConsumerUpgrades,
    PartitionsAdded,
    ProtocolSwitch,
    SubscriptionChanged,
    TopicCreated,
    TopicsGrown,
)


class ConsumerGroupSide(Driver[ConsumerGroupProcess, ConsumerGroupEvent, ConsumerGroupDeferrable]):
    def __init__(self, scenario: Scenario, seed: int | None = None):
        super().__init__(scenario, seed)
        self.offsets_partition = coordinator_partition(scenario.group, self.cfg.offsets_topic_num_partitions)
        self.broker = self.offsets_partition % self.cfg.brokers
        config = ConsumerGroupConfig(
            session_timeout_ms=self.cfg.consumer_session_timeout_ms,
            heartbeat_interval_ms=self.cfg.consumer_heartbeat_interval_ms,
            max_size=self.cfg.consumer_max_size, migration_policy=self.cfg.migration_policy)
        self.group_config = config
        # Each consumer incarnation names itself (KIP-1082); its own stream keeps latency draws
        # where they were.
        self.member_id_rng = random.Random(f"member-ids/{self.seed}")
        # The coordinators' member-id streams start where the simulator has always drawn them
        # from its main stream (``_group_seed``): the consumer group's first one now.
        self.pending_group_seed: int | None = self.rng.getrandbits(32)
        # The protocol the group speaks (as the coordinator last showed it): a rolling upgrade
        # starts from a running classic group, which the first ConsumerGroupHeartbeat converts.
        self.group_protocol = scenario.group_protocol
        classic_seed = None
        if scenario.group_protocol is GroupProtocol.CLASSIC:
            self.pending_group_seed = None
            classic_seed = self.rng.getrandbits(32)
        # The group's coordinator: every request, timer and partition event goes to it.
        self.shard = self._new_shard(None, classic_seed)
        # The protocol each consumer runs when it next starts (``upgrade`` / ``downgrade`` events change it).
        self.protocol_of: dict[str, GroupProtocol] = {c.id: scenario.group_protocol for c in scenario.consumers}
        self.coordinator_available = True
        self.coordinator_epoch = 0
        # __consumer_offsets as the coordinators wrote it, the classic group's records and the
        # consumer group's alike: a new coordinator loads the group from it after a failover.
        self.offsets_records: list[OffsetsTopicRecord] = []
        # Armed deadlines, and the deadline of each timer's one queue entry (moved forward lazily).
        self.coordinator_timers: dict[GroupTimer, int] = {}
        self.coordinator_scheduled: dict[GroupTimer, int] = {}
        self.member_timers: dict[MemberTimerFires, int] = {}
        self.member_scheduled: dict[MemberTimerFires, int] = {}
        self.last_reason = "the group changed"
        self.requester: str | None = None
        self.requester_sent_ms = 0  # when the request being handled left its consumer
        # When the last message sent on a connection arrives, per direction (to the coordinator, to the member).
        self.request_arrival_ms: dict[str, int] = {}
        self.response_arrival_ms: dict[str, int] = {}

    # ------------------------------------------------------------------ set-up helpers

    def _new_shard(self, partitions: tuple[int, ...] | None, classic_seed: int | None) -> GroupCoordinatorShard:
        return GroupCoordinatorShard(self.topics, CoordinatorConfig(
            group_initial_rebalance_delay_ms=self.cfg.group_initial_rebalance_delay_ms,
            group_min_session_timeout_ms=self.cfg.group_min_session_timeout_ms,
            group_max_session_timeout_ms=self.cfg.group_max_session_timeout_ms,
            offsets_topic_num_partitions=self.cfg.offsets_topic_num_partitions,
            broker_id=self.broker), self.group_config, partitions=partitions, seeds=self._group_seed,
            classic_seed=classic_seed, classic_seeds=lambda: self.rng.getrandbits(32))

    def _group_seed(self) -> int:
        """Where a consumer group's member-id stream starts (the shard asks when it creates one):
        the seed drawn for it at the start or at a load, else a fresh draw, as the simulator has
        always drawn them (a classic coordinator's: a fresh draw when the shard starts one)."""
        seed = self.pending_group_seed
        if seed is None:
            return self.rng.getrandbits(32)
        self.pending_group_seed = None
        return seed

    def _respond(self, connection: str, response: ce.Response | cl.GroupResponse) -> None:
        arrival = self._in_order_arrival(self.response_arrival_ms, connection)
        if self.lossy and self._lost():
            # A heartbeat's lost answer times its request out (a classic member's machine times
            # its own requests out).
            proc = self.connections.get(connection)
            if type(response) is ce.ConsumerGroupHeartbeatResponse and proc is not None:
                self._push(self.requester_sent_ms + self.cfg.request_timeout_ms, RequestTimesOut(proc.connection, connection))
            return
        self._push(arrival, GroupResponseArrives(connection, response))

    # ------------------------------------------------------------------ main loop

    def _handle(self, time: int, seq: int, event: ConsumerGroupEvent) -> None:
        self.now = time
        # The most frequent events (heartbeats and their timers) go straight to their handlers.
        if type(event) is GroupRequestArrives:
            self._deliver_to_coordinator(event)
        elif type(event) is MemberTimerFires:
            self._member_timer(event, time)
        else:
            self._dispatch(event)

    def _dispatch(self, event: ConsumerGroupEvent) -> None:
        match event:
            case GroupRequestArrives():
                self._deliver_to_coordinator(event)
            case GroupResponseArrives(connection=connection, response=response):
                proc = self._running(connection, event)
                if proc is not None and connection == proc.wire:  # else its connection was closed
                    self._deliver_response(proc, response)
            case RequestTimesOut(connection=connection, wire=wire):
                proc = self._running(connection, event)
                if proc is not None:
                    self._request_timed_out(proc, wire)
            case MemberTimerFires():
                self._member_timer(event, self.now)
            case GroupTimerFires(coordinator_epoch=epoch, timer=timer):
                self._coordinator_timer(epoch, timer, self.now)
            case ScenarioStep() | AppWakes() | MetadataRefresh() | ProcessStarts() | ProcessResumes():
                self._core_event(event)
            case CoordinatorLoaded(leader_epoch=epoch):
                if epoch == self.coordinator_epoch:
                    self._coordinator_loaded()
            case _:
                assert_never(event)

    def _deliver_response(self, proc: ConsumerGroupProcess, response: ce.Response | cl.GroupResponse) -> None:
        if type(response) is cl.JoinGroupResponse and response.error_code is ErrorCode.NONE:
            self._unfence(proc)  # a classic member in the group's current generation
        if isinstance(response, ce.ConsumerGroupHeartbeatResponse):
            if response.error_code is not ErrorCode.NONE:
                proc.error_answer_ms = self.now
            self._member_input(proc, me.ResponseReceived(response))
        elif isinstance(response, ce.OffsetCommitResponse | ce.OffsetFetchResponse):
            raise AssertionError(f"{response!r}: OffsetCommit and OffsetFetch go straight to the coordinator")
        else:  # to a classic member (a rolling upgrade)
            self._member_input(proc, cc_events.ResponseReceived(response))

    # ------------------------------------------------------------------ coordinator side

    def _request_timed_out(self, proc: ConsumerGroupProcess, wire: str) -> None:
        """NetworkClient times the heartbeat out and closes the connection; the heartbeat
        manager's onFailure backs off and retries (AbstractHeartbeatRequestManager.onFailure).
        Requests still in flight on that connection fail with it: one failure for the machine."""
        if wire != proc.wire:
            return  # that connection was closed already
        self._reconnect(proc)
        self._member_input(proc, me.RequestFailed())

    def _deliver_to_coordinator(self, arrives: GroupRequestArrives) -> None:
        connection, request, ignore_response = arrives.connection, arrives.request, arrives.ignore_response
        self.requester_sent_ms = arrives.sent_ms
        if (self.coordinator_available and isinstance(request, ce.ConsumerGroupHeartbeatRequest)
                and request.member_epoch == 0):
            topics = request.subscribed_topic_names or ()
            for topic in topics:
                self.topic_wanted.setdefault(topic, self.now)
        event: ShardInput
        if isinstance(request, ce.ConsumerGroupHeartbeatRequest | ce.OffsetCommitRequest | ce.OffsetFetchRequest):
            event = ce.RequestReceived(connection, request)
        else:
            event = cl.RequestReceived(connection, request)
        self.requester = connection
        self._to_shard(event, connection if ignore_response else None)
        self.requester = None

    def _to_shard(self, event: ShardInput, ignore_responses_to: str | None = None) -> None:
        """One event to the coordinator, and what it did: its outputs, and whether the group changed
        protocol meanwhile (a conversion voids the timers of the protocol it leaves, and a group
        converted without members starts its epochs again)."""
        group_id = self.scenario.group
        had_classic_group = self.shard.classic_group(group_id) is not None
        out = self.shard.handle(event, self.now)
        if ignore_responses_to is not None:
            out = [o for o in out if not (isinstance(o, ce.Respond) and o.connection == ignore_responses_to)]
        self._shard_output(out)
        now_type = self.shard.group_type(group_id)
        if now_type is None:
            return
        protocol = GroupProtocol.CLASSIC if now_type == "classic" else GroupProtocol.CONSUMER
        if protocol is self.group_protocol:
            return
        self.group_protocol = protocol
        to_classic = protocol is GroupProtocol.CLASSIC
        for timer in [t for t in self.coordinator_timers if isinstance(t, ConsumerGroupTimer) is to_classic]:
            del self.coordinator_timers[timer]
        converted = any(type(o) is Log and type(o.record) is ConsumerGroupConverted for o in out)
        if protocol is GroupProtocol.CLASSIC:
            self.pending_group_seed = None
        if not converted and (protocol is GroupProtocol.CLASSIC or had_classic_group):
            self.life_starts_ms.append(self.now)  # an empty group replaced: epochs start again

    def _name_member(self, member_id: str, connection: str) -> None:
        proc = self.connections.get(connection)
        if proc is not None:
            self.member_names[member_id] = proc.name

    def _arm_coordinator_timer(self, timer: GroupTimer, deadline: int) -> None:
        self.coordinator_timers[timer] = deadline
        scheduled = self.coordinator_scheduled.get(timer)
        if scheduled is None or deadline < scheduled:
            self.coordinator_scheduled[timer] = deadline
            self._push(deadline, GroupTimerFires(self.coordinator_epoch, timer))

    def _shard_output(self, out: list[ShardOutput]) -> None:
        now = self.now
        for item in out:
            if type(item) is ArmTimer:  # the session timeout every heartbeat moves on
                self._arm_coordinator_timer(item.timer, item.deadline_ms)
                continue
            if type(item) is ce.Respond:
                connection, response = item.connection, item.response
                if type(response) is ce.ConsumerGroupHeartbeatResponse:
                    proc = self.connections.get(connection)
                    if response.member_id and proc is not None:
                        self.member_names[response.member_id] = proc.name
                    if (not self.lossy and proc is not None and response.error_code is ErrorCode.NONE
                            and response.assignment is None
                            and self.response_arrival_ms.get(connection, 0) <= now
                            and proc.machine.member_epoch == response.member_epoch
                            and proc.machine.heartbeat_interval_ms == response.heartbeat_interval_ms
                            and proc.alive and not proc.paused):
                        # Nothing in it for the member but the end of its request: deliver at once.
                        self._member_input(proc, me.ResponseReceived(response))
                        continue
                elif type(response) is cl.JoinGroupResponse and response.member_id:
                    self._name_member(response.member_id, connection)
                self._respond(connection, response)
                continue
            match item:
                case ce.Respond():
                    raise AssertionError("answered above")
                case cl.Respond(connection=classic_connection, response=classic_response):
                    if isinstance(classic_response, cl.JoinGroupResponse) and classic_response.member_id:
                        self._name_member(classic_response.member_id, classic_connection)
                    self._respond(classic_connection, classic_response)
                case ArmTimer(timer=timer, deadline_ms=deadline):
                    self._arm_coordinator_timer(timer, deadline)
                case CancelTimer(timer=timer):
                    self.coordinator_timers.pop(timer, None)
                case Log(record=record):
                    if type(record) is Stabilized:
                        self._fence_absent(record.generation, out)
                    self._on_log(record)
                case AppendRecord(record=record):
                    self.offsets_records.append(record)
                case _:
                    assert_never(item)

    def _coordinator_timer(self, epoch: int, timer: GroupTimer, time: int) -> None:
        if epoch != self.coordinator_epoch:
            return
        if self.coordinator_scheduled.get(timer) == time:
            del self.coordinator_scheduled[timer]
        deadline = self.coordinator_timers.get(timer)
        if deadline is None:
            return
        if deadline > time:
            if timer not in self.coordinator_scheduled:
                self.coordinator_scheduled[timer] = deadline
                self._push(deadline, GroupTimerFires(epoch, timer))
            return
        del self.coordinator_timers[timer]
        if not self.coordinator_available:
            return
        self._to_shard(timer)

    # ------------------------------------------------------------------ member side

    def _member_timer(self, fires: MemberTimerFires, time: int) -> None:
        """``fires`` is also the key of the timer's armed deadline and of its one queue entry."""
        if self.member_scheduled.get(fires) == time:
            del self.member_scheduled[fires]
        deadline = self.member_timers.get(fires)
        if deadline is None:
            return
        if deadline > time:  # re-armed later (poll timers move with every poll): one heap entry each
            if fires not in self.member_scheduled:
                self.member_scheduled[fires] = deadline
                self._push(deadline, fires)
            return
        del self.member_timers[fires]
        proc = self._running(fires.connection, fires)
        if proc is None:
            return
        timer = fires.timer
        if type(timer) is me.PollTimerExpired and proc.continuous and not proc.stalled:
            # A continuously consuming application is always inside poll(): the timer never expires.
            self._member_input(proc, me.Poll())
            return
        self._member_input(proc, timer)

    def _member_input(self, proc: ConsumerGroupProcess, event: ClassicInput) -> None:
        machine = proc.machine
        before = machine.pending_callbacks
        member_id = machine.member_id
        if type(event) is me.CallbacksCompleted:
            before -= 1
        if isinstance(machine, ClassicMembership):
            out: list[me.Output] | list[ClassicOutput] = machine.handle(event, self.now)
        else:
            # The classic machine's timers and answers never reach a member of the new consumer.
            assert isinstance(event, me.Input), f"{event!r} is not an input of the new consumer"
            out = machine.handle(event, self.now)
        if member_id and machine.member_id != member_id:
            proc.former_member_id = member_id
        if out:
            self._member_output(proc, out, before)

    def _arm_member_timer(self, proc: ConsumerGroupProcess, timer: MemberTimer, deadline: int) -> None:
        fires = proc.timer_events.get(timer)
        if fires is None:
            fires = proc.timer_events[timer] = MemberTimerFires(proc.connection, timer)
        self.member_timers[fires] = deadline
        scheduled = self.member_scheduled.get(fires)
        if scheduled is None or deadline < scheduled:
            self.member_scheduled[fires] = deadline
            self._push(deadline, fires)

    def _member_output(self, proc: ConsumerGroupProcess, out: list[me.Output] | list[ClassicOutput], pending_before: int) -> None:
        """``pending_before``: the listener-callback batches the machine waited for before its input."""
        if len(out) == 2:  # the background thread's heartbeat and its next turn
            first, second = out
            if type(first) is me.Send and type(second) is ArmTimer and first.request.member_epoch >= 0:
                self._send_heartbeat(proc, first.request, first.ignore_response)
                self._arm_member_timer(proc, second.timer, second.deadline_ms)
                return
        elif len(out) == 1 and type(only := out[0]) is ArmTimer:  # a poll's max.poll.interval.ms timer
            self._arm_member_timer(proc, only.timer, only.deadline_ms)
            return
        new_batch = proc.machine.pending_callbacks > pending_before
        callbacks: list[ListenerCallback] = []
        fatal = False
        find_coordinator = False
        for item in out:
            match item:
                case me.Send(request=request, ignore_response=ignore):
                    self._send_heartbeat(proc, request, ignore)
                    if request.member_epoch < 0 and proc.positions:
                        # Out of the group: whatever the listener does later, it consumes no more.
                        self._checkpoint(proc)
                        for partition in list(proc.positions):
                            self._stop_consuming(proc, partition)
                    if request.member_epoch < 0 and proc.closing and not proc.machine.pending_callbacks:
                        self._end_process(proc)
                case ArmTimer(timer=timer, deadline_ms=deadline):
                    self._arm_member_timer(proc, timer, deadline)
                case CancelTimer(timer=timer):
                    fires = proc.timer_events.get(timer)
                    if fires is not None:
                        self.member_timers.pop(fires, None)
                case me.CommitOffsets() | me.PartitionsRevoked() | me.PartitionsAssigned() | me.PartitionsLost():
                    callbacks.append(item)
                case me.Fatal():
                    fatal = True
                case ClassicFindCoordinator():
                    find_coordinator = True
                case ClassicDisconnect():
                    self._reconnect(proc)
                case ClassicSend(request=request):
                    arrival = self._in_order_arrival(self.request_arrival_ms, proc.wire)
                    if not (self.lossy and self._lost()):
                        self._push(arrival, GroupRequestArrives(proc.wire, request, False, self.now))
                    if isinstance(request, cl.LeaveGroupRequest):
                        # The coordinator's removal (MemberLeft) fences what it still holds (after a
                        # poll timeout, until its loop polls again), by its former member id.
                        self._checkpoint(proc)
                        for partition in list(proc.positions):
                            self._stop_consuming(proc, partition)
                        if proc.closing and not proc.machine.pending_callbacks:
                            self._end_process(proc)
                case _:
                    assert_never(item)
        if callbacks:
            if fatal or not new_batch:
                self._run_callbacks(proc, callbacks, complete=False)
            else:
                proc.callbacks.append(callbacks)
                self._maybe_run_callbacks(proc)
        if fatal:
            self._end_process(proc)  # poll() throws; the application exits
        elif find_coordinator and proc.alive:
            # Any broker answers FindCoordinator from the partition's leader (no latency modelled).
            found = (cl.FindCoordinatorResponse(ErrorCode.NONE, self.broker) if self.coordinator_available
                     else cl.FindCoordinatorResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            self._member_input(proc, cc_events.ResponseReceived(found))

    def _send_heartbeat(self, proc: ConsumerGroupProcess, request: ce.ConsumerGroupHeartbeatRequest,
                        ignore_response: bool) -> None:
        """A ConsumerGroupHeartbeat on the member's connection. A joining or acknowledging
        member heartbeats again as soon as its last one is answered, even with an error
        (AbstractHeartbeatRequestManager.poll: shouldHeartbeatNow bypasses the backoff;
        onErrorResponse skips it after FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID, and after
        COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR the member first finds the coordinator
        again). So a member the group still holds under an older epoch (its leave heartbeat
        answered COORDINATOR_LOAD_IN_PROGRESS and ignored) is fenced again and again, once per
        round trip, until the coordinator's session timeout removes it
        (GroupMetadataManager.throwIfConsumerGroupMemberEpochIsInvalid fences epoch 0 too; a
        fenced heartbeat does not extend the session), and a joining member retries a loading
        coordinator until it has loaded. A round trip takes time on any network: below the
        clock's millisecond (zero latency) a heartbeat sent in answer to an error leaves on the
        next one, so virtual time reaches that session timeout or load as real time does."""
        sent_ms = self.now
        if (request.member_epoch >= 0 and proc.error_answer_ms == self.now and not self.latency_ms
                and not self.jitter_ms):
            sent_ms = self.now + 1
        arrival = self._in_order_arrival(self.request_arrival_ms, proc.wire, sent_ms)
        if self.lossy and self._lost():
            if not ignore_response:
                self._push(sent_ms + self.cfg.request_timeout_ms, RequestTimesOut(proc.connection, proc.wire))
            return
        self._push(arrival, GroupRequestArrives(proc.wire, request, ignore_response, sent_ms))

    def _maybe_run_callbacks(self, proc: ConsumerGroupProcess) -> None:
        """Listener callbacks run on the application thread, inside poll()."""
        if not proc.alive or proc.paused or proc.busy or not proc.callbacks:
            return
        if proc.stalled and not proc.closing:
            return
        self._run_callbacks(proc, proc.callbacks.pop(0), complete=True)

    def _run_callbacks(self, proc: ConsumerGroupProcess, callbacks: Sequence[ListenerCallback], complete: bool) -> None:
        """The listener's callbacks, one after the other: the consumer holds what it revokes until
        its onPartitionsRevoked returns, and what it is given from its onPartitionsAssigned."""
        self._checkpoint(proc)
        work = 0
        for item in callbacks:
            match item:
                case me.CommitOffsets(partitions=partitions):
                    self._commit(proc, {p: proc.positions[p] for p in partitions if p in proc.positions})
                case me.PartitionsRevoked(partitions=partitions) | me.PartitionsLost(partitions=partitions):
                    for partition in partitions:
                        self._stop_consuming(proc, partition)
                    if partitions and isinstance(item, me.PartitionsRevoked):
                        work += self.cfg.revocation_ms
                    self._release(proc, partitions, self.now + work if complete else None)
                case me.PartitionsAssigned(partitions=partitions):
                    self._hold(proc, partitions, proc.machine.owned, self.now + work if complete else None)
                    if partitions:
                        work += self.cfg.assignment_ms
                case _:
                    assert_never(item)
        if not complete:
            return
        proc.busy = True
        proc.app_token += 1
        self._push(self.now + work, AppWakes(proc.connection, proc.app_token, AppActivity.CALLBACKS_DONE))

    def _callbacks_done(self, proc: ConsumerGroupProcess) -> None:
        proc.mark_ms = self.now
        # Still busy while the member takes it in: callbacks it asks for next run after the new
        # assignment is in effect, not before.
        self._member_input(proc, me.CallbacksCompleted())
        proc.busy = False
        if not proc.alive:
            return
        consuming = proc.machine.state in (ConsumerMemberState.ACKNOWLEDGING, ConsumerMemberState.STABLE, ConsumerMemberState.RECONCILING)
        revoking = set(proc.machine.pending_revocation)
        wanted = [p for p in proc.machine.owned if p not in proc.positions and p not in revoking] if consuming else []
        if wanted:
            committed = self._committed_offsets()
            for partition in wanted:
                holder = self.open_ownership.get(partition)
                if holder is not None and holder[0] != proc.name:
                    self.ownership_conflicts += 1
                proc.positions[partition] = max(committed.get(partition, 0), 0)
                self._own(partition, proc.name, proc.machine.member_epoch)
        if proc.closing and proc.machine.state in (ConsumerMemberState.UNSUBSCRIBED, ConsumerMemberState.FATAL):
            self._end_process(proc)
            return
        if proc.callbacks:
            self._maybe_run_callbacks(proc)
        else:
            self._app_poll(proc)

    def _committed_offsets(self) -> dict[str, int]:
        group_id = self.scenario.group
        classic = self.shard.classic_group(group_id)
        if classic is not None:
            return classic.offsets
        group = self.shard.consumer_groups.get(group_id)
        if group is not None:
            return group.offsets
        # No group loaded (a new coordinator still loading it): what the partition holds.
        committed: dict[str, int] = {}
        for record in self.offsets_records:
            if type(record) is cl.OffsetCommitRecord and record.group_id == group_id:
                committed.update((entry.partition, entry.offset) for entry in record.offsets)
            elif type(record) is cl.GroupTombstone and record.group_id == group_id:
                committed.clear()
        return committed

    def _stop_consuming(self, proc: ConsumerGroupProcess, partition: str) -> None:
        proc.positions.pop(partition, None)
        self._end_ownership(partition, proc.name)

    def _commit(self, proc: ConsumerGroupProcess, offsets: dict[str, int]) -> None:
        if not offsets or not self.coordinator_available:
            return
        epoch = proc.machine.member_epoch
        entries = tuple(sorted(offsets.items()))
        code = ErrorCode.NONE
        event: ShardInput
        if isinstance(proc.machine, ClassicMembership):
            # A classic consumer's OffsetCommit (below v9: the generation id), to whichever group it is.
            event = cl.RequestReceived(proc.connection, cl.OffsetCommitRequest(
                self.scenario.group, epoch, proc.machine.member_id, proc.spec.group_instance_id,
                tuple(cl.PartitionOffset(p, o) for p, o in entries)))
        else:
            event = ce.RequestReceived(proc.connection, ce.OffsetCommitRequest(self.scenario.group, proc.machine.member_id,
                                                                        epoch, entries))
        # Straight to the coordinator (no latency, never lost): only its answer and records count.
        for output in self.shard.handle(event, self.now):
            if isinstance(output, AppendRecord):
                self.offsets_records.append(output.record)
            elif isinstance(output, ce.Respond | cl.Respond):
                code = getattr(output.response, "error_code", ErrorCode.NONE)
        self._record_commit(proc.name, proc.incarnation, epoch, entries, code)

    # ------------------------------------------------------------------ consumption

    def _checkpoint(self, proc: ConsumerGroupProcess) -> None:
        """Before a process's consumption state changes: its due auto-commits, then consume to now."""
        if proc.flowing and self.scenario_auto_commit(proc) and proc.positions and self.now >= proc.next_commit_ms:
            interval = proc.auto_commit_interval_ms
            tick = proc.next_commit_ms + (self.now - proc.next_commit_ms) // interval * interval
            proc.next_commit_ms = tick + interval
            if tick >= proc.mark_ms:
                leo = self.traffic.leo_of
                self._commit(proc, {p: leo(p, tick) for p in proc.positions})
        self._sync(proc)
        proc.mark_ms = self.now

    def scenario_auto_commit(self, proc: ConsumerGroupProcess) -> bool:
        return bool(proc.spec.setting(self.cfg, "enable_auto_commit"))

    def _app_poll(self, proc: ConsumerGroupProcess) -> None:
        """The application calls poll(): callbacks first, then (batch consumers) the next batch."""
        if not proc.alive or proc.paused or proc.stalled or proc.busy or proc.closing:
            return
        self._member_input(proc, me.Poll())
        if proc.callbacks:
            self._maybe_run_callbacks(proc)
            return
        if proc.busy:
            # The poll's own listener callbacks are running (a classic member that rejoins from
            # poll() revokes first): poll() returns no records until they have.
            return
        if proc.continuous or not proc.alive:
            return
        if self.scenario_auto_commit(proc) and self.now >= proc.next_commit_ms and proc.positions:
            proc.next_commit_ms = self.now + proc.auto_commit_interval_ms
            self._commit(proc, dict(proc.positions))
        self._take_batch(proc)

    def _batch_taken(self, proc: ConsumerGroupProcess) -> None:
        proc.busy = True

    def _app_event(self, proc: ConsumerGroupProcess, activity: AppActivity) -> None:
        if activity is AppActivity.CALLBACKS_DONE:
            self._callbacks_done(proc)
            return
        if activity is AppActivity.BATCH_DONE:
            for partition, start, end in proc.batch:
                if partition in proc.positions:
                    self._processed(proc, partition, start, end, proc.batch_start)
            proc.batch = []
            proc.busy = False
        self._app_poll(proc)

    def _abandon_batch(self, proc: ConsumerGroupProcess) -> None:
        """A crash or close mid-batch: what was processed counts, and a commit on close claims only that."""
        if proc.batch:
            self._finish_batch_partially(proc, rewind=True)
            proc.busy = False

    # ------------------------------------------------------------------ processes

    def _new_process(self, name: str) -> ConsumerGroupProcess:
        spec = self.consumer_specs[name]
        incarnation, connection = self._new_incarnation(name)
        config = MemberConfig(
            group_id=self.scenario.group, group_instance_id=spec.group_instance_id,
            max_poll_interval_ms=spec.setting(self.cfg, "max_poll_interval_ms"),
            server_assignor=self.scenario.assignor,
            enable_auto_commit=spec.setting(self.cfg, "enable_auto_commit"),
            client_id=spec.client_id or name)
        machine: ConsumerMembershipManager | ClassicMembership
        if self.protocol_of[name] is GroupProtocol.CONSUMER:
            machine = ConsumerMembershipManager(config, kafka_random_uuid(self.member_id_rng))
        else:
            machine = ClassicMembership(ConsumerConfig(
                client_id=spec.client_id or name, group_id=self.scenario.group, strategies=tuple(spec.strategies),
                topics=tuple(spec.subscribe or ()), pattern=spec.pattern, group_instance_id=spec.group_instance_id,
                session_timeout_ms=spec.setting(self.cfg, "session_timeout_ms"),
                heartbeat_interval_ms=spec.setting(self.cfg, "heartbeat_interval_ms"),
                max_poll_interval_ms=spec.setting(self.cfg, "max_poll_interval_ms"),
                enable_auto_commit=False,  # the simulator commits (ticks, before revocation)
                auto_commit_interval_ms=spec.setting(self.cfg, "auto_commit_interval_ms"),
                background_heartbeat=True, strategy_options=spec.strategy_options,
                # Without loss every request is answered: no timeout to arm.
                request_timeout_ms=self.cfg.request_timeout_ms if self.lossy else None), self.topics, self.broker)
        return ConsumerGroupProcess(name=name, spec=spec, connection=connection, wire=connection, machine=machine,
                       ms_per_record=spec.processing_ms_per_record,
                       max_poll_records=spec.setting(self.cfg, "max_poll_records"),
                       auto_commit_interval_ms=spec.setting(self.cfg, "auto_commit_interval_ms"),
                       mark_ms=self.now, next_commit_ms=self.now + spec.setting(self.cfg, "auto_commit_interval_ms"),
                       incarnation=incarnation)

    def _subscription(self, spec: ConsumerSpec) -> me.Subscribe:
        if spec.pattern is not None:
            return me.Subscribe((), spec.pattern)
        return me.Subscribe(tuple(spec.subscribe or ()))

    def _started(self, proc: ConsumerGroupProcess) -> None:
        self._member_input(proc, self._subscription(proc.spec))
        if proc.spec.pattern is not None:
            for topic in self.topics:
                if re.fullmatch(proc.spec.pattern, topic):
                    self.topic_wanted.setdefault(topic, self.now)

    def _refreshes_metadata(self, proc: ConsumerGroupProcess) -> bool:
        return isinstance(proc.machine, ClassicMembership)

    def _metadata_refreshed(self, proc: ConsumerGroupProcess) -> None:
        # A classic member learns of new partitions and pattern topics from its own metadata (its
        # leader then rejoins: a rebalance in the classic phase, as in a classic group).
        self._member_input(proc, cc_events.MetadataUpdate(dict(self.topics)))

    def _end_process(self, proc: ConsumerGroupProcess) -> None:
        if not proc.alive:
            return
        self._checkpoint(proc)
        for partition in list(proc.positions):
            self._stop_consuming(proc, partition)
        self._release(proc, list(proc.held))
        proc.alive = False

    def _deferred_event(self, proc: ConsumerGroupProcess, event: ConsumerGroupDeferrable) -> None:
        match event:
            case MemberTimerFires(timer=timer):  # (its deadline was taken when it fired)
                self._member_input(proc, timer)
            case GroupResponseArrives(connection=connection, response=response):
                if connection == proc.wire:  # else its connection was closed meanwhile
                    self._deliver_response(proc, response)
            case RequestTimesOut(wire=wire):
                self._request_timed_out(proc, wire)
            case _:
                assert_never(event)

    def _polled_until_interrupted(self, proc: ConsumerGroupProcess) -> None:
        # A flowing KIP-848 member's poll timer is re-armed only when it fires (_member_timer), so
        # its deadline may be up to max.poll.interval.ms older than the loop's last poll(). Kafka
        # resets it on every poll() (AsyncKafkaConsumer.poll -> PollEvent ->
        # AbstractHeartbeatRequestManager.resetPollTimer): the interval starts now.
        if proc.flowing and not isinstance(proc.machine, ClassicMembership):
            self._member_input(proc, me.Poll())

    def _resumed_from_pause(self, proc: ConsumerGroupProcess) -> None:
        # The background thread checks the poll timer before anything else
        # (AbstractHeartbeatRequestManager.poll; ConsumerNetworkThread.runOnce polls the request
        # managers before it reads responses): a member whose interval ran out during the pause
        # sends its leave before it handles the heartbeat answers that came meanwhile.
        proc.deferred.sort(key=lambda e: not (isinstance(e, MemberTimerFires) and type(e.timer) is me.PollTimerExpired))
        self._replay_deferred(proc)
        self._maybe_run_callbacks(proc)
        self._app_poll(proc)

    def _resumed_from_stall(self, proc: ConsumerGroupProcess) -> None:
        self._maybe_run_callbacks(proc)
        self._app_poll(proc)

    # ------------------------------------------------------------------ scenario events (the driver dispatches them)

    def _stop_process(self, proc: ConsumerGroupProcess) -> None:
        self._close(proc)

    def _closing(self, proc: ConsumerGroupProcess) -> bool:
        return proc.closing

    def _crash_process(self, proc: ConsumerGroupProcess) -> None:
        self._checkpoint(proc)
        self._abandon_batch(proc)
        self._end_process(proc)

    def _stalled(self, proc: ConsumerGroupProcess) -> None:
        # The heartbeat thread goes on; listener callbacks and a classic member's rejoin wait for the loop.
        if isinstance(proc.machine, ClassicMembership):
            self._member_input(proc, cc_events.PollReturned())

    def _topics_grown(self, event: TopicsGrown) -> None:
        now = self.now
        match event:
            case TopicCreated(topic=name):
                for proc in self.processes.values():
                    pattern = proc.spec.pattern
                    if proc.alive and pattern is not None and re.fullmatch(pattern, name):
                        self.topic_wanted.setdefault(name, now)
            case PartitionsAdded():
                pass
            case _:
                assert_never(event)
        self._to_shard(ce.TopicsChanged(tuple(sorted(self.topics.items()))))  # (a classic group's consumers notice on their own)

    def _subscribe(self, proc: ConsumerGroupProcess, change: SubscriptionChanged) -> None:
        for topic in change.topics or ():
            self.topic_wanted.setdefault(topic, self.now)
        self._member_input(proc, me.Subscribe(change.topics or (), change.pattern))

    def _switch_protocol(self, event: ProtocolSwitch) -> None:
        # A rolling upgrade's (or downgrade's) step: stop the consumer, start it again with
        # group.protocol=consumer (or classic).
        match event:
            case ConsumerUpgrades():
                self.protocol_of[event.consumer] = GroupProtocol.CONSUMER
            case ConsumerDowngrades():
                self.protocol_of[event.consumer] = GroupProtocol.CLASSIC
            case _:
                assert_never(event)
        proc = self.processes.get(event.consumer)
        if proc is not None and proc.alive:
            self._close(proc)
        self._push(self.now + event.after_ms, ProcessStarts(event.consumer))

    def _coordinator_fails_over(self) -> None:
        """Leadership of the group's ``__consumer_offsets`` partition moves to the next broker:
        the old coordinator resigns (a classic group's waiting JoinGroup/SyncGroup get
        NOT_COORDINATOR), its in-memory timers are gone, and the new one loads the partition for
        ``coordinator_load_ms``, then replays the group from the records the old one wrote
        (``offsets_records``; Kafka's ``GroupMetadataManager.replay`` and ``onLoaded``)."""
        self.coordinator_available = False
        self.coordinator_epoch += 1
        self.coordinator_scheduled.clear()
        self.coordinator_timers.clear()
        self.broker = (self.broker + 1) % self.cfg.brokers
        partition = self.offsets_partition
        self._to_shard(PartitionResigned(partition))
        classic_seed = self.rng.getrandbits(32) if self.group_protocol is GroupProtocol.CLASSIC else None
        self.shard = self._new_shard((), classic_seed)
        self._to_shard(PartitionLoading(partition))
        self._push(self.now + self.cfg.coordinator_load_ms,
                   CoordinatorLoaded(self.broker, partition, self.coordinator_epoch))

    def _coordinator_loaded(self) -> None:
        self.coordinator_available = True
        classic = self.group_protocol is GroupProtocol.CLASSIC
        if not classic:
            self.pending_group_seed = self.rng.getrandbits(32)
        self._to_shard(PartitionLoaded(self.offsets_partition, tuple(self.offsets_records)))
        if classic:
            self._unfence_stored(record for record in self.offsets_records
                                 if isinstance(record, cl.GroupMetadataRecord | cl.GroupTombstone))

    def _close(self, proc: ConsumerGroupProcess) -> None:
        """consumer.close(): commit and revoke through the listener, send the leave heartbeat."""
        if proc.closing:
            return
        self._checkpoint(proc)
        if proc.batch:
            self._abandon_batch(proc)
            proc.app_token += 1  # the batch's end will not come
        elif not proc.busy:
            proc.app_token += 1  # nor the next idle poll; callbacks already running finish first
        proc.closing = True
        self._member_input(proc, me.Unsubscribe())
        if proc.alive and proc.machine.state in (ConsumerMemberState.UNSUBSCRIBED, ConsumerMemberState.FATAL, ConsumerMemberState.STALE,
                                                 ConsumerMemberState.FENCED) and not (
                isinstance(proc.machine, ClassicMembership) and proc.machine.pending_callbacks):
            self._end_process(proc)

    # ------------------------------------------------------------------ rebalance bookkeeping

    def _on_log(self, record: LogRecord) -> None:
        self.log_records.append(LoggedRecord(record, self.broker, self.offsets_partition))
        if isinstance(record, ClassicRebalanceLog):
            # The classic group before it converts (a rolling upgrade) or after it converted back.
            self._record_classic(record, self._assigned_now)
            return
        if type(record) is ConsumerStaticMemberReplaced:
            # The instance's old member is out of the group from now: a process still running it
            # (paused or stalled while its consumer restarted) holds its partitions outside the
            # group (Kafka's replaceStaticMember; its next heartbeat is fenced).
            self._drop_member_ownership(record.replaced_member_id)
        recorder = self.recorder
        match record:
            case ConsumerMemberJoined(member_id=member_id) | ConsumerStaticMemberReplaced(member_id=member_id) if (
                    self.requester in self.connections):
                joined = self.connections[self.requester]
                self.member_names[member_id] = joined.name
                self._unfence(joined)  # a member again: what it is given from now is its own
                self.last_reason = f"member {self._name(member_id)} joined"
            case ConsumerMemberJoined(member_id=member_id):
                self.last_reason = f"member {self._name(member_id)} joined"
            case ConsumerStaticMemberReplaced(instance_id=instance_id):
                self.last_reason = f"static member {instance_id} rejoined"
            case ConsumerMemberLeft(member_id=member_id, temporarily=temporarily):
                self.last_reason = f"member {self._name(member_id)} left" + (" temporarily" if temporarily else "")
                # A static member leaving temporarily keeps its assignment for its return, but not
                # what it was still revoking (Kafka's consumerGroupStaticMemberGroupLeave clears the
                # partitions pending revocation, free for their new owner at once): out of the
                # group, its process holds everything outside it until it is back.
                self._drop_member_ownership(member_id)
            case ConsumerMemberFenced(member_id=member_id, reason=reason):
                self.last_reason = f"member {self._name(member_id)} fenced because {reason}"
                self._drop_member_ownership(member_id)
            case ConsumerGroupEpochBumped():
                recorder.begin(self.now, self.last_reason, self._assigned_now)
                self.last_reason = "the group changed"
            case ConsumerTargetAssignmentComputed(epoch=epoch, assignor=assignor):
                recorder.formed(epoch, assignor)
            case ConsumerGroupStateChanged(new_state=new_state):
                coordinator = self.shard.consumer_groups.get(self.scenario.group)
                if new_state in ("Stable", "Empty") and recorder.open is not None and coordinator is not None:
                    recorder.complete(self.now, coordinator.group_epoch, GroupProtocol.CONSUMER, None,
                                      [self._name(m) for m in coordinator.members], None,
                                      {self._name(m): tuple(to_strings(target))
                                       for m, target in coordinator.target.items()})
            case MemberFailed(member_id=member_id) | MemberLeft(member_id=member_id):
                self._drop_member_ownership(member_id)
            case ConsumerMemberAssignmentUpdated(member_id=member_id, epoch=epoch, assigned=assigned):
                # The group counts the member as the owner of ``assigned`` from now: a hold it kept
                # through a fencing and a rejoin is its own again.
                proc = self._process_of_member(member_id)
                if proc is not None and proc.held and proc.fenced_ms == NOT_FENCED:
                    self._hold_afresh(proc, frozenset(assigned), generation=epoch)
            case ConsumerGroupConverted(direction=direction):
                if direction == "upgrade":
                    self._fence_beyond_classic_assignment()
            case ConsumerGroupLoaded():
                pass
            case _:
                assert_never(record)

    def _fence_beyond_classic_assignment(self) -> None:
        """The classic group converted: the consumer group counts each of its members as the
        owner of its classic assignment only (ConsumerGroup.fromClassicGroup). After a downgrade
        that assignment is the member's target (ClassicGroup.fromConsumerGroup), without what it
        was still revoking: a consumer-protocol member converting the group back at once finds
        those partitions free while the classic member still holds them, Kafka's own window; from
        here the group no longer stands behind that hold."""
        group = self.shard.consumer_groups[self.scenario.group]
        for member_id, member in group.members.items():
            proc = self._process_of_member(member_id)
            if member.classic is not None and proc is not None and proc.alive:
                assigned = set(to_strings(member.assignment.assigned))
                self._fence_partitions(proc, [p for p in proc.held if p not in assigned])

    def _assigned_now(self) -> dict[str, frozenset[str]]:
        """What each running consumer is assigned when a rebalance begins."""
        return {name: frozenset(to_strings(p.machine.assignment)) for name, p in self.processes.items() if p.alive}

    def _drop_member_ownership(self, member_id: str) -> None:
        """The group no longer counts this member as an owner, whatever the process believes."""
        proc = self._process_of_member(member_id)
        if proc is not None:
            self._checkpoint(proc)
            for partition in list(proc.positions):
                self._stop_consuming(proc, partition)
            self._fence(proc)

    # ------------------------------------------------------------------ results

    def _final_group(self) -> tuple[str, tuple[str, ...]]:
        group_id = self.scenario.group
        classic = self.shard.classic_group(group_id)
        if classic is not None:
            return classic.state.value, tuple(self._name(m) for m in classic.members)
        group = self.shard.consumer_groups.get(group_id)
        if group is None:
            return "Empty", ()
        return group.state.value, tuple(self._name(m) for m in group.members)

    def _group_protocol_now(self) -> GroupProtocol:
        return self.group_protocol

    def _finish(self) -> SimulationResult:
        state, members = self._final_group()
        return self._result(
            final_owned=lambda proc: proc.machine.owned if proc.machine.member_epoch > 0 else (),
            final_group_state=state, final_members=members,
            fenced=lambda proc: not proc.alive and proc.machine.state is ConsumerMemberState.FATAL)


__all__ = ["ConsumerGroupSide"]
