"""What the advice rules read of one group (``GroupFindings``): counts, cadences and causes
from its story's rows, all numbers, no prose."""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from typing import TypedDict

from kafka_rebalance.pipeline.logparse.rows import (
    CauseRow,
    EmptyPeriodRow,
    MemberEventRow,
    RebalanceRow,
    StormRow,
)

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
    failures: int  # session timeouts and fencings, one per member id removed
    failed_clients: int  # the clients they were (a restarted client's new member id is the same client)
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
    coordinator_write_failures: int  # the coordinator's failed writes of the group's metadata or offsets
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


def findings(cluster: str, group: str, rebalances: list[RebalanceRow], member_events: list[MemberEventRow],
             storm_rows: list[StormRow], empty_periods: list[EmptyPeriodRow], causes: list[CauseRow]) -> GroupFindings:
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
    write_failures = 0
    for e in member_events:
        kind = e["kind"]
        write_failures += kind == "coordinator_write_failed"
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
    timeout_times = sorted((e["time_ms"], e["client"] or e["member"] or "?") for e in failures if e["time_ms"] is not None)
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
        "failures": len(failures), "failed_clients": len({e["client"] or e["member"] for e in failures}),
        "failures_during_rebalances": failures_during, "most_failing": most_failing,
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
        "coordinator_write_failures": write_failures,
        "empty_periods": len(empty_periods),
        "longest_empty_ms": max((p["end_ms"] - p["start_ms"] for p in empty_periods
                                 if p["end_ms"] is not None and p["start_ms"] is not None), default=None),
        "cause_counts": dict(cause_counts),
        "protocols": sorted({r["protocol"] for r in rebalances}),
    }
