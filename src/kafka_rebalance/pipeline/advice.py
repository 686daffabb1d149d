"""What to do about what the logs show, per group, with the numbers that justify it.

Input is one findings dict per group (``logparse.findings.findings``: counts, cadences, causes),
so this is plain Python.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# Failures of one client whose intervals vary by less than this fraction of their mean come at a
# steady period: the signature of a processing loop that always overruns a timeout.
STEADY_CADENCE_CV = 0.25
STEADY_MIN_FAILURES = 3
# A generation this high says the group has rebalanced that many times since it was created.
HIGH_GENERATION = 1000
SLOW_REBALANCE_MS = 10_000
# kafka-python before 1.4 sends heartbeats only from poll() (no KIP-62 background thread).
KAFKA_PYTHON_BACKGROUND_HEARTBEAT = (1, 4)


@dataclass(frozen=True)
class Advice:
    group: str
    severity: str  # "problem" or "note"
    finding: str
    advice: str
    rule: str = ""  # which finding this is, to list the groups that share it together
    cluster: str = "default"
    protocol: str = "classic"  # the group protocol whose settings the advice names (GroupProtocol values)

    def as_dict(self) -> dict[str, str]:
        # (dataclasses.asdict deep-copies every field: slow for the thousands a big log gives)
        return {"group": self.group, "severity": self.severity, "finding": self.finding, "advice": self.advice,
                "rule": self.rule, "cluster": self.cluster, "protocol": self.protocol}


def _value(row: Any, name: str) -> Any:
    value = row.get(name) if isinstance(row, dict) else getattr(row, name, None)
    if value is None:
        return None
    try:
        if isinstance(value, float) and math.isnan(value):
            return None
    except TypeError:
        pass
    return value


def _seconds(ms: float) -> str:
    seconds = ms / 1000
    if seconds >= 120:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"


def _version_tuple(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        return tuple(int(p) for p in text.split("."))
    except ValueError:
        return None


def consumer_protocol_only(row: Any) -> bool:
    """Did every rebalance of the group run KIP-848's consumer protocol? Then its settings are
    the broker's ``group.consumer.*`` and the server assignor, not the classic consumer's."""
    protocols = _value(row, "protocols")
    return protocols is not None and len(list(protocols)) > 0 and set(protocols) == {"consumer"}


def advise_group(row: Any) -> list[Advice]:
    group = str(_value(row, "group"))
    cluster = str(_value(row, "cluster") or "default")
    items = _advise(row, group)
    items.extend(_advise_causes(row, group))
    items.extend(_advise_coordinator(row, group))
    protocol = "consumer" if consumer_protocol_only(row) else "classic"
    return [Advice(i.group, i.severity, i.finding, i.advice, i.rule, cluster, protocol) for i in items]


def _advise_causes(row: Any, group: str) -> list[Advice]:
    """Advice from what caused the rebalances (restarts, clustered timeouts, coordinator moves)."""
    items = []
    restarts = int(_value(row, "restart_rebalances") or 0)
    session = "group.consumer.session.timeout.ms (a broker setting)" if consumer_protocol_only(row) \
        else "session.timeout.ms"
    if restarts >= 2 and not _value(row, "static_members_seen"):
        items.append(Advice(
            group, "problem", f"{restarts} rebalances were members restarting (a member left or failed, then the "
            "same client joined again)",
            f"A rolling restart cost {restarts} rebalances. With static membership (group.instance.id set, and "
            f"{session} longer than one restart) a restarted consumer takes its partitions back without a "
            "rebalance: it would cost none.", rule="restarts"))
    clustered = int(_value(row, "clustered_session_timeouts") or 0)
    if clustered >= 3:
        # counted by client, as the session-timeouts finding's "different client(s)" are
        items.append(Advice(
            group, "problem", f"{clustered} different clients timed out within one minute",
            "Session timeouts of many members at once point at a shared cause (a broker or network pause, a GC "
            "pause on a shared host, the coordinator moving) rather than at one slow consumer.",
            rule="clustered-timeouts"))
    moves = int(_value(row, "coordinator_moves") or 0)
    if moves:
        items.append(Advice(
            group, "note", f"{moves} rebalance(s) right after the group coordinator moved",
            "The __consumer_offsets partition of the group changed leader (broker restart or reassignment); "
            "members rejoin the new coordinator. Roll brokers one at a time and wait for the partitions to be "
            "led by their preferred replicas.", rule="coordinator-moves"))
    open_count = int(_value(row, "open_rebalances") or 0)
    total = int(_value(row, "rebalances") or 0)
    if open_count and total:
        items.append(Advice(
            group, "note", f"{open_count} of {total} rebalance(s) never completed in the log",
            "A rebalance with no closing line was restarted before every member rejoined, or the log ends (or "
            "a line is missing) before it completed. Look at the members that were slow to rejoin.",
            rule="open-rebalances"))
    return items


def _advise_coordinator(row: Any, group: str) -> list[Advice]:
    """Advice from the coordinator's own trouble: writes to __consumer_offsets refused, and
    clients told NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE."""
    items = []
    causes = _value(row, "cause_counts") or {}
    stored = int(causes.get("storage_error", 0))
    writes = int(_value(row, "coordinator_write_failures") or 0)
    if stored or writes:
        parts = [f"{stored} rebalance(s) after the coordinator failed to store the group's metadata"] if stored else []
        if writes:
            parts.append(f"{writes} failed write(s) of its metadata or offsets")
        items.append(Advice(
            group, "problem", "; ".join(parts),
            "The group's __consumer_offsets partition refused the write (NotEnoughReplicas: fewer in-sync replicas "
            "than min.insync.replicas), so the coordinator answered COORDINATOR_NOT_AVAILABLE and the group "
            "rebalanced again. Bring the partition's replicas back in sync (look for under-replicated "
            "__consumer_offsets partitions and the brokers they miss); check offsets.topic.replication.factor "
            "(3 in production) is above min.insync.replicas for that topic, so one broker down does not stop "
            "the group's writes.", rule="coordinator-writes"))
    answered = int(causes.get("coordinator_error", 0))
    if answered:
        items.append(Advice(
            group, "note", f"{answered} rebalance(s) after clients were told NOT_COORDINATOR or "
            "COORDINATOR_NOT_AVAILABLE",
            "The group's coordinator moved (its __consumer_offsets partition changed leader) or could not write. "
            "Check broker restarts and leader elections of __consumer_offsets, and that its partitions have "
            "in-sync replicas (offsets.topic.replication.factor above min.insync.replicas).",
            rule="coordinator-errors"))
    return items


def _advise(row: Any, group: str) -> list[Advice]:
    items: list[Advice] = []
    failures = int(_value(row, "failures") or 0)
    most = _value(row, "most_failing")
    if most is not None and not isinstance(most, dict):
        most = most.asDict() if hasattr(most, "asDict") else dict(most)
    version = _version_tuple(_value(row, "kafka_python_version"))
    old_python = version is not None and version < KAFKA_PYTHON_BACKGROUND_HEARTBEAT
    kip848 = consumer_protocol_only(row)

    if most and (most.get("failures") or 0) >= STEADY_MIN_FAILURES and most.get("mean_interval_ms"):
        mean = float(most["mean_interval_ms"])
        spread = float(most.get("sd_interval_ms") or 0.0)
        if mean > 0 and spread / mean < STEADY_CADENCE_CV:
            if kip848:
                advice = ("Failures at a steady period mean the processing loop keeps overrunning a timeout: "
                          "processing is slower than max.poll.interval.ms allows (the member's rebalance timeout "
                          "under KIP-848 too), or the member misses group.consumer.session.timeout.ms. Lower "
                          "max.poll.records or raise max.poll.interval.ms so one batch fits comfortably.")
            elif old_python:
                advice = ("This client (kafka-python before 1.4) sends heartbeats only from poll(), so a batch that "
                          "takes longer than session_timeout_ms to process gets it removed. Keep each poll's work "
                          "below session_timeout_ms with a smaller max_poll_records, or upgrade to kafka-python 1.4+ "
                          "(background heartbeat, KIP-62) and size max_poll_interval_ms for the slowest batch.")
            else:
                advice = ("Failures at a steady period mean the processing loop keeps overrunning a timeout: "
                          "processing is slower than max.poll.interval.ms allows (or, for clients that heartbeat "
                          "only from poll(), slower than session.timeout.ms). Lower max.poll.records or raise "
                          "max.poll.interval.ms so one batch fits comfortably.")
            items.append(Advice(group, "problem",
                                f"client {most['client']} failed {int(most['failures'])} times, every "
                                f"~{_seconds(mean)} (steady period)", advice, rule="steady-failures"))
    during = int(_value(row, "failures_during_rebalances") or 0)
    if failures and not any(i.finding.startswith("client ") for i in items):
        # A member that timed out while a rebalance was under way did not cause it: said so.
        finding = f"{failures} member(s) removed by session timeout" + (" or fenced" if kip848 else "")
        clients = int(_value(row, "failed_clients") or failures)
        if clients != failures:
            # counted by member id: a client restarted in between rejoined under a new one
            finding += f" ({clients} different client(s))"
        if during:
            finding += (f", {during} of them while a rebalance was under way (not its cause)" if during < failures
                        else " while a rebalance was under way (not its cause)")
        heartbeats = ("The coordinator stopped hearing heartbeats. Under KIP-848 the broker sets both: check "
                      "group.consumer.heartbeat.interval.ms is at most a third of group.consumer.session.timeout.ms "
                      "(broker defaults, or the group's own configuration), then GC pauses and network between "
                      "consumers and the coordinator." if kip848 else
                      "The coordinator stopped hearing heartbeats. Check heartbeat.interval.ms is at most a third of "
                      "session.timeout.ms (three chances to heartbeat before expiry), then GC pauses and network "
                      "between consumers and the coordinator.")
        items.append(Advice(
            group, "problem" if failures >= STEADY_MIN_FAILURES else "note", finding,
            heartbeats + (
                " Members that stop heartbeating during a rebalance are often busy in their revocation callback "
                "or still processing a batch: keep onPartitionsRevoked short." if during else ""),
            rule="session-timeouts"))
    if old_python and not any("kafka-python" in i.advice for i in items):
        items.append(Advice(
            group, "note", f"kafka-python {_value(row, 'kafka_python_version')} clients",
            "Before 1.4, kafka-python heartbeats only from poll(): processing longer than session_timeout_ms per "
            "poll means removal and a rebalance. Upgrade, or keep max_poll_records small.", rule="old-kafka-python"))
    poll_timeouts = int(_value(row, "poll_timeout_leaves") or 0)
    if poll_timeouts:
        client = _value(row, "poll_timeout_client")
        count = int(_value(row, "poll_timeout_client_count") or 0)
        gap = _value(row, "poll_timeout_median_gap_ms")
        finding = f"{poll_timeouts} poll-timeout leave(s)"
        if client and count >= 2 and gap:
            finding += f"; {client} left {count} times, every ~{_seconds(float(gap))}"
        items.append(Advice(
            group, "problem", finding,
            "Processing one batch took longer than max.poll.interval.ms, so the consumer left the group itself. "
            "Lower max.poll.records or raise max.poll.interval.ms.", rule="poll-timeouts"))
    storms = int(_value(row, "storms") or 0)
    if storms:
        largest = int(_value(row, "largest_storm") or 0)
        kind = _value(row, "largest_storm_kind")
        if kind == "fail-rejoin loop":
            advice = (f"One client ({_value(row, 'largest_storm_client')}) fails, rejoins and fails again: the loop "
                      "the seed describes, with reprocessing after every rebalance. Fix the per-batch processing "
                      "time (smaller max.poll.records, longer max.poll.interval.ms) rather than restarting.")
        elif kip848:
            advice = ("Many group epochs close together (a rolling restart or autoscaling): every member that "
                      "joins or leaves bumps the epoch. Static membership (group.instance.id) lets a bounced "
                      "consumer come back within group.consumer.session.timeout.ms without one; the server "
                      "assignor (group.consumer.assignors on the broker, group.remote.assignor on the consumer; "
                      "'uniform' or 'range') decides how many partitions move each time.")
        else:
            advice = ("Many rebalances close together (a rolling restart or autoscaling). Static membership "
                      "(group.instance.id) lets a bounced consumer come back within session.timeout.ms without a "
                      "rebalance, and cooperative-sticky keeps the other partitions consuming meanwhile.")
        items.append(Advice(group, "problem", f"{storms} rebalance storm(s), the largest {largest} rebalances",
                            advice, rule="storms"))
    median = _value(row, "median_duration_ms")
    if median is not None and median >= SLOW_REBALANCE_MS:
        slow = ("An epoch is done when every member has revoked what it gives up and taken its new partitions: a "
                "member learns its target only on its next heartbeat (group.consumer.heartbeat.interval.ms) and "
                "revokes only between batches, up to its rebalance timeout (max.poll.interval.ms). Smaller batches "
                "and a shorter heartbeat interval shorten it; the other members keep consuming meanwhile."
                if kip848 else
                "The join phase waits for every member to rejoin, up to the rebalance timeout (max.poll.interval.ms), "
                "and a member busy in its processing loop delays everyone. Smaller batches shorten it; "
                "cooperative-sticky keeps unaffected partitions consuming while it lasts.")
        items.append(Advice(group, "note", f"rebalances take {_seconds(float(median))} (median)", slow,
                            rule="slow-rebalances"))
    generation = _value(row, "max_generation")
    if generation is not None and generation >= HIGH_GENERATION:
        items.append(Advice(
            group, "note", f"generation {int(generation)}",
            f"The group has rebalanced about {int(generation)} times since it was created: rebalancing is routine "
            "here, not an accident. Look for a periodic cause (restarts, timeouts).", rule="high-generation"))
    empties = int(_value(row, "empty_periods") or 0)
    if empties:
        longest = _value(row, "longest_empty_ms")
        span = f", the longest {_seconds(float(longest))}" if longest is not None else ""
        items.append(Advice(group, "note", f"empty {empties} time(s){span}",
                            "No consumer was in the group: nothing was consumed and lag grew.", rule="empty"))
    return items


def advise(findings: Any, storm_rule: Any = None) -> list[Advice]:
    """Advice for every group of a findings table (pandas DataFrame or list of dicts), problems
    first, then by group."""
    rows = findings.to_dict("records") if hasattr(findings, "to_dict") else list(findings)
    items = [item for row in rows for item in advise_group(row)]
    return sorted(items, key=lambda a: (a.severity != "problem", a.group))


RULE_TITLES = {
    "steady-failures": "Members failing at a steady period",
    "session-timeouts": "Members removed by session timeout",
    "old-kafka-python": "Old kafka-python clients (heartbeat only from poll)",
    "poll-timeouts": "Members leaving because the poll timeout expired",
    "storms": "Rebalance storms",
    "slow-rebalances": "Slow rebalances",
    "high-generation": "Groups that rebalance routinely",
    "empty": "Groups that went empty",
    "restarts": "Restarts that cost rebalances (static membership would avoid them)",
    "clustered-timeouts": "Session timeouts clustered in time",
    "coordinator-moves": "Rebalances after the coordinator moved",
    "open-rebalances": "Rebalances that never completed",
    "coordinator-writes": "The coordinator failed to write to __consumer_offsets",
    "coordinator-errors": "Clients told NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE",
}


def rule_title(item: Advice) -> str:
    """The title a finding is listed under: its rule's, and whose groups (the advice names each
    protocol's own settings)."""
    title = RULE_TITLES.get(item.rule, item.rule or item.finding)
    return f"{title} (KIP-848 consumer groups)" if item.protocol == "consumer" else title


def by_rule(items: list[Advice]) -> list[tuple[str, list[Advice]]]:
    """Advice grouped by finding and group protocol (each told in its own settings), under its
    title (``rule_title``): problems first, then the findings shared by most groups."""
    grouped: dict[tuple[str, str], list[Advice]] = {}
    for item in items:
        grouped.setdefault((item.rule or item.finding, item.protocol), []).append(item)
    return sorted(((rule_title(told[0]), told) for told in grouped.values()),
                  key=lambda kv: (kv[1][0].severity != "problem", -len(kv[1]), kv[0]))
