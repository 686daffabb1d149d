"""The story of one group: its events (broker and client lines, in time order) -> rebalances,
member events, client rebalances, causes, empty periods, storms and the findings for advice.

Pure Python over one group's events, so Spark runs it per group (``applyInPandas``) and a
paste runs it directly; both give the same rows.

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

import operator
import re
import statistics
from bisect import bisect_left, bisect_right, insort
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict, assert_never

from kafka_rebalance.model import GroupProtocol
from kafka_rebalance.pipeline.logparse.catalogue import client_of
from kafka_rebalance.pipeline.logparse.kinds import (
    Cause,
    EventKind,
    Library,
    Side,
    UnknownEventKind,
    event_kind,
)
from kafka_rebalance.pipeline.logparse.parse import LineError
from kafka_rebalance.pipeline.logparse.rows import Event, Row

EVIDENCE_WINDOW_MS = 60_000
EVIDENCE_CAP = 5
CLIENT_MERGE_MS = 5_000
# A cause is at or before the rebalance's start. The coordinator logs a change and the
# "Preparing to rebalance" it causes in one call (one clock: at the same time or before); a
# client's line is written on another host, whose clock may run this much ahead.
CLIENT_CLOCK_SLACK_MS = 1_000
# Brokers print why they rebalance from this version on (``prepareRebalance``'s reason).
REASONS_FROM_VERSION = "2.1"


@dataclass(frozen=True)
class StormRule:
    """A storm: consecutive rebalances of a group, each starting within ``gap_ms`` of the one
    before, at least ``min_rebalances`` of them."""

    gap_ms: int = 10 * 60 * 1000
    min_rebalances: int = 3
    # A client failing this often within one storm is the fail-rejoin loop.
    loop_failures: int = 3


DEFAULT_STORM_RULE = StormRule()


MemberState = tuple[int | None, str | None]  # (member epoch, state) of a KIP-848 consumer


class ConsumerMembers:
    """A consumer group's members and the epoch and state each reported last, counted by
    (epoch, state): whether every member is stable at an epoch is one lookup, not a walk over
    the members at each member's line (a group of thousands reconciling was quadratic)."""

    def __init__(self) -> None:
        self.states: dict[str | None, MemberState] = {}
        self.counts: Counter[MemberState] = Counter()

    def __len__(self) -> int:
        return len(self.states)

    def set(self, member: str | None, state: MemberState) -> None:
        self.pop(member)
        self.states[member] = state
        self.counts[state] += 1

    def setdefault(self, member: str | None, state: MemberState) -> None:
        if member not in self.states:
            self.set(member, state)

    def pop(self, member: str | None) -> MemberState | None:
        state = self.states.pop(member, None)
        if state is not None:
            self.counts[state] -= 1
        return state

    def clear(self) -> None:
        self.states.clear()
        self.counts.clear()

    def all_in(self, state: MemberState) -> bool:
        return self.counts[state] == len(self.states)


@dataclass(slots=True)
class Rebalance:
    cluster: str
    group: str
    start_ms: int | None
    old_generation: int | None = None
    generation: int | None = None
    reason: str | None = None
    state: str | None = None
    members: int | None = None
    leader: str | None = None
    end_ms: int | None = None
    outcome: str = "open"
    protocol: GroupProtocol = GroupProtocol.CLASSIC
    partition: int | None = None
    start_known: bool = True
    assignor: str | None = None
    assignor_ms: int | None = None
    stabilized_ms: int | None = None
    failed: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    joined: list[str] = field(default_factory=list)
    evidence: list[Event] = field(default_factory=list)
    source: str = "broker"
    causes: list[Row] = field(default_factory=list)
    clip_ms: int | None = None  # where an open rebalance is drawn to (the next one, or the log's end)
    during: list[str] = field(default_factory=list)  # what happened while it was open (never its cause)


# The event fields a story reads (``events`` columns; ``line_no``, ``members_text`` and
# ``topics`` only where a caller has them): a caller may leave the others out.
STORY_FIELDS = frozenset((
    "source", "seq", "time_ms", "kind", "side", "library", "member", "generation", "old_generation", "state",
    "from_state", "reason", "members", "old_member", "membership", "partitions", "count", "protocol", "assignor",
    "took_ms", "partition", "client_id", "line", "line_no", "members_text", "topics",
))


# ----------------------------------------------------------------------------- ordering

_TIME_ORDER = operator.itemgetter("time_ms", "source", "seq")


def order_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Time order; lines without a time keep their place in their file (they sort at the last
    known time of that file)."""
    try:
        # The usual case, every line with a time and its place in its file: one sort. A missing
        # field or a None beside a value (a line without a time among timed ones) raises, and
        # when nothing raises this sort makes the same comparisons with the same outcomes as
        # the general one below (ties keep the input order in both).
        return sorted(events, key=_TIME_ORDER)
    except (KeyError, TypeError):
        pass
    last_known: dict[str, int] = {}
    keyed = []
    for event in sorted(events, key=lambda e: (e.get("source") or "", e.get("seq") or 0)):
        source = event.get("source") or ""
        time_ms = event.get("time_ms")
        if time_ms is None:
            time_ms = last_known.get(source, -1)
        else:
            last_known[source] = time_ms
        keyed.append(((time_ms, source, event.get("seq") or 0), event))
    keyed.sort(key=lambda pair: pair[0])
    return [event for _, event in keyed]


_IDENTITY = ("kind", "time_ms", "member", "generation", "old_generation", "state", "reason", "client_id",
             "partitions", "from_state")


def distinct_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Without repeats of the same line: a file given twice (a copy beside its rotated original,
    an excerpt pasted twice) must not double what it shows. Lines without a time are kept.

    ``events`` in time order (``order_events``): a repeat has its line's time, so it can only
    be among the lines of that same time, and a line alone at its time is no repeat."""
    out = []
    run_time = None
    # kind and member (a repeat has the same ones) -> the one line kept at this time with them,
    # or the identities of all of them when there are several
    run: dict[tuple[str | None, str | None], Event | set[tuple[Any, ...]]] = {}
    for event in events:
        time_ms = event.get("time_ms")
        if time_ms is None:
            out.append(event)
            continue
        if time_ms != run_time:
            run_time = time_ms
            run = {}
        kind_member = (event.get("kind"), event.get("member"))
        same = run.get(kind_member)
        if same is None:
            run[kind_member] = event
        else:
            if not isinstance(same, set):
                same = run[kind_member] = {tuple(map(same.get, _IDENTITY))}
            key = tuple(map(event.get, _IDENTITY))
            if key in same:
                continue
            same.add(key)
        out.append(event)
    return out


