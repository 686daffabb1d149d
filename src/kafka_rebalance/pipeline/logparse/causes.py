"""Why a group rebalanced: the time windows a cause must fall in, the causes a broker's
reason names (every wording of GroupCoordinator.scala 2.1-3.9 and GroupMetadataManager.java
3.7+), the causes in words, and the passes over a group's finished rebalances that find causes
no single line gives (client signals, a group that grew or shrank, a broker too old to say)."""

from __future__ import annotations

import functools
import re
from bisect import bisect_left, bisect_right

from kafka_rebalance.pipeline.logparse.kinds import Cause, EventKind
from kafka_rebalance.pipeline.logparse.rebalance import CauseClaim, Rebalance
from kafka_rebalance.pipeline.logparse.rows import MemberEventRow

EVIDENCE_WINDOW_MS = 60_000
EVIDENCE_CAP = 5
# A cause is at or before the rebalance's start. The coordinator logs a change and the
# "Preparing to rebalance" it causes in one call (one clock: at the same time or before); a
# client's line is written on another host, whose clock may run this much ahead.
CLIENT_CLOCK_SLACK_MS = 1_000
# Brokers print why they rebalance from this version on (``prepareRebalance``'s reason).
REASONS_FROM_VERSION = "2.1"


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
    Cause.STORAGE_ERROR: "the coordinator failed to store the group's metadata or offsets",
    Cause.COORDINATOR_ERROR: "the coordinator could not serve the group (NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE)",
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
REASON_MEMBER_PATTERNS: tuple[tuple[re.Pattern[str], str, str, str], ...] = (
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
# A client's answer from a coordinator that could not serve it (Errors.NOT_COORDINATOR's and
# COORDINATOR_NOT_AVAILABLE's names and messages, as AbstractCoordinator logs them).
COORDINATOR_ERRORS = re.compile(r"NOT_COORDINATOR|COORDINATOR_NOT_AVAILABLE|This is not the correct coordinator|"
                                r"The coordinator is not available|NotCoordinator|CoordinatorNotAvailable")
WHAT_HAPPENED = {"joined": "joined", "rejoined": "rejoined", "left": "left", "poll_timeout": "left (poll timeout)",
                  "failed": "failed (session timeout)", "session_timeout": "failed (session timeout)", "fenced": "was fenced", "sync_timeout": "did not sync in time",
                  "rebalance_timeout": "did not rejoin in time"}
# member event kinds that are one happening, whichever line or reason tells it
SAME_HAPPENING = {"joined": "join", "rejoined": "join", "left": "leave", "failed": "failure", "fenced": "failure"}


# (member, member event kind, cause, the client's reason, static)
NamedMember = tuple[str, str, str, str | None, bool]


def client_reason_of(reason: str) -> str | None:
    """The reason a client gave, where the coordinator's reason quotes it."""
    client_reason = _CLIENT_REASON.search(reason) if "client reason: " in reason else None
    return client_reason.group("reason") if client_reason else None


@functools.lru_cache(maxsize=1024)
def members_in_reason(reason: str | None) -> tuple[NamedMember, ...]:
    """(member, member event kind, cause, the client's reason, static) for every member a
    rebalance's reason names. Kept for the last reasons read: a story reads the reason of a
    rebalance's opening line again when the rebalance opens (``GroupStory._members_from_reason``)."""
    if not reason:
        return ()
    detail = client_reason_of(reason)
    found: list[NamedMember] = []
    for pattern, kind, cause, text in REASON_MEMBER_PATTERNS:
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
    return tuple(found)


def cause_from_reason(reason: str | None) -> tuple[str, str | None, str | None] | None:
    if not reason:
        return None
    detail = client_reason_of(reason)
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



def near(first_ms: int | None, second_ms: int | None) -> bool:
    """Close enough in time to be one happening (a line without a time is near anything)."""
    return first_ms is None or second_ms is None or abs(first_ms - second_ms) <= EVIDENCE_WINDOW_MS


def client_causes(rebalances: list[Rebalance], member_events: list[MemberEventRow]) -> None:
    # (time, member event) of the client signals with a time, in the order they were told
    signals = [(at, e) for e in member_events if e["kind"] in ("poll_timeout", "leave_request", "heartbeat_failed")
               and (at := e["time_ms"]) is not None]
    # The signals by time, so each rebalance finds those from the window before its start (and
    # the client's clock slack after) by binary search: a client's log of thousands of poll
    # timeouts and rebalances is not read once per rebalance.
    by_time = sorted(range(len(signals)), key=lambda i: signals[i][0])
    times = [signals[i][0] for i in by_time]
    for r in rebalances:
        if r.start_ms is None:
            continue
        first = bisect_left(times, r.start_ms - EVIDENCE_WINDOW_MS)
        last = bisect_right(times, r.start_ms + CLIENT_CLOCK_SLACK_MS)
        for _, e in map(signals.__getitem__, sorted(by_time[first:last])):  # in the order they were told
            cause = "poll_timeout" if e["kind"] == "poll_timeout" or "poll timeout" in (e["reason"] or "").lower() \
                else ("left" if e["kind"] == "leave_request" else "session_timeout")
            r.causes.append(CauseClaim(cause, e["member"], e["reason"],
                                       [{"line": e["line"], "source": e["input"], "seq": None}]))


def infer_joins(rebalances: list[Rebalance]) -> None:
    """Brokers before 2.2 give no reason: a rebalance with no other evidence whose group grew
    was a join; one whose group shrank, a departure the log does not show."""
    previous_members = None
    for r in rebalances:
        if not r.causes and r.members is not None and previous_members is not None:
            if r.members > previous_members:
                r.causes.append(CauseClaim("joined", None, f"members {previous_members} -> {r.members} (inferred)",
                                           r.evidence[:1]))
            elif r.members < previous_members:
                r.causes.append(CauseClaim("left", None, f"members {previous_members} -> {r.members} (inferred)",
                                           r.evidence[:1]))
        if r.members is not None:
            previous_members = r.members


def not_logged(rebalances: list[Rebalance]) -> None:
    """A broker before 2.1 prints no reason: a rebalance it opened that nothing before its start
    explains was caused by something this version does not log."""
    for r in rebalances:
        opening = r.evidence[0] if r.evidence else {}
        if not r.causes and r.source == "broker" and r.start_known and r.reason is None \
                and opening.get("kind") == EventKind.PREPARING_REBALANCE:
            r.causes.append(CauseClaim("not_logged", None, f"brokers before Kafka {REASONS_FROM_VERSION} print no reason, "
                                       "and no line before the rebalance explains it", r.evidence[:1]))
