"""The story of one group from its broker's lines (and the client lines that explain them):
rebalances, member events, empty periods and each rebalance's causes.

Rebalances are closed by generation arithmetic (classic protocol): the "Stabilized" line for
generation N, the leader's "Assignment received" for N or "is now empty" with N close the
rebalance that produced N, i.e. the one that opened with old generation N-1. A rebalance whose
closing line never comes ends at the next one (or at the end of the log) and is ``open``; a
closing line whose opening line is missing gets a rebalance of its own (``start_known`` false),
so one lost line never merges two rebalances. A "Preparing" line from CompletingRebalance
means the stabilized generation never got its assignment: that rebalance is ``superseded``.

For KIP-848 consumer groups a rebalance is a group epoch: it opens at "Bumped group epoch to
N" and is done when every known member reports ``epoch=N, state=STABLE``; a newer epoch before
that supersedes it.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right, insort
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import assert_never

from kafka_rebalance.model import GroupProtocol
from kafka_rebalance.pipeline.logparse.catalogue import client_of
from kafka_rebalance.pipeline.logparse.causes import (
    CLIENT_CLOCK_SLACK_MS,
    COORDINATOR_ERRORS,
    EVIDENCE_WINDOW_MS,
    SAME_HAPPENING,
    WHAT_HAPPENED,
    cause_from_reason,
    members_in_reason,
    near,
)
from kafka_rebalance.pipeline.logparse.kinds import EventKind, Library, Side, UnknownEventKind
from kafka_rebalance.pipeline.logparse.rebalance import CauseClaim, ConsumerMembers, Rebalance, Signal
from kafka_rebalance.pipeline.logparse.rows import EmptyPeriodRow, Event, MemberEventRow

# The member event kinds whose client is their member's (a client's own line may name its client
# id instead), and those that are a departure (``GroupStory._rejoins``).
_CLIENT_FROM_MEMBER = frozenset(("failed", "left", "joined", "rejoined", "fenced"))
_DEPARTURES = frozenset(("failed", "left", "fenced"))
# The kinds of line whose partition is no group's own (a coordinator's move of a partition).
_MOVE_KINDS = frozenset((EventKind.COORDINATOR_LOADED, EventKind.COORDINATOR_UNLOADED))

# What a story does with one event of a kind (``GroupStory.handler_of``).
Handler = Callable[["GroupStory", Event], None]


class GroupStory:
    """Rebuilds one group's rebalances from its ordered events."""

    def __init__(self, cluster: str, group: str, coordinator_moves: list[Event] | None = None):
        self.cluster = cluster
        self.group = group
        self.rebalances: list[Rebalance] = []
        self.open: Rebalance | None = None
        self.awaiting_sync: Rebalance | None = None
        self.member_events: list[MemberEventRow] = []
        # client -> times it failed, left or was fenced (``_rejoins``)
        self.departed: dict[str, list[int | None]] = {}
        self.empty_periods: list[EmptyPeriodRow] = []
        self.recent: list[Signal] = []  # departures, joins and client signals not yet tied to a rebalance
        self.coordinator_moves = coordinator_moves or []
        self.moves_by_partition: dict[int | None, list[Event]] | None = None
        self.partition: int | None = None
        self.consumer_members = ConsumerMembers()
        self.last_epoch: int | None = None
        self.last_ms: int | None = None
        # (member, happening) -> the member event a rebalance's reason told, until the member's
        # own line (logged just before or after the reason) is read
        self.from_reason: dict[tuple[str, str], MemberEventRow] = {}
        # The member events by (member, happening): their times, ascending, and how many have no
        # time; and the static joins not yet named. A rebalance's reason is checked against them
        # (``_members_from_reason``): walking every member event instead made a storm of
        # thousands of rebalances in one group quadratic.
        self.happened_at: dict[tuple[str, str], list[int]] = {}
        self.happened_untimed: Counter[tuple[str, str]] = Counter()
        self.unnamed_static_joins: list[MemberEventRow] = []
        # Each rebalance's place in ``rebalances``, and the consumer-protocol ones by the epoch
        # each was given (a later line may give it another: checked when read), so a target
        # assignment finds its rebalance without walking every one before it.
        self.place: dict[int, int] = {}
        self.consumer_epochs: dict[int | None, list[Rebalance]] = {}
        # Departures read while a rebalance was open and told as what happened during it: a later
        # line may prove it had completed before them (``_completed_by_later``), making them the
        # next one's cause. By the rebalance's id: (its member event, the line, how it went).
        self.departed_during: dict[int, list[tuple[MemberEventRow, Event, str]]] = {}
        # Whether a consumer group's members report their epochs (DEBUG in 4.x): only then can
        # the story tell that every member is gone.
        self.member_epochs_logged = False

    # -- helpers
    def _new(self, event: Event, *, old_generation: int | None, start_known: bool = True,
             protocol: GroupProtocol = GroupProtocol.CLASSIC) -> Rebalance:
        rebalance = Rebalance(self.cluster, self.group, event.get("time_ms"), old_generation=old_generation,
                              start_known=start_known, protocol=protocol, partition=self.partition)
        rebalance.evidence.append(event)
        self.place[id(rebalance)] = len(self.rebalances)
        self.rebalances.append(rebalance)
        return rebalance

    def _set_generation(self, rebalance: Rebalance, generation: int | None) -> None:
        rebalance.generation = generation
        if rebalance.protocol is GroupProtocol.CONSUMER:
            self.consumer_epochs.setdefault(generation, []).append(rebalance)

    def _last_consumer_rebalance_of(self, epoch: int | None) -> Rebalance | None:
        """The latest consumer-protocol rebalance whose epoch is ``epoch``."""
        found = [r for r in self.consumer_epochs.get(epoch, ()) if r.generation == epoch]
        return max(found, key=lambda r: self.place[id(r)]) if found else None

    def _close_open(self, at_ms: int | None, outcome: str = "open") -> None:
        if self.open is not None:
            self.open.outcome = outcome
            self.open.clip_ms = at_ms
            self.open = None

    def _member_event(self, event: Event, kind: str, member: str | None = None,
                      reason: str | None = None, *, learnt: str = "line") -> MemberEventRow:
        """A member event; ``learnt``: from its own ``line``, or from a rebalance's ``reason``."""
        member = member or event.get("member") or event.get("client_id")
        happening = SAME_HAPPENING.get(kind)
        time_ms = event.get("time_ms")
        if learnt == "line" and happening and member and self.from_reason:
            told = self.from_reason.get((member, happening))
            if told is not None and near(told["time_ms"], time_ms):
                # the member's own line, logged just after the reason that named it: one event
                del self.from_reason[(member, happening)]
                told.update({"source": "line", "kind": kind, "input": event.get("source"), "side": event.get("side"),
                             "line": event.get("line"), "generation": event.get("generation")})
                if reason:
                    told["reason"] = reason
                return told
        client = client_of(member) if kind in _CLIENT_FROM_MEMBER else (event.get("client_id") or client_of(member))
        row: MemberEventRow = {"cluster": self.cluster, "group": self.group, "member": member, "time_ms": time_ms,
                               "kind": kind, "client": client, "reason": reason, "source": learnt,
                               "input": event.get("source"), "side": event.get("side"), "generation": event.get("generation"),
                               "line": event.get("line")}
        self.member_events.append(row)
        if happening and member:
            self._index_happening(member, happening, time_ms)
        elif member is None and kind == "joined" and reason == "Static":
            self.unnamed_static_joins.append(row)
        if kind in _DEPARTURES and client:
            self.departed.setdefault(client, []).append(time_ms)
        return row

    def _index_happening(self, member: str, happening: str, time_ms: int | None) -> None:
        if time_ms is None:
            self.happened_untimed[(member, happening)] += 1
        else:
            insort(self.happened_at.setdefault((member, happening), []), time_ms)

    def _happened_near(self, member: str, happening: str, at_ms: int | None) -> bool:
        """Whether a member event of ``member`` and ``happening`` is ``_near`` ``at_ms``."""
        key = (member, happening)
        times = self.happened_at.get(key, ())
        if self.happened_untimed[key] or (at_ms is None and times):
            return True
        if at_ms is None:
            return False
        first = bisect_left(times, at_ms - EVIDENCE_WINDOW_MS)
        return first < len(times) and times[first] <= at_ms + EVIDENCE_WINDOW_MS

    # -- the broker's classic lines
    def feed(self, event: Event) -> None:
        kind = event["kind"]
        time_ms = event.get("time_ms")
        if time_ms is not None:
            self.last_ms = time_ms
        partition = event.get("partition")
        if partition is not None and event.get("side") == Side.BROKER and kind not in _MOVE_KINDS:
            self.partition = partition
        handler = _HANDLERS.get(kind) if kind is not None else None
        if handler is None:
            raise UnknownEventKind(kind)
        handler(self, event)

    def _on_preparing_rebalance(self, event: Event) -> None:
        old = event.get("old_generation")
        current = self.open
        if current is not None and current.old_generation == old:
            current.evidence.append(event)
            return
        if current is not None and not self._completed_by_later(current, old, event):
            self._close_open(event.get("time_ms"))
        previous = self.awaiting_sync
        if previous is not None and previous.generation == old and event.get("state") == "CompletingRebalance" \
                and previous.outcome == "stable":
            previous.outcome = "superseded"
            previous.end_ms = previous.stabilized_ms
        self.awaiting_sync = None
        rebalance = self._new(event, old_generation=old)
        rebalance.reason = event.get("reason")
        rebalance.state = event.get("state")
        self._claim_recent(rebalance)
        self.open = rebalance

    def _producing(self, event: Event, generation: int | None) -> Rebalance:
        """The rebalance that produced ``generation``: the open one if it came from N-1 (or its
        old generation is unknown), else a new one whose opening line is missing."""
        current = self.open
        if current is not None and (generation is None or current.old_generation is None
                                    or current.old_generation == generation - 1):
            return current
        if current is not None and not self._completed_by_later(
                current, None if generation is None else generation - 1, event):
            self._close_open(event.get("time_ms"))
        awaiting = self.awaiting_sync
        if awaiting is not None and awaiting.generation == generation:
            return awaiting
        rebalance = self._new(event, old_generation=None if generation is None else generation - 1, start_known=False)
        self._claim_recent(rebalance)
        self.open = rebalance
        return rebalance

    def _completed_by_later(self, rebalance: Rebalance, reached: int | None, event: Event) -> bool:
        """Did the group reach generation ``reached`` after ``rebalance`` opened from an older
        one? Then ``rebalance`` made the generation after its old one and completed, though its
        closing line is missing: a later "Preparing to rebalance ... with old generation N" or
        "Stabilized group ... generation N+1" proves generation N was made (GroupCoordinator
        bumps the generation only in ``onCompleteJoin``, by one). Its end is not in the log
        (``end_ms`` None, so no length); it is drawn to the line that proved it. From
        CompletingRebalance, that generation never got its assignment: ``superseded``."""
        old = rebalance.old_generation
        if rebalance.protocol is not GroupProtocol.CLASSIC or old is None or reached is None or reached <= old:
            return False
        made = old + 1
        self._set_generation(rebalance, made)
        never_synced = reached == made and event.get("kind") == EventKind.PREPARING_REBALANCE \
            and event.get("state") == "CompletingRebalance"
        rebalance.outcome = "superseded" if never_synced else "stable"
        rebalance.clip_ms = event.get("time_ms")
        rebalance.evidence.append(event)
        self.open = None
        self._departures_after(rebalance, event)
        return True

    def _departures_after(self, rebalance: Rebalance, event: Event) -> None:
        """The departures told as during ``rebalance`` that the reason of the "Preparing" line
        proving it complete names: they came after it completed, and caused the next one."""
        named = {member for member, *_ in members_in_reason(event.get("reason"))}
        if not named:
            return
        kept = []
        for row, line, kind in self.departed_during.pop(id(rebalance), []):
            if row["member"] not in named:
                kept.append((row, line, kind))
                continue
            row["during_rebalance"] = False
            told = f"{row['member']} {WHAT_HAPPENED.get(row.get('cause') or kind, kind)}"
            rebalance.during = [text for text in rebalance.during if text != told]
            departed = rebalance.failed if kind in ("failed", "fenced") else rebalance.left
            if row["member"] in departed:
                departed.remove(row["member"])
            self.recent.append(Signal(row.get("cause") or kind, row["member"], row["reason"], line, kind))
        if kept:
            self.departed_during[id(rebalance)] = kept

    def _on_stabilized(self, event: Event) -> None:
        generation = event.get("generation")
        rebalance = self._producing(event, generation)
        self._set_generation(rebalance, generation)
        if event.get("members") is not None:
            rebalance.members = event["members"]
        rebalance.stabilized_ms = event.get("time_ms")
        rebalance.end_ms = event.get("time_ms")
        rebalance.outcome = "stable"
        rebalance.evidence.append(event)
        self.open = None
        self.awaiting_sync = rebalance

    def _on_assignment_received(self, event: Event) -> None:
        generation = event.get("generation")
        rebalance = self._producing(event, generation)
        self._set_generation(rebalance, generation)
        rebalance.leader = event.get("member") or rebalance.leader
        if event.get("members") is not None:
            rebalance.members = event["members"]
        rebalance.end_ms = event.get("time_ms")
        rebalance.outcome = "stable"
        rebalance.evidence.append(event)
        self.open = None
        self.awaiting_sync = None

    def _on_group_empty(self, event: Event) -> None:
        generation = event.get("generation")
        rebalance = self._producing(event, generation)
        self._set_generation(rebalance, generation)
        rebalance.members = 0
        rebalance.end_ms = event.get("time_ms")
        rebalance.outcome = "empty"
        rebalance.evidence.append(event)
        self.open = None
        self.awaiting_sync = None
        self.empty_periods.append({"cluster": self.cluster, "group": self.group, "generation": generation,
                                   "start_ms": event.get("time_ms"), "end_ms": None})

    def _on_group_dead(self, event: Event) -> None:
        if self.open is not None:
            self.open.end_ms = event.get("time_ms")
            self.open.outcome = "dead"
            self.open = None
        self._member_event(event, "group_dead", member="")

    def _departure(self, event: Event, kind: str) -> None:
        reason = event.get("reason")
        if kind == "left" and reason and "poll timeout" in reason.lower():
            kind_cause = "poll_timeout"
        else:
            kind_cause = {"failed": "session_timeout", "left": "left", "fenced": "session_timeout"}[kind]
        if kind == "fenced" and reason and "failed to transition" in reason:
            kind_cause = "rebalance_timeout"
        row = self._member_event(event, kind, reason=reason)
        row["cause"] = kind_cause
        self._forget_member(row["member"])
        target = self._open_for(event)
        if target is not None and event.get("side") == Side.BROKER:
            (target.failed if kind in ("failed", "fenced") else target.left).append(row["member"])
            if self._at_start(target, event, row["member"]):
                target.causes.append(CauseClaim(kind_cause, row["member"], reason, [event]))
            else:
                target.during.append(f"{row['member']} {WHAT_HAPPENED.get(kind_cause, kind)}")
                row["during_rebalance"] = True
                self.departed_during.setdefault(id(target), []).append((row, event, kind))
        else:
            self.recent.append(Signal(kind_cause, row["member"], reason, event, kind))

    def _on_member_failed(self, event: Event) -> None:
        self._departure(event, "failed")

    def _on_member_left(self, event: Event) -> None:
        if event.get("library") == Library.BROKER_KIP848 and event.get("membership") == "Static" and \
                "temporarily" in (event.get("line") or ""):
            self._member_event(event, "left_temporarily")
            return
        self._departure(event, "left")

    def _on_member_fenced(self, event: Event) -> None:
        self._departure(event, "fenced")

    def _on_member_joined(self, event: Event) -> None:
        row = self._member_event(event, "joined", reason=event.get("membership"))
        cause = "static_joined" if event.get("membership") == "Static" else "joined"
        if self._rejoins(row["client"], row["time_ms"]):
            cause = "restarted"
        row["cause"] = cause
        if event.get("library") == Library.BROKER_KIP848 and row["member"]:
            # A static member's replacement takes over its epoch and assignment (Kafka's
            # ConsumerGroupMember.Builder(existing).setMemberId(new)).
            replaced = self.consumer_members.pop(event.get("old_member") or "") or (None, None)
            self.consumer_members.setdefault(row["member"], replaced)
        target = self._open_for(event)
        if target is not None:
            # it joins the rebalance under way: what happened during it, not the next one's cause
            target.joined.append(row["member"])
            if not self._at_start(target, event, row["member"]):
                target.during.append(f"{row['member']} joined")
                return
        self.recent.append(Signal(cause, row["member"], event.get("membership"), event, None))

    def _at_start(self, rebalance: Rebalance, event: Event, member: str | None) -> bool:
        """Was this event (read while ``rebalance`` is open) at its start, so a cause? The
        coordinator logs the change and the rebalance it causes in one call: at the same time.
        Without times, only the member the reason names is (its line follows the reason)."""
        start, time_ms = rebalance.start_ms, event.get("time_ms")
        if start is not None and time_ms is not None:
            return bool(time_ms <= start)
        return member is not None and any(member == named for named, *_ in members_in_reason(rebalance.reason))

    def _open_for(self, event: Event) -> Rebalance | None:
        """The open rebalance a member's arrival or departure belongs to. A KIP-848 coordinator
        logs the change before the epoch bump it causes, so it belongs to the next bump, not
        to the consumer-group rebalance still open."""
        target = self.open
        if target is not None and target.protocol is GroupProtocol.CONSUMER and event.get("library") == Library.BROKER_KIP848:
            return None
        return target

    def _rejoins(self, client: str | None, time_ms: int | None) -> bool:
        """A join of a client that left or failed earlier: a restart."""
        times = self.departed.get(client) if client else None
        if not times:
            return False
        return time_ms is None or any(at is None or at <= time_ms for at in times)

    def _on_members_not_rejoined(self, event: Event) -> None:
        target = self.open
        for member in re.findall(r"[\w.\-]+", event.get("members_text") or (event.get("line") or "").split(":")[-1]):
            row = self._member_event(event, "failed", member=member, reason="did not rejoin in time")
            row["cause"] = "rebalance_timeout"
            if target is not None:
                target.failed.append(member)
                target.during.append(f"{member} {WHAT_HAPPENED['rebalance_timeout']}")

    def _on_group_loaded(self, event: Event) -> None:
        self._member_event(event, "coordinator_loaded", member="")
        self.recent.append(Signal("coordinator_moved", None, event.get("line"), event, None))

    def _on_group_unloaded(self, event: Event) -> None:
        self._member_event(event, "coordinator_unloaded", member="")

    def _on_group_write_failed(self, event: Event) -> None:
        """The coordinator failed to write the group's metadata or offsets to __consumer_offsets
        (GroupMetadataManager's storeGroup / storeOffsets): the cause of the rebalance it opens
        next (a failed SyncGroup's "Error ... when storing group assignment"), and what went
        wrong while the rebalance it belongs to was open."""
        reason = event.get("reason")
        self._member_event(event, "coordinator_write_failed", member="", reason=reason)
        detail = f"the coordinator failed to write to __consumer_offsets: {reason or 'an error'}"
        under_way = self.open or self.awaiting_sync
        if under_way is not None and detail not in under_way.during:
            under_way.during.append(detail)
        self.recent.append(Signal("storage_error", None, detail, event, None))

    # -- KIP-848 consumer groups
    def _on_group_epoch_bumped(self, event: Event) -> None:
        epoch = event.get("generation")
        if self.open is not None and self.open.protocol is GroupProtocol.CONSUMER:
            self._close_open(event.get("time_ms"), "superseded")
            self.rebalances[-1].end_ms = None
        rebalance = self._new(event, old_generation=self.last_epoch if self.last_epoch is not None else
                              (epoch - 1 if epoch is not None else None), protocol=GroupProtocol.CONSUMER)
        self._set_generation(rebalance, epoch)
        self.last_epoch = epoch
        self._claim_recent(rebalance)
        # The epoch is bumped in the same coordinator write as the change that caused it: what
        # was logged in that millisecond comes before older evidence.
        rebalance.causes.sort(key=lambda c: c.events[0].get("time_ms") != event.get("time_ms")
                              if c.events else True)
        self.open = rebalance

    def _on_target_assignment(self, event: Event) -> None:
        epoch = event.get("generation")
        rebalance = self.open
        if rebalance is None or rebalance.protocol is not GroupProtocol.CONSUMER or rebalance.generation != epoch:
            rebalance = self._last_consumer_rebalance_of(epoch)
        if rebalance is None:
            rebalance = self._new(event, old_generation=None, start_known=False, protocol=GroupProtocol.CONSUMER)
            self._set_generation(rebalance, epoch)
            self.open = rebalance
        rebalance.assignor = event.get("assignor")
        rebalance.assignor_ms = event.get("took_ms")
        rebalance.evidence.append(event)
        if rebalance is self.open and self.member_epochs_logged and not self.consumer_members:
            # every member that reported an epoch has left or been fenced: the target is empty,
            # and the epoch is done (ConsumerGroup's state EMPTY)
            rebalance.end_ms = event.get("time_ms")
            rebalance.members = 0
            rebalance.outcome = "empty"
            self.open = None

    def _on_member_epoch(self, event: Event) -> None:
        member = event.get("member")
        self.member_epochs_logged = True
        self.consumer_members.set(member, (event.get("generation"), event.get("state")))
        rebalance = self.open
        if rebalance is None or rebalance.protocol is not GroupProtocol.CONSUMER:
            return
        if self.consumer_members.all_in((rebalance.generation, "STABLE")):
            rebalance.end_ms = event.get("time_ms")
            rebalance.members = len(self.consumer_members)
            rebalance.outcome = "stable"
            rebalance.evidence.append(event)
            self.open = None

    def _forget_member(self, member: str | None) -> None:
        self.consumer_members.pop(member)

    def _on_subscription_changed(self, event: Event) -> None:
        self.recent.append(Signal("metadata_changed", event.get("member"),
                                  f"subscribed topics: {event.get('topics') or ''}", event, None))

    def _on_metadata_changed(self, event: Event) -> None:
        self.recent.append(Signal("metadata_changed", None, "topic metadata changed", event, None))

    def _on_group_converted(self, event: Event) -> None:
        """The online migration: epochs continue from the classic generation (and back)."""
        self._member_event(event, "converted", member="", reason=f"to {event.get('protocol')}")
        self.last_epoch = None
        if event.get("protocol") == GroupProtocol.CLASSIC:
            self.consumer_members.clear()

    def _on_conversion_refused(self, event: Event) -> None:
        self._member_event(event, "conversion_refused", member="", reason=event.get("reason"))

    def _on_coordinator_move(self, event: Event) -> None:
        """A coordinator loaded, resigned or failed to write a ``__consumer_offsets`` partition:
        such lines name no group; every story reads them as ``coordinator_moves`` (``_moves_of``)."""

    # -- client lines that explain a rebalance
    def _on_client_poll_timeout(self, event: Event) -> None:
        row = self._member_event(event, "poll_timeout", reason="consumer poll timeout has expired")
        self._client_signal(Signal("poll_timeout", row["member"], row["reason"], event, "client"))

    def _on_client_leave(self, event: Event) -> None:
        reason = event.get("reason")
        row = self._member_event(event, "leave_request", reason=reason)
        cause = "poll_timeout" if reason and "poll timeout" in reason.lower() else "left"
        self._client_signal(Signal(cause, row["member"], reason, event, "client"))

    def _on_client_heartbeat_failed(self, event: Event) -> None:
        self._member_event(event, "heartbeat_failed", reason=event.get("reason"))

    def _on_client_commit_failed(self, event: Event) -> None:
        self._member_event(event, "commit_failed", reason=event.get("reason"))

    def _on_client_rejoin_requested(self, event: Event) -> None:
        reason = event.get("reason") or ""
        if "metadata" in reason or "subscription" in reason:
            self._client_signal(Signal("metadata_changed", event.get("client_id"), reason, event, "client"))

    def _on_client_coordinator_trouble(self, event: Event) -> None:
        """A client's failed JoinGroup/SyncGroup or lost coordinator: when the coordinator
        answered NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE (it moved, or could not write), a
        cause of the rebalance that follows; else context (``_on_client_context``)."""
        reason = event.get("reason") or ""
        if COORDINATOR_ERRORS.search(reason):
            self._client_signal(Signal("coordinator_error", event.get("member") or event.get("client_id"),
                                       reason.strip(" :."), event, None))

    def _on_client_rebalance_step(self, event: Event) -> None:
        """A step of a client's own rebalance (joining, synced, assigned, revoked, lost, state
        changes): ``client_rebalances`` reads these over the group's ordered events."""

    def _on_client_context(self, event: Event) -> None:
        """A client line that neither opens, closes nor explains a rebalance (the leader's
        assignment, a reset generation, a fenced epoch): kept
        in ``events`` as the context an operator reads, the broker's lines tell the story."""

    def _client_signal(self, item: Signal) -> None:
        """A client's line explains the next rebalance, or the one the coordinator opened just
        before it: the client's clock may run up to ``CLIENT_CLOCK_SLACK_MS`` ahead."""
        target, time_ms = self.open, item.event.get("time_ms")
        if target is not None and target.start_ms is not None and time_ms is not None \
                and 0 <= time_ms - target.start_ms <= CLIENT_CLOCK_SLACK_MS:
            target.causes.append(CauseClaim(item.cause, item.member, item.detail, [item.event]))
            return
        self.recent.append(item)

    # -- causes
    def _claim_recent(self, rebalance: Rebalance) -> None:
        """Departures, joins and client signals shortly before a rebalance opened caused it."""
        start = rebalance.start_ms
        kept = []
        for item in self.recent:
            event = item.event
            time_ms = event.get("time_ms")
            slack = CLIENT_CLOCK_SLACK_MS if event.get("side") == Side.CLIENT else 0
            close = start is None or time_ms is None or -slack <= start - time_ms <= EVIDENCE_WINDOW_MS
            if close:
                rebalance.causes.append(CauseClaim(item.cause, item.member, item.detail, [event]))
                if item.departure in ("failed", "fenced"):
                    rebalance.failed.append(item.member)
                elif item.departure == "left":
                    rebalance.left.append(item.member)
                elif item.departure is None and item.cause in ("joined", "static_joined", "restarted"):
                    rebalance.joined.append(item.member)
            elif time_ms is not None and start is not None and time_ms > start + slack:
                kept.append(item)
        self.recent = kept
        reason = cause_from_reason(rebalance.reason)
        if reason is not None:
            cause, member, detail = reason
            if cause in ("joined", "static_joined") and self._rejoins(client_of(member), start):
                cause = "restarted"
            rebalance.causes.insert(0, CauseClaim(cause, member, detail or rebalance.reason, rebalance.evidence[:1]))
        self._members_from_reason(rebalance)
        if rebalance.partition is not None:
            for move in self._moves_of(rebalance.partition):
                moved_ms = move.get("time_ms")
                if moved_ms is not None and start is not None and 0 <= start - moved_ms <= EVIDENCE_WINDOW_MS:
                    if move.get("kind") == EventKind.COORDINATOR_WRITE_FAILED:
                        detail = f"a write to __consumer_offsets-{rebalance.partition} was refused: {move.get('reason')}"
                        rebalance.causes.append(CauseClaim("storage_error", None, detail, [move]))
                        self._prolonged(rebalance, detail)
                    else:
                        rebalance.causes.append(CauseClaim("coordinator_moved", None, move.get("line"), [move]))

    def _prolonged(self, rebalance: Rebalance, detail: str) -> None:
        """A failed write that opened ``rebalance`` ended the one before it, if that one never
        got its assignment stored (``superseded``): what happened during it."""
        place = self.place.get(id(rebalance), 0)
        previous = self.rebalances[place - 1] if place > 0 else None
        if previous is not None and previous.outcome == "superseded" and detail not in previous.during:
            previous.during.append(detail)

    def _moves_of(self, partition: int) -> list[Event]:
        """The coordinator moves of one ``__consumer_offsets`` partition, in their order (indexed
        once per story: a cluster's moves are many, a group's partition is one)."""
        if self.moves_by_partition is None:
            self.moves_by_partition = defaultdict(list)
            for move in self.coordinator_moves:
                self.moves_by_partition[move.get("partition")].append(move)
        return self.moves_by_partition.get(partition, [])

    def _members_from_reason(self, rebalance: Rebalance) -> None:
        """Every member the rebalance's reason names is a member event (``source`` reason),
        unless that member's own line already told it (brokers before 2.4 log a leaving or
        expired member only in the reason; a new member's id is often only there)."""
        start = rebalance.start_ms
        opening = rebalance.evidence[0] if rebalance.evidence else {}
        for member, kind, cause, detail, static in members_in_reason(rebalance.reason):
            happening = SAME_HAPPENING[kind]
            if self._happened_near(member, happening, start):
                continue
            unnamed = [e for e in self.unnamed_static_joins if near(e["time_ms"], start)] if static else []
            if len(unnamed) == 1:
                # a static member's replacement, logged before the new member id is known: named now
                unnamed[0].update({"member": member, "client": client_of(member)})
                self.unnamed_static_joins.remove(unnamed[0])
                self._index_happening(member, SAME_HAPPENING["joined"], unnamed[0]["time_ms"])
                continue
            row = self._member_event(opening, kind, member=member, reason=detail or ("Static" if static else None),
                                     learnt="reason")
            row["cause"] = cause
            row["generation"] = None
            self.from_reason[(member, happening)] = row
            if kind == "failed":
                rebalance.failed.append(member)
            elif kind == "left":
                rebalance.left.append(member)
            else:
                rebalance.joined.append(member)

    def finish(self) -> None:
        if self.open is not None:
            self.open.clip_ms = self.last_ms
            self.open = None
        for rebalance in self.rebalances:
            if rebalance.outcome == "open" and rebalance.clip_ms is None:
                rebalance.clip_ms = self.last_ms
        starts = sorted(r.start_ms for r in self.rebalances if r.start_ms is not None)
        for period in self.empty_periods:
            # the first rebalance to start after the group went empty ends the period
            went_empty = period["start_ms"]
            after = bisect_right(starts, went_empty) if went_empty is not None else len(starts)
            ended = period["end_ms"] = starts[after] if after < len(starts) else None
            # an end is a start after the period's own: the period has a start when it has an end
            period["duration_ms"] = ended - went_empty if ended is not None and went_empty is not None else None

    @classmethod
    def handler_of(cls, kind: EventKind) -> Handler:
        """What a group's story does with a line of ``kind``: every kind has exactly one answer."""
        match kind:
            case EventKind.PREPARING_REBALANCE:
                return cls._on_preparing_rebalance
            case EventKind.STABILIZED:
                return cls._on_stabilized
            case EventKind.ASSIGNMENT_RECEIVED:
                return cls._on_assignment_received
            case EventKind.MEMBER_FAILED:
                return cls._on_member_failed
            case EventKind.MEMBER_LEFT:
                return cls._on_member_left
            case EventKind.MEMBER_JOINED:
                return cls._on_member_joined
            case EventKind.MEMBERS_NOT_REJOINED:
                return cls._on_members_not_rejoined
            case EventKind.GROUP_EMPTY:
                return cls._on_group_empty
            case EventKind.GROUP_DEAD:
                return cls._on_group_dead
            case EventKind.GROUP_LOADED:
                return cls._on_group_loaded
            case EventKind.GROUP_UNLOADED:
                return cls._on_group_unloaded
            case EventKind.GROUP_EPOCH_BUMPED:
                return cls._on_group_epoch_bumped
            case EventKind.TARGET_ASSIGNMENT:
                return cls._on_target_assignment
            case EventKind.MEMBER_EPOCH:
                return cls._on_member_epoch
            case EventKind.MEMBER_FENCED:
                return cls._on_member_fenced
            case EventKind.SUBSCRIPTION_CHANGED:
                return cls._on_subscription_changed
            case EventKind.METADATA_CHANGED:
                return cls._on_metadata_changed
            case EventKind.GROUP_CONVERTED:
                return cls._on_group_converted
            case EventKind.CONVERSION_REFUSED:
                return cls._on_conversion_refused
            case EventKind.CLIENT_POLL_TIMEOUT:
                return cls._on_client_poll_timeout
            case EventKind.CLIENT_LEAVE:
                return cls._on_client_leave
            case EventKind.CLIENT_HEARTBEAT_FAILED:
                return cls._on_client_heartbeat_failed
            case EventKind.CLIENT_COMMIT_FAILED:
                return cls._on_client_commit_failed
            case EventKind.CLIENT_REJOIN_REQUESTED:
                return cls._on_client_rejoin_requested
            case EventKind.COORDINATOR_LOADED | EventKind.COORDINATOR_UNLOADED | EventKind.COORDINATOR_WRITE_FAILED:
                return cls._on_coordinator_move
            case EventKind.GROUP_WRITE_FAILED:
                return cls._on_group_write_failed
            case EventKind.CLIENT_JOIN_FAILED | EventKind.CLIENT_COORDINATOR_LOST:
                return cls._on_client_coordinator_trouble
            case (EventKind.CLIENT_JOIN_START | EventKind.CLIENT_JOINED | EventKind.CLIENT_SYNCED
                  | EventKind.CLIENT_ASSIGNED | EventKind.CLIENT_REVOKED | EventKind.CLIENT_LOST
                  | EventKind.CLIENT_MEMBER_STATE | EventKind.CLIENT_RECONCILING | EventKind.CLIENT_JOIN_STATE
                  | EventKind.CLIENT_STREAMS_STATE):
                return cls._on_client_rebalance_step
            case EventKind.CLIENT_LEADER_ASSIGNED | EventKind.CLIENT_RESET | EventKind.CLIENT_FENCED:
                return cls._on_client_context
            case _:
                assert_never(kind)



# kind -> its handler, worked out once (a dict lookup per event; ``feed`` raises for a kind not in it)
_HANDLERS: dict[str, Handler] = {kind: GroupStory.handler_of(kind) for kind in EventKind}