# ----------------------------------------------------------------------------- broker side

# (pattern, cause, a text every match contains: most reasons are tested with ``in`` only)
_REASON_RULES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"[Aa]dding new member (?P<member>\S+?);? with group instance ?id (?P<instance>\S+?)(?:;|$)"), "joined",
     "dding new member "),
    (re.compile(r"[Aa]dding new member (?P<member>\S+?)\s*$"), "joined", "dding new member "),
    (re.compile(r"[Rr]emoving member (?P<member>\S+) on heartbeat expiration"), "session_timeout",
     " on heartbeat expiration"),
    (re.compile(r"[Rr]emoving member (?P<member>\S+) on LeaveGroup"), "left", " on LeaveGroup"),
    (re.compile(r"explicit `LeaveGroup` request for \((?P<member>[^,)\s]+)"), "left", "explicit `LeaveGroup` request for ("),
    (re.compile(r"Leader (?P<member>\S+) re-joining group"), "leader_rejoined", " re-joining group"),
    (re.compile(r"Updating metadata for (?:static )?member (?P<member>\S+)"), "metadata_changed",
     "Updating metadata for "),
    (re.compile(r"static member (?P<member>\S+) with instance id \S+ joined with change of protocol"), "metadata_changed",
     " joined with change of protocol"),
    (re.compile(r"Freshly-loaded group is over capacity"), "coordinator_moved", "Freshly-loaded group is over capacity"),
    (re.compile(r"on pending sync request expiration"), "sync_timeout", "on pending sync request expiration"),
    (re.compile(r"when storing group assignment"), "storage_error", "when storing group assignment"),
)
_CLIENT_REASON = re.compile(r"client reason: (?P<reason>.*)$")
CAUSE_TITLES: dict[Cause, str] = {
    Cause.JOINED: "a member joined",
    Cause.STATIC_JOINED: "a static member joined",
    Cause.RESTARTED: "a member restarted (left, then joined again)",
    Cause.LEFT: "a member left cleanly",
    Cause.POLL_TIMEOUT: "a member left: poll timeout (max.poll.interval.ms)",
    Cause.SESSION_TIMEOUT: "a member failed: session timeout",
    Cause.REBALANCE_TIMEOUT: "a member was fenced: rebalance timeout",
    Cause.METADATA_CHANGED: "subscription or topic metadata changed",
    Cause.LEADER_REJOINED: "the leader rejoined (metadata change)",
    Cause.COORDINATOR_MOVED: "the group coordinator moved",
    Cause.SYNC_TIMEOUT: "members did not sync in time",
    Cause.STORAGE_ERROR: "the coordinator failed to store the assignment",
    Cause.UNKNOWN: "not in the log",
    Cause.NOT_LOGGED: f"not logged by this version (brokers print the reason from Kafka {REASONS_FROM_VERSION})",
}


def cause_title(cause: str) -> str:
    """A ``causes.cause`` in words; a cause the story does not write is ``UnknownCause``."""
    try:
        return CAUSE_TITLES[Cause(cause)]
    except ValueError:
        raise UnknownCause(cause) from None


class UnknownCause(ValueError):
    def __init__(self, cause: str) -> None:
        super().__init__(f"unknown rebalance cause {cause!r} (known: {', '.join(Cause)})")


# Every member a rebalance's reason names, in every wording of GroupCoordinator.scala (2.1-3.9)
# and GroupMetadataManager.java (3.7+): (pattern, member event kind, cause, a text every match
# contains). ``member`` names one member, ``members`` a list ("a, b" or Scala's "Set(a, b)").
_REASON_MEMBERS: tuple[tuple[re.Pattern[str], str, str, str], ...] = (
    (re.compile(r"[Aa]dding new member (?P<member>[^\s;]+?)(?: with group instance ?id (?P<instance>[^\s;]+?))?\s*(?:;|$)"),
     "joined", "joined", "dding new member "),
    (re.compile(r"Updating metadata for static member (?P<member>[^\s;]+) with instance id (?P<instance>[^\s;]+?)\s*(?:;|$)"),
     "joined", "static_joined", "Updating metadata for static member "),
    (re.compile(r"Updating metadata for member (?P<member>[^\s;]+?)(?: during \w+)?\s*(?:;|$)"), "rejoined",
     "metadata_changed", "Updating metadata for member "),
    (re.compile(r"Leader (?P<member>[^\s;]+) re-joining group"), "rejoined", "leader_rejoined", " re-joining group"),
    (re.compile(r"Member (?P<member>[^\s;]+) is joining group during"), "rejoined", "joined", " is joining group during"),
    (re.compile(r"static member (?P<member>[^\s;]+) with instance id (?P<instance>[^\s;]+) joined with change of protocol"),
     "rejoined", "metadata_changed", " joined with change of protocol"),
    (re.compile(r"[Rr]emoving member (?P<member>[^\s;]+) on LeaveGroup"), "left", "left", " on LeaveGroup"),
    (re.compile(r"explicit `LeaveGroup` request for \((?P<members>[^)]*)\) members"), "left", "left",
     "explicit `LeaveGroup` request for ("),
    (re.compile(r"removing member (?P<member>[^\s;]+?) on heartbeat expiration"), "failed", "session_timeout",
     " on heartbeat expiration"),
    (re.compile(r"Removing (?:[A-Za-z]*Set)?[(\[](?P<members>[^)\]]*)[)\]] on pending sync request expiration"), "failed",
     "sync_timeout", " on pending sync request expiration"),
)
_WHAT_HAPPENED = {"joined": "joined", "rejoined": "rejoined", "left": "left", "poll_timeout": "left (poll timeout)",
                  "failed": "failed (session timeout)", "session_timeout": "failed (session timeout)", "fenced": "was fenced", "sync_timeout": "did not sync in time",
                  "rebalance_timeout": "did not rejoin in time"}
# member event kinds that are one happening, whichever line or reason tells it
_SAME_HAPPENING = {"joined": "join", "rejoined": "join", "left": "leave", "failed": "failure", "fenced": "failure"}


