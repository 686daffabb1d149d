"""Each client's own rebalances, from its lines (``client_rebalances``), and a group's
rebalances told from its clients' alone when no broker line names it (``rebalances_from_clients``)."""

from __future__ import annotations

import re
from typing import assert_never

from kafka_rebalance.model import GroupProtocol
from kafka_rebalance.pipeline.logparse.kinds import EventKind, Library, Side, event_kind
from kafka_rebalance.pipeline.logparse.rebalance import Rebalance
from kafka_rebalance.pipeline.logparse.rows import ClientRebalanceRow, Event

# Client rebalances without generations starting this close together are one group rebalance.
CLIENT_MERGE_MS = 5_000

_STREAMS_REBALANCING = {"PARTITIONS_REVOKED", "PARTITIONS_ASSIGNED", "REBALANCING"}


# A client in the logs: (source file, client id or else its library).
_ClientKey = tuple[str | None, str | None]


def client_rebalances(cluster: str, group: str, events: list[Event]) -> list[ClientRebalanceRow]:
    """Per client (source + client id), one row per rebalance it took part in."""
    rows: list[ClientRebalanceRow] = []
    current: dict[_ClientKey, ClientRebalanceRow] = {}

    def open_row(key: _ClientKey, event: Event) -> ClientRebalanceRow:
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
                row.update({"generation": event.get("generation"), "member": event.get("member") or row["member"],
                            "protocol": event.get("protocol") or row["protocol"]})
            case EventKind.CLIENT_SYNCED:
                row = open_row(key, event)
                row.update({"generation": event.get("generation"), "member": event.get("member") or row["member"],
                            "protocol": event.get("protocol") or row["protocol"]})
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
                    row.update({"member": event.get("member"), "protocol": GroupProtocol.CONSUMER})
                    generation = event.get("generation")
                    if generation is not None and generation > 0:
                        row["generation"] = generation
                elif state == "STABLE":
                    stable = current.get(key)
                    if stable is not None:
                        generation = event.get("generation")
                        if generation is not None and generation > 0:
                            stable["generation"] = generation
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
                line = event.get("line")
                if line and "stream-client" in line:
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
                  | EventKind.COORDINATOR_UNLOADED | EventKind.COORDINATOR_WRITE_FAILED | EventKind.GROUP_WRITE_FAILED
                  | EventKind.GROUP_EPOCH_BUMPED | EventKind.TARGET_ASSIGNMENT
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


def rebalances_from_clients(cluster: str, group: str, rows: list[ClientRebalanceRow]) -> list[Rebalance]:
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