def members_in_reason(reason: str | None) -> list[tuple[str, str, str, str | None, bool]]:
    """(member, member event kind, cause, the client's reason, static) for every member a
    rebalance's reason names."""
    if not reason:
        return []
    client_reason = _CLIENT_REASON.search(reason) if "client reason: " in reason else None
    detail = client_reason.group("reason") if client_reason else None
    found: list[tuple[str, str, str, str | None, bool]] = []
    for pattern, kind, cause, text in _REASON_MEMBERS:
        if text not in reason:
            continue
        for match in pattern.finditer(reason):
            names = match.groupdict()
            instance = names.get("instance")
            static = bool(instance) and instance not in ("None", "null")
            member_cause = cause
            if cause == "joined" and static:
                member_cause = "static_joined"
            if kind == "left" and detail and "poll timeout" in detail.lower():
                member_cause = "poll_timeout"
            members = [names["member"]] if names.get("member") else re.findall(r"[^\s,]+", names.get("members") or "")
            found.extend((member, kind, member_cause, detail, static) for member in members)
    return found


def _cause_from_reason(reason: str | None) -> tuple[str, str | None, str | None] | None:
    if not reason:
        return None
    client_reason = _CLIENT_REASON.search(reason) if "client reason: " in reason else None
    detail = client_reason.group("reason") if client_reason else None
    for pattern, cause, text in _REASON_RULES:
        match = pattern.search(reason) if text in reason else None
        if match:
            member = match.groupdict().get("member")
            instance = match.groupdict().get("instance")
            if cause == "joined" and instance and instance not in ("None", "null"):
                cause = "static_joined"
            if cause == "left" and detail and "poll timeout" in detail.lower():
                cause = "poll_timeout"
            if cause == "metadata_changed" and detail and "need to re-join with the given member-id" in detail:
                cause = "joined"
            return cause, member, detail
    return None


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
        self.member_events: list[Row] = []
        # client -> times it failed, left or was fenced (``_rejoins``)
        self.departed: dict[str, list[int | None]] = {}
        self.empty_periods: list[Row] = []
        self.recent: list[Row] = []  # departures, joins and client signals not yet tied to a rebalance
        self.coordinator_moves = coordinator_moves or []
        self.moves_by_partition: dict[Any, list[Event]] | None = None
        self.partition: int | None = None
        self.consumer_members = ConsumerMembers()
        self.last_epoch: int | None = None
        self.last_ms: int | None = None
        # (member, happening) -> the member event a rebalance's reason told, until the member's
        # own line (logged just before or after the reason) is read
        self.from_reason: dict[tuple[str, str], dict[str, Any]] = {}
        # The member events by (member, happening): their times, ascending, and how many have no
        # time; and the static joins not yet named. A rebalance's reason is checked against them
        # (``_members_from_reason``): walking every member event instead made a storm of
        # thousands of rebalances in one group quadratic.
        self.happened_at: dict[tuple[str, str], list[int]] = {}
        self.happened_untimed: Counter[tuple[str, str]] = Counter()
        self.unnamed_static_joins: list[Row] = []
        # Each rebalance's place in ``rebalances``, and the consumer-protocol ones by the epoch
        # each was given (a later line may give it another: checked when read), so a target
        # assignment finds its rebalance without walking every one before it.
        self.place: dict[int, int] = {}
        self.consumer_epochs: dict[int | None, list[Rebalance]] = {}

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
                      reason: str | None = None, *, learnt: str = "line") -> Row:
        """A member event; ``learnt``: from its own ``line``, or from a rebalance's ``reason``."""
        member = member or event.get("member") or event.get("client_id")
        happening = _SAME_HAPPENING.get(kind)
        if learnt == "line" and happening and member:
            told = self.from_reason.get((member, happening))
            if told is not None and _near(told["time_ms"], event.get("time_ms")):
                # the member's own line, logged just after the reason that named it: one event
                del self.from_reason[(member, happening)]
                told.update(source="line", kind=kind, input=event.get("source"), side=event.get("side"),
                            line=event.get("line"), generation=event.get("generation"))
                if reason:
                    told["reason"] = reason
                return told
        row: Row = {"cluster": self.cluster, "group": self.group, "member": member, "time_ms": event.get("time_ms"),
               "kind": kind, "client": client_of(member) if kind in ("failed", "left", "joined", "rejoined", "fenced")
               else (event.get("client_id") or client_of(member)), "reason": reason, "source": learnt,
               "input": event.get("source"), "side": event.get("side"), "generation": event.get("generation"),
               "line": event.get("line")}
        self.member_events.append(row)
        if happening and member:
            self._index_happening(member, happening, row["time_ms"])
        elif member is None and kind == "joined" and reason == "Static":
            self.unnamed_static_joins.append(row)
        if kind in ("failed", "left", "fenced") and row["client"]:
            self.departed.setdefault(row["client"], []).append(row["time_ms"])
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
        if partition is not None and event.get("side") == Side.BROKER and kind not in (
                "coordinator_loaded", "coordinator_unloaded"):
            self.partition = partition
        handler = _HANDLERS.get(kind)
        if handler is None:
            raise UnknownEventKind(kind)
        handler(self, event)

    def _on_preparing_rebalance(self, event: Event) -> None:
        old = event.get("old_generation")
        current = self.open
        if current is not None and current.old_generation == old:
            current.evidence.append(event)
            return
        if current is not None:
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
        if current is not None:
            self._close_open(event.get("time_ms"))
        awaiting = self.awaiting_sync
        if awaiting is not None and awaiting.generation == generation:
            return awaiting
        rebalance = self._new(event, old_generation=None if generation is None else generation - 1, start_known=False)
        self._claim_recent(rebalance)
        self.open = rebalance
        return rebalance

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
                target.causes.append(self._cause(kind_cause, row["member"], reason, [event]))
            else:
                target.during.append(f"{row['member']} {_WHAT_HAPPENED.get(kind_cause, kind)}")
                row["during_rebalance"] = True
        else:
            self.recent.append({"cause": kind_cause, "member": row["member"], "detail": reason, "event": event,
                                "departure": kind})

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
        self.recent.append({"cause": cause, "member": row["member"], "detail": event.get("membership"), "event": event,
                            "departure": None})

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
        for member in re.findall(r"[\w.\-]+", event.get("members_text") or event.get("line", "").split(":")[-1]):
            row = self._member_event(event, "failed", member=member, reason="did not rejoin in time")
            row["cause"] = "rebalance_timeout"
            if target is not None:
                target.failed.append(member)
                target.during.append(f"{member} {_WHAT_HAPPENED['rebalance_timeout']}")

    def _on_group_loaded(self, event: Event) -> None:
        self._member_event(event, "coordinator_loaded", member="")
        self.recent.append({"cause": "coordinator_moved", "member": None, "detail": event.get("line"), "event": event,
                            "departure": None})

    def _on_group_unloaded(self, event: Event) -> None:
        self._member_event(event, "coordinator_unloaded", member="")

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
        rebalance.causes.sort(key=lambda c: c["events"][0].get("time_ms") != event.get("time_ms")
                              if c["events"] else True)
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

    def _on_member_epoch(self, event: Event) -> None:
        member = event.get("member")
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
        self.recent.append({"cause": "metadata_changed", "member": event.get("member"),
                            "detail": f"subscribed topics: {event.get('topics') or ''}", "event": event, "departure": None})

    def _on_metadata_changed(self, event: Event) -> None:
        self.recent.append({"cause": "metadata_changed", "member": None, "detail": "topic metadata changed",
                            "event": event, "departure": None})

    def _on_group_converted(self, event: Event) -> None:
        """The online migration: epochs continue from the classic generation (and back)."""
        self._member_event(event, "converted", member="", reason=f"to {event.get('protocol')}")
        self.last_epoch = None
        if event.get("protocol") == GroupProtocol.CLASSIC:
            self.consumer_members.clear()

    def _on_conversion_refused(self, event: Event) -> None:
        self._member_event(event, "conversion_refused", member="", reason=event.get("reason"))

    def _on_coordinator_move(self, event: Event) -> None:
        """A coordinator loaded or resigned a ``__consumer_offsets`` partition: such lines name
        no group; every story reads them as ``coordinator_moves`` (``_moves_of``)."""

    # -- client lines that explain a rebalance
    def _on_client_poll_timeout(self, event: Event) -> None:
        row = self._member_event(event, "poll_timeout", reason="consumer poll timeout has expired")
        self._client_signal({"cause": "poll_timeout", "member": row["member"], "detail": row["reason"], "event": event,
                             "departure": "client"})

    def _on_client_leave(self, event: Event) -> None:
        reason = event.get("reason")
        row = self._member_event(event, "leave_request", reason=reason)
        cause = "poll_timeout" if reason and "poll timeout" in reason.lower() else "left"
        self._client_signal({"cause": cause, "member": row["member"], "detail": reason, "event": event,
                             "departure": "client"})

    def _on_client_heartbeat_failed(self, event: Event) -> None:
        self._member_event(event, "heartbeat_failed", reason=event.get("reason"))

    def _on_client_commit_failed(self, event: Event) -> None:
        self._member_event(event, "commit_failed", reason=event.get("reason"))

    def _on_client_rejoin_requested(self, event: Event) -> None:
        reason = event.get("reason") or ""
        if "metadata" in reason or "subscription" in reason:
            self._client_signal({"cause": "metadata_changed", "member": event.get("client_id"), "detail": reason,
                                 "event": event, "departure": "client"})

    def _on_client_rebalance_step(self, event: Event) -> None:
        """A step of a client's own rebalance (joining, synced, assigned, revoked, lost, state
        changes): ``client_rebalances`` reads these over the group's ordered events."""

    def _on_client_context(self, event: Event) -> None:
        """A client line that neither opens, closes nor explains a rebalance (the leader's
        assignment, a reset generation, a failed join, a lost coordinator, a fenced epoch): kept
        in ``events`` as the context an operator reads, the broker's lines tell the story."""

    def _client_signal(self, item: dict[str, Any]) -> None:
        """A client's line explains the next rebalance, or the one the coordinator opened just
        before it: the client's clock may run up to ``CLIENT_CLOCK_SLACK_MS`` ahead."""
        target, time_ms = self.open, item["event"].get("time_ms")
        if target is not None and target.start_ms is not None and time_ms is not None \
                and 0 <= time_ms - target.start_ms <= CLIENT_CLOCK_SLACK_MS:
            target.causes.append(self._cause(item["cause"], item["member"], item["detail"], [item["event"]]))
            return
        self.recent.append(item)

    # -- causes
    def _cause(self, cause: str, member: str | None, detail: str | None, events: list[Event]) -> Row:
        return {"cause": cause, "member": member, "detail": detail, "events": events}

    def _claim_recent(self, rebalance: Rebalance) -> None:
        """Departures, joins and client signals shortly before a rebalance opened caused it."""
        start = rebalance.start_ms
        kept = []
        for item in self.recent:
            time_ms = item["event"].get("time_ms")
            slack = CLIENT_CLOCK_SLACK_MS if item["event"].get("side") == Side.CLIENT else 0
            close = start is None or time_ms is None or -slack <= start - time_ms <= EVIDENCE_WINDOW_MS
            if close:
                rebalance.causes.append(self._cause(item["cause"], item["member"], item["detail"], [item["event"]]))
                if item["departure"] in ("failed", "fenced"):
                    rebalance.failed.append(item["member"])
                elif item["departure"] == "left":
                    rebalance.left.append(item["member"])
            elif time_ms is not None and start is not None and time_ms > start + slack:
                kept.append(item)
        self.recent = kept
        reason = _cause_from_reason(rebalance.reason)
        if reason is not None:
            cause, member, detail = reason
            if cause in ("joined", "static_joined") and self._rejoins(client_of(member), start):
                cause = "restarted"
            rebalance.causes.insert(0, self._cause(cause, member, detail or rebalance.reason, rebalance.evidence[:1]))
        self._members_from_reason(rebalance)
        if rebalance.partition is not None:
            for move in self._moves_of(rebalance.partition):
                if move.get("time_ms") is not None and start is not None \
                        and 0 <= start - move["time_ms"] <= EVIDENCE_WINDOW_MS:
                    rebalance.causes.append(self._cause("coordinator_moved", None, move.get("line"), [move]))

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
            happening = _SAME_HAPPENING[kind]
            if self._happened_near(member, happening, start):
                continue
            unnamed = [e for e in self.unnamed_static_joins if _near(e["time_ms"], start)] if static else []
            if len(unnamed) == 1:
                # a static member's replacement, logged before the new member id is known: named now
                unnamed[0].update(member=member, client=client_of(member))
                self.unnamed_static_joins.remove(unnamed[0])
                self._index_happening(member, _SAME_HAPPENING["joined"], unnamed[0]["time_ms"])
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
            after = bisect_right(starts, period["start_ms"]) if period["start_ms"] is not None else len(starts)
            period["end_ms"] = starts[after] if after < len(starts) else None
            period["duration_ms"] = period["end_ms"] - period["start_ms"] if period["end_ms"] is not None else None

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
            case EventKind.COORDINATOR_LOADED | EventKind.COORDINATOR_UNLOADED:
                return cls._on_coordinator_move
            case (EventKind.CLIENT_JOIN_START | EventKind.CLIENT_JOINED | EventKind.CLIENT_SYNCED
                  | EventKind.CLIENT_ASSIGNED | EventKind.CLIENT_REVOKED | EventKind.CLIENT_LOST
                  | EventKind.CLIENT_MEMBER_STATE | EventKind.CLIENT_RECONCILING | EventKind.CLIENT_JOIN_STATE
                  | EventKind.CLIENT_STREAMS_STATE):
                return cls._on_client_rebalance_step
            case (EventKind.CLIENT_LEADER_ASSIGNED | EventKind.CLIENT_RESET | EventKind.CLIENT_JOIN_FAILED
                  | EventKind.CLIENT_COORDINATOR_LOST | EventKind.CLIENT_FENCED):
                return cls._on_client_context
            case _:
                assert_never(kind)


def _near(first_ms: int | None, second_ms: int | None) -> bool:
    """Close enough in time to be one happening (a line without a time is near anything)."""
    return first_ms is None or second_ms is None or abs(first_ms - second_ms) <= EVIDENCE_WINDOW_MS


# kind -> its handler, worked out once (a dict lookup per event; ``feed`` raises for a kind not in it)
_HANDLERS: dict[str, Handler] = {kind: GroupStory.handler_of(kind) for kind in EventKind}


# ----------------------------------------------------------------------------- client side

_STREAMS_REBALANCING = {"PARTITIONS_REVOKED", "PARTITIONS_ASSIGNED", "REBALANCING"}


# A client in the logs: (source file, client id or else its library).
_ClientKey = tuple[str | None, str | None]


def client_rebalances(cluster: str, group: str, events: list[Event]) -> list[Row]:
    """Per client (source + client id), one row per rebalance it took part in."""
    rows: list[Row] = []
    current: dict[_ClientKey, Row] = {}

    def open_row(key: _ClientKey, event: Event) -> Row:
        row = current.get(key)
        if row is None:
            row = {"cluster": cluster, "group": group, "source": event.get("source"),
                   "client_library": event.get("library"), "client": event.get("client_id"),
                   "member": None, "generation": None, "protocol": None, "assigned": [], "revoked": [], "lost": [],
                   "start_ms": event.get("time_ms"), "end_ms": None, "outcome": "open", "reason": None}
            current[key] = row
            rows.append(row)
        return row

    def close(key: _ClientKey, event: Event) -> None:
        row = current.pop(key, None)
        if row is not None:
            row["end_ms"] = event.get("time_ms")
            row["outcome"] = "completed"

    for event in events:
        if event.get("side") != Side.CLIENT:
            continue
        kind = event_kind(event["kind"])
        key = (event.get("source"), event.get("client_id") or event.get("library"))
        partitions = _partition_list(event.get("partitions"))
        match kind:
            case EventKind.CLIENT_JOIN_START | EventKind.CLIENT_REJOIN_REQUESTED:
                row = open_row(key, event)
                if kind is EventKind.CLIENT_REJOIN_REQUESTED:
                    row["reason"] = event.get("reason")
            case EventKind.CLIENT_JOINED:
                row = open_row(key, event)
                if row["generation"] is not None and row["generation"] != event.get("generation"):
                    close(key, event)
                    row = open_row(key, event)
                row.update(generation=event.get("generation"), member=event.get("member") or row["member"],
                           protocol=event.get("protocol") or row["protocol"])
            case EventKind.CLIENT_SYNCED:
                row = open_row(key, event)
                row.update(generation=event.get("generation"), member=event.get("member") or row["member"],
                           protocol=event.get("protocol") or row["protocol"])
                row["end_ms"] = event.get("time_ms")
            case EventKind.CLIENT_REVOKED:
                row = open_row(key, event)
                row["revoked"].extend(partitions)
                if event.get("count") is not None and not partitions:
                    row["revoked"].append(f"{event['count']} partition(s)")
            case EventKind.CLIENT_LOST:
                row = open_row(key, event)
                row["lost"].extend(partitions)
            case EventKind.CLIENT_ASSIGNED:
                row = open_row(key, event)
                row["assigned"].extend(partitions)
                if event.get("count") is not None and not partitions:
                    row["assigned"].append(f"{event['count']} partition(s)")
                if event.get("library") != Library.LIBRDKAFKA:
                    close(key, event)
            case EventKind.CLIENT_MEMBER_STATE:
                state = event.get("state")
                if state in ("JOINING", "RECONCILING", "ACKNOWLEDGING"):
                    row = open_row(key, event)
                    row.update(member=event.get("member"), protocol=GroupProtocol.CONSUMER)
                    if event.get("generation") is not None and event["generation"] > 0:
                        row["generation"] = event["generation"]
                elif state == "STABLE":
                    stable = current.get(key)
                    if stable is not None:
                        if event.get("generation") is not None and event["generation"] > 0:
                            stable["generation"] = event["generation"]
                        close(key, event)
                elif state in ("FENCED", "UNSUBSCRIBED", "FATAL", "LEAVING"):
                    ending = current.get(key)
                    if ending is not None:
                        ending["reason"] = f"member {state.lower()}"
            case EventKind.CLIENT_RECONCILING:
                row = open_row(key, event)
                row["generation"] = event.get("generation")
                row["protocol"] = GroupProtocol.CONSUMER
            case EventKind.CLIENT_JOIN_STATE:
                state = event.get("state")
                if state in ("wait-join", "wait-metadata", "wait-sync"):
                    open_row(key, event)
                elif state == "steady":
                    close(key, event)
            case EventKind.CLIENT_STREAMS_STATE:
                if event.get("line") and "stream-client" in event["line"]:
                    continue
                state = event.get("state")
                if state in _STREAMS_REBALANCING:
                    open_row(key, event)
                elif state == "RUNNING":
                    close(key, event)
            case (EventKind.CLIENT_LEADER_ASSIGNED | EventKind.CLIENT_LEAVE | EventKind.CLIENT_POLL_TIMEOUT
                  | EventKind.CLIENT_HEARTBEAT_FAILED | EventKind.CLIENT_COMMIT_FAILED | EventKind.CLIENT_RESET
                  | EventKind.CLIENT_JOIN_FAILED | EventKind.CLIENT_COORDINATOR_LOST | EventKind.CLIENT_FENCED):
                pass  # the member's own story (``GroupStory``), not a step of its rebalance
            case (EventKind.PREPARING_REBALANCE | EventKind.STABILIZED | EventKind.ASSIGNMENT_RECEIVED
                  | EventKind.MEMBER_FAILED | EventKind.MEMBER_LEFT | EventKind.MEMBER_JOINED
                  | EventKind.MEMBERS_NOT_REJOINED | EventKind.GROUP_EMPTY | EventKind.GROUP_DEAD
                  | EventKind.GROUP_LOADED | EventKind.GROUP_UNLOADED | EventKind.COORDINATOR_LOADED
                  | EventKind.COORDINATOR_UNLOADED | EventKind.GROUP_EPOCH_BUMPED | EventKind.TARGET_ASSIGNMENT
                  | EventKind.MEMBER_EPOCH | EventKind.MEMBER_FENCED | EventKind.SUBSCRIPTION_CHANGED
                  | EventKind.METADATA_CHANGED | EventKind.GROUP_CONVERTED | EventKind.CONVERSION_REFUSED):
                raise AssertionError(f"a broker's line on the client side: {kind}")
            case _:
                assert_never(kind)
    # Spring's container logs the same assignment as the Java consumer it wraps: keep its rows
    # only for sources where the consumer's own lines are missing.
    java_sources = {r["source"] for r in rows if r["client_library"] == Library.JAVA}
    rows = [r for r in rows if not (r["client_library"] == Library.SPRING and r["source"] in java_sources)]
    for row in rows:
        if row["end_ms"] is not None and row["start_ms"] is not None:
            row["duration_ms"] = row["end_ms"] - row["start_ms"]
        else:
            row["duration_ms"] = None
    return rows


def _partition_list(text: str | None) -> list[str]:
    if not text:
        return []
    inner = text.strip().strip(".").strip()
    if inner.startswith(("[", "{")):
        inner = inner[1:-1] if inner.endswith(("]", "}")) else inner[1:]
    inner = re.sub(r"TopicPartition\(topic='([^']*)', partition=(\d+)\)", r"\1-\2", inner)
    return [p.strip().strip("'") for p in inner.split(",") if p.strip()]


def rebalances_from_clients(cluster: str, group: str, rows: list[Row]) -> list[Rebalance]:
    """A group seen only in client logs: client rebalances of the same generation (or, without
    generations, starting within ``CLIENT_MERGE_MS`` of each other) are one group rebalance."""
    merged: list[Rebalance] = []
    by_generation: dict[int, Rebalance] = {}
    for row in sorted(rows, key=lambda r: (r["start_ms"] if r["start_ms"] is not None else -1)):
        generation = row.get("generation")
        target = by_generation.get(generation) if generation is not None else None
        if target is None and generation is None and merged:
            last = merged[-1]
            reach = max(x for x in (last.end_ms, last.start_ms, -1) if x is not None)
            if row["start_ms"] is not None and row["start_ms"] <= reach + CLIENT_MERGE_MS and last.generation is None:
                target = last
        if target is None:
            protocol = GroupProtocol.CONSUMER if row.get("protocol") == GroupProtocol.CONSUMER else GroupProtocol.CLASSIC
            target = Rebalance(cluster, group, row["start_ms"], generation=generation,
                               old_generation=None, protocol=protocol, source="client")
            target.outcome = "open"
            target.members = 0
            merged.append(target)
            if generation is not None:
                by_generation[generation] = target
        target.members = (target.members or 0) + 1
        if row["start_ms"] is not None and (target.start_ms is None or row["start_ms"] < target.start_ms):
            target.start_ms = row["start_ms"]
        if row["end_ms"] is not None:
            target.end_ms = max(target.end_ms or row["end_ms"], row["end_ms"])
            target.outcome = "stable"
        if row.get("reason") and not target.reason:
            target.reason = row["reason"]
    return merged


# ----------------------------------------------------------------------------- one group, end to end

def storms(rebalances: list[Row], member_events: list[Row], rule: StormRule) -> list[Row]:
    rows = sorted((r for r in rebalances if r["start_ms"] is not None), key=lambda r: (r["start_ms"], r["generation"] or 0))
    clusters: list[list[Row]] = []
    for row in rows:
        if clusters and row["start_ms"] - clusters[-1][-1]["start_ms"] <= rule.gap_ms:
            clusters[-1].append(row)
        else:
            clusters.append([row])
    out = []
    for members in clusters:
        if len(members) < rule.min_rebalances:
            continue
        start = members[0]["start_ms"]
        end = max((r["end_ms"] if r["end_ms"] is not None else r["start_ms"]) for r in members)
        failing = Counter(client_of(m) for r in members for m in r["failed_members"])
        top, top_count = (failing.most_common(1)[0] if failing else (None, 0))
        out.append({"cluster": members[0]["cluster"], "group": members[0]["group"], "start_ms": start, "end_ms": end,
                    "rebalances": len(members), "duration_ms": end - start,
                    "failures": sum(len(r["failed_members"]) for r in members),
                    "leaves": sum(len(r["left_members"]) for r in members), "top_client": top,
                    "top_client_failures": top_count,
                    "kind": "fail-rejoin loop" if top_count >= rule.loop_failures else "burst",
                    "restarts": sum(1 for r in members if r["cause"] in ("restarted", "left", "joined"))})
    return out


def _rebalance_row(r: Rebalance) -> Row:
    primary = r.causes[0] if r.causes else None
    duration = r.end_ms - r.start_ms if r.end_ms is not None and r.start_ms is not None else None
    return {"cluster": r.cluster, "group": r.group, "generation": r.generation, "start_ms": r.start_ms,
            "end_ms": r.end_ms if r.outcome != "open" else None, "duration_ms": duration if r.outcome != "open" else None,
            "reason": r.reason, "members": r.members, "old_generation": r.old_generation, "leader": r.leader,
            "outcome": r.outcome, "failed_members": list(dict.fromkeys(r.failed)),
            "left_members": list(dict.fromkeys(r.left)), "joined_members": list(dict.fromkeys(r.joined)),
            "partition": r.partition, "protocol": r.protocol, "source": r.source, "start_known": r.start_known,
            "assignor": r.assignor, "assignor_ms": r.assignor_ms,
            "cause": primary["cause"] if primary else "unknown", "cause_member": primary["member"] if primary else None,
            "clip_ms": r.clip_ms if r.outcome == "open" else None, "during": list(dict.fromkeys(r.during))}


class StoryRows(TypedDict):
    """One group's story: its rows of every story table, and its findings (one)."""

    rebalances: list[Row]
    member_events: list[Row]
    client_rebalances: list[Row]
    causes: list[Row]
    empty_periods: list[Row]
    storms: list[Row]
    findings: list[GroupFindings]


def story_tables(told: StoryRows) -> tuple[tuple[str, list[Row]], ...]:
    """A story's rows per table, in ``tables.STORY_TABLES`` order."""
    return (("rebalances", told["rebalances"]), ("member_events", told["member_events"]), ("storms", told["storms"]),
            ("empty_periods", told["empty_periods"]), ("client_rebalances", told["client_rebalances"]),
            ("causes", told["causes"]))


def tell(cluster: str, group: str, events: list[Event], coordinator_moves: list[Event] | None = None,
         rule: StormRule = DEFAULT_STORM_RULE) -> StoryRows:
    """All tables' rows for one group (see the module docstring)."""
    ordered = distinct_events(order_events(events))
    story = GroupStory(cluster, group, coordinator_moves)
    for event in ordered:
        try:
            story.feed(event)
        except Exception as exc:  # noqa: BLE001 - the last guard: name the input and the line
            raise LineError(event.get("source"), event.get("line_no"), exc) from exc
    story.finish()
    clients = client_rebalances(cluster, group, ordered)
    rebalances = story.rebalances
    if not any(r.source == "broker" for r in rebalances) and clients:
        rebalances = rebalances_from_clients(cluster, group, clients)
        _client_causes(rebalances, story.member_events)
    rebalances.sort(key=lambda r: (r.start_ms if r.start_ms is not None else -1))
    _infer_joins(rebalances)
    _not_logged(rebalances)
    rows = [_rebalance_row(r) for r in rebalances]
    causes = []
    for r, row in zip(rebalances, rows, strict=True):
        chosen = r.causes or [{"cause": "unknown", "member": None, "detail": None, "events": r.evidence[:1]}]
        if len(chosen) > 1:
            merged: dict[tuple[str, str | None], Row] = {}
            for cause in chosen:
                key = (cause["cause"], cause["member"])
                if key in merged:
                    merged[key]["events"] = merged[key]["events"] + cause["events"]
                else:
                    merged[key] = dict(cause)
            chosen = list(merged.values())
        for cause in chosen:
            events = cause["events"]
            if len(events) == 1:
                evidence = events if events[0] else []
            else:
                evidence = sorted((e for e in events if e),
                                  key=lambda e: (e.get("time_ms") or 0, e.get("seq") or 0))[:EVIDENCE_CAP]
            causes.append({"cluster": cluster, "group": group, "generation": row["generation"],
                           "start_ms": row["start_ms"], "cause": cause["cause"], "member": cause["member"],
                           "detail": cause["detail"], "evidence": [e.get("line") or "" for e in evidence],
                           "evidence_sources": [_where(e) for e in evidence]})
    storm_rows = storms(rows, story.member_events, rule)
    return {"rebalances": rows, "member_events": story.member_events, "client_rebalances": clients,
            "causes": causes, "empty_periods": story.empty_periods, "storms": storm_rows,
            "findings": [findings(cluster, group, rows, story.member_events, storm_rows, story.empty_periods, causes)]}


def _where(event: Event) -> str:
    """``file:line`` of an event (the Spark engine does not know line numbers: file only)."""
    line_no = event.get("line_no")
    return f"{event.get('source')}:{line_no}" if line_no is not None else str(event.get("source"))


def _client_causes(rebalances: list[Rebalance], member_events: list[Row]) -> None:
    signals = [e for e in member_events if e["kind"] in ("poll_timeout", "leave_request", "heartbeat_failed")
               and e["time_ms"] is not None]
    # The signals by time, so each rebalance finds those from the window before its start (and
    # the client's clock slack after) by binary search: a client's log of thousands of poll
    # timeouts and rebalances is not read once per rebalance.
    by_time = sorted(range(len(signals)), key=lambda i: signals[i]["time_ms"])
    times = [signals[i]["time_ms"] for i in by_time]
    for r in rebalances:
        if r.start_ms is None:
            continue
        first = bisect_left(times, r.start_ms - EVIDENCE_WINDOW_MS)
        last = bisect_right(times, r.start_ms + CLIENT_CLOCK_SLACK_MS)
        for e in map(signals.__getitem__, sorted(by_time[first:last])):  # in the order they were told
            cause = "poll_timeout" if e["kind"] == "poll_timeout" or "poll timeout" in (e["reason"] or "").lower() \
                else ("left" if e["kind"] == "leave_request" else "session_timeout")
            r.causes.append({"cause": cause, "member": e["member"], "detail": e["reason"],
                             "events": [{"line": e["line"], "source": e["input"], "seq": None}]})


def _infer_joins(rebalances: list[Rebalance]) -> None:
    """Brokers before 2.2 give no reason: a rebalance with no other evidence whose group grew
    was a join; one whose group shrank, a departure the log does not show."""
    previous_members = None
    for r in rebalances:
        if not r.causes and r.members is not None and previous_members is not None:
            if r.members > previous_members:
                r.causes.append({"cause": "joined", "member": None,
                                 "detail": f"members {previous_members} -> {r.members} (inferred)", "events": r.evidence[:1]})
            elif r.members < previous_members:
                r.causes.append({"cause": "left", "member": None,
                                 "detail": f"members {previous_members} -> {r.members} (inferred)", "events": r.evidence[:1]})
        if r.members is not None:
            previous_members = r.members


def _not_logged(rebalances: list[Rebalance]) -> None:
    """A broker before 2.1 prints no reason: a rebalance it opened that nothing before its start
    explains was caused by something this version does not log."""
    for r in rebalances:
        opening = r.evidence[0] if r.evidence else {}
        if not r.causes and r.source == "broker" and r.start_known and r.reason is None \
                and opening.get("kind") == EventKind.PREPARING_REBALANCE:
            r.causes.append({"cause": "not_logged", "member": None,
                             "detail": f"brokers before Kafka {REASONS_FROM_VERSION} print no reason, and no line "
                                       "before the rebalance explains it", "events": r.evidence[:1]})


INCIDENT_MS = 10_000


def _incidents(times: list[int]) -> list[int]:
    """Times closer than ``INCIDENT_MS`` to the previous one are the same incident."""
    out: list[int] = []
    for time_ms in sorted(times):
        if not out or time_ms - out[-1] > INCIDENT_MS:
            out.append(time_ms)
    return out


_KAFKA_PYTHON_VERSION = re.compile(r"kafka-python-(\d+\.\d+)")


class MostFailing(TypedDict):
    """The client failing most often in a group, and how regularly (a fail-rejoin loop is regular)."""

    client: str
    failures: int
    mean_interval_ms: float | None
    sd_interval_ms: float | None


class GroupFindings(TypedDict):
    """What the advice rules read of one group (``advice.advise``): counts, cadences and causes,
    all numbers, no prose. It crosses from a Spark story task to the driver as JSON
    (``findings_from_json`` checks its fields)."""

    cluster: str
    group: str
    rebalances: int
    open_rebalances: int
    median_duration_ms: float | None
    max_duration_ms: int | None
    max_generation: int | None
    first_ms: int | None
    last_ms: int | None
    failures: int
    failures_during_rebalances: int
    most_failing: MostFailing | None
    kafka_python_version: str | None
    poll_timeout_leaves: int
    poll_timeout_client: str | None
    poll_timeout_client_count: int
    poll_timeout_median_gap_ms: float | None
    leaves: int
    storms: int
    largest_storm: int
    largest_storm_kind: str | None
    largest_storm_client: str | None
    largest_storm_minutes: float | None
    restart_rebalances: int
    static_members_seen: bool
    clustered_session_timeouts: int
    coordinator_moves: int
    empty_periods: int
    longest_empty_ms: int | None
    cause_counts: dict[str, int]  # Cause -> rebalances it caused
    protocols: list[str]  # the group protocols its rebalances ran (GroupProtocol values)


def findings_from_json(text: str) -> GroupFindings:
    """A group's findings as a story task sent them; fields other than ``GroupFindings``' are
    a defect, not something to drop."""
    import json

    value = json.loads(text)
    fields = set(GroupFindings.__annotations__)
    if not isinstance(value, dict) or set(value) != fields:
        got = set(value) if isinstance(value, dict) else type(value).__name__
        raise ValueError(f"findings with fields {got}, expected {sorted(fields)}")
    found: GroupFindings = value  # type: ignore[assignment]  # its fields were checked above
    return found


def findings(cluster: str, group: str, rebalances: list[Row], member_events: list[Row], storm_rows: list[Row],
             empty_periods: list[Row], causes: list[Row]) -> GroupFindings:
    """What the advice rules need for one group (all numbers, no prose)."""
    durations = [r["duration_ms"] for r in rebalances if r["duration_ms"] is not None]
    generations = [g for r in rebalances for g in (r["generation"], r["old_generation"]) if g is not None]
    # one pass over the member events for what is read from them below
    failures = []
    failures_during = 0
    poll_by_client: dict[str, list[int]] = defaultdict(list)
    versions = []
    leaves = 0
    static_members_seen = False
    for e in member_events:
        kind = e["kind"]
        if kind in ("failed", "fenced"):
            if e.get("cause") != "rebalance_timeout":
                failures.append(e)
                failures_during += bool(e.get("during_rebalance"))
        elif kind == "left":
            leaves += 1
        if (kind == "poll_timeout" or (kind in ("left", "leave_request")
                                       and "poll timeout" in (e["reason"] or "").lower())) and e["time_ms"] is not None:
            poll_by_client[e["client"] or e["member"] or "?"].append(e["time_ms"])
        member = e["member"]
        if member and "kafka-python-" in member:
            version = _KAFKA_PYTHON_VERSION.search(member)
            if version:
                versions.append(version.group(1))
        if not static_members_seen and e.get("reason") == "Static":
            static_members_seen = True
    by_client: dict[str, list[int]] = defaultdict(list)
    for e in failures:
        if e["time_ms"] is not None:
            by_client[e["client"] or e["member"] or "?"].append(e["time_ms"])
    most_failing: MostFailing | None = None
    for client, times in by_client.items():
        times.sort()
        intervals = [b - a for a, b in zip(times, times[1:], strict=False)]
        candidate: MostFailing = {"client": client, "failures": len(times),
                     "mean_interval_ms": statistics.fmean(intervals) if intervals else None,
                     "sd_interval_ms": statistics.pstdev(intervals) if len(intervals) > 1 else (0.0 if intervals else None)}
        if most_failing is None or candidate["failures"] > most_failing["failures"]:
            most_failing = candidate
    # The client's warning, its LeaveGroup and the broker's line are one incident.
    poll_by_client = {client: _incidents(times) for client, times in poll_by_client.items()}
    poll_client, poll_times = max(poll_by_client.items(), key=lambda kv: len(kv[1]), default=(None, []))
    poll_gaps = [b - a for a, b in zip(poll_times, poll_times[1:], strict=False)]
    # session timeouts of different members close together: a shared cause
    timeout_times = sorted((e["time_ms"], e["client"]) for e in failures if e["time_ms"] is not None)
    clustered = 0
    for i, (t, _) in enumerate(timeout_times):
        clients = set()
        for j in range(i, len(timeout_times)):  # not a copy of the rest at each i
            u, c = timeout_times[j]
            if u - t > 60_000:  # in time order: none later is closer
                break
            clients.add(c)
        clustered = max(clustered, len(clients))
    cause_counts = Counter(c["cause"] for c in causes)
    restart_rebalances = sum(1 for r in rebalances if r["cause"] in ("restarted",))
    largest = max(storm_rows, key=lambda s: s["rebalances"], default=None)
    return {
        "cluster": cluster, "group": group, "rebalances": len(rebalances),
        "open_rebalances": sum(1 for r in rebalances if r["outcome"] == "open"),
        "median_duration_ms": statistics.median(durations) if durations else None,
        "max_duration_ms": max(durations) if durations else None,
        "max_generation": max(generations) if generations else None,
        "first_ms": min((r["start_ms"] for r in rebalances if r["start_ms"] is not None), default=None),
        "last_ms": max((r["end_ms"] or r["start_ms"] for r in rebalances if r["start_ms"] is not None), default=None),
        "failures": len(failures), "failures_during_rebalances": failures_during, "most_failing": most_failing,
        "kafka_python_version": min(versions) if versions else None,
        "poll_timeout_leaves": sum(len(v) for v in poll_by_client.values()),
        "poll_timeout_client": poll_client, "poll_timeout_client_count": len(poll_times),
        "poll_timeout_median_gap_ms": statistics.median(poll_gaps) if poll_gaps else None,
        "leaves": leaves,
        "storms": len(storm_rows), "largest_storm": largest["rebalances"] if largest else 0,
        "largest_storm_kind": largest["kind"] if largest else None,
        "largest_storm_client": largest["top_client"] if largest else None,
        "largest_storm_minutes": (largest["duration_ms"] / 60000) if largest else None,
        "restart_rebalances": restart_rebalances,
        "static_members_seen": static_members_seen,
        "clustered_session_timeouts": clustered,
        "coordinator_moves": cause_counts.get("coordinator_moved", 0),
        "empty_periods": len(empty_periods),
        "longest_empty_ms": max((p["end_ms"] - p["start_ms"] for p in empty_periods
                                 if p["end_ms"] is not None and p["start_ms"] is not None), default=None),
        "cause_counts": dict(cause_counts),
        "protocols": sorted({r["protocol"] for r in rebalances}),
    }
