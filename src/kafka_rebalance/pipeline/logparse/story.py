"""The story of one group, end to end: its events (broker and client lines) -> rebalances,
member events, client rebalances, causes, empty periods, storms and the findings for advice.

Both engines tell a table of events sorted by group (``tell_table``: a Spark story task its
bucket, the local engine all its inputs), so both give the same rows: the groups
``logparse.columns`` reads over columns, for all of them at once, and the rest here, in Python,
a group at a time (``tell_sorted``), to the same rules. The Python jobs
are cut into modules that hand their results one way: ``order`` (time order, each line once)
-> ``group_story`` (the broker's lines: rebalances, member events, causes; reasons read by
``causes``) and ``client_story`` (each client's rebalances) -> here (storms, the tables' rows,
the causes no single line gives) -> ``findings``.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, TypedDict, cast

import numpy as np

from kafka_rebalance.pipeline.logparse.catalogue import client_of
from kafka_rebalance.pipeline.logparse.causes import EVIDENCE_CAP, client_causes, infer_joins, not_logged
from kafka_rebalance.pipeline.logparse.client_story import client_rebalances, rebalances_from_clients
from kafka_rebalance.pipeline.logparse.findings import GroupFindings, findings
from kafka_rebalance.pipeline.logparse.group_story import GroupStory
from kafka_rebalance.pipeline.logparse.order import distinct_events, order_events
from kafka_rebalance.pipeline.logparse.parse import LineError
from kafka_rebalance.pipeline.logparse.rebalance import CauseClaim, Rebalance
from kafka_rebalance.pipeline.logparse.rows import (
    CauseRow,
    ClientRebalanceRow,
    EmptyPeriodRow,
    Event,
    MemberEventRow,
    RebalanceRow,
    StormRow,
)


@dataclass(frozen=True)
class StormRule:
    """A storm: consecutive rebalances of a group, each starting within ``gap_ms`` of the one
    before, at least ``min_rebalances`` of them."""

    gap_ms: int = 10 * 60 * 1000
    min_rebalances: int = 3
    # A client failing this often within one storm is the fail-rejoin loop.
    loop_failures: int = 3


DEFAULT_STORM_RULE = StormRule()


# The event fields a story reads (``events`` columns; ``line_no``, ``members_text`` and
# ``topics`` only where a caller has them): a caller may leave the others out.
STORY_FIELDS = frozenset((
    "source", "seq", "time_ms", "kind", "side", "library", "member", "generation", "old_generation", "state",
    "from_state", "reason", "members", "old_member", "membership", "partitions", "count", "protocol", "assignor",
    "took_ms", "partition", "client_id", "line", "line_no", "members_text", "topics",
))


def story_events(part: Any) -> list[Event]:
    """Events (an ``events`` table or a slice of one) as the stories read them: a dict per event
    of the fields a story reads (``STORY_FIELDS``), a column to Python at a time. A field null in
    most events is set only where it has a value; the stories read a field with ``get`` unless
    they know it has one."""
    import pyarrow.compute as pc

    size = part.num_rows
    dense, sparse = [], []
    for name in part.column_names:
        if name in STORY_FIELDS:
            nulls = part.column(name).null_count
            if name == "kind" or 2 * nulls < size:
                dense.append(name)
            elif nulls < size:
                sparse.append(name)
    # A dict per row from the dense columns, zipped without keyword arguments (``strict`` is
    # parsed once per zip: a third of the cost of the dicts).
    rows = zip(*(part.column(name).to_pylist() for name in dense), strict=True)
    events: list[dict[str, Any]] = list(map(dict, map(zip, repeat(tuple(dense)), rows)))
    for name in sparse:
        column = part.column(name)
        at = pc.indices_nonzero(pc.is_valid(column)).to_pylist()
        for index, value in zip(at, column.drop_null().to_pylist(), strict=True):
            events[index][name] = value
    # The typed edge: the columns of ``events`` (``schemas.arrow_schema``) are ``rows.Event``'s fields.
    return cast("list[Event]", events)


# A table of events in story order: each group's events together, in file order.
SORT_KEYS = [("cluster", "ascending"), ("group", "ascending"), ("source", "ascending"), ("seq", "ascending")]


def in_story_order(table: Any) -> Any:
    """``table`` sorted by ``SORT_KEYS`` exactly as ``Table.sort_by`` sorts it (stable, nulls
    last): each text key ranked once per distinct value, then one numpy ``lexsort`` of integer
    keys. Arrow's sort of several keys compares the texts row against row; over a story task's
    bucket (about 120,000 events in some 30 chunks) this took half its time
    (``benchmarks/logs.py``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = []
    for name, _ in reversed(SORT_KEYS):  # lexsort's last key sorts first
        column = table.column(name)
        if pa.types.is_integer(column.type):
            if column.null_count:
                return table.sort_by(SORT_KEYS)
            keys.append(column.to_numpy())
            continue
        encoded = pc.dictionary_encode(column.combine_chunks())
        order = np.asarray(pc.sort_indices(encoded.dictionary))
        rank = np.empty(len(order) + 1, np.int64)
        rank[order] = np.arange(len(order))
        rank[-1] = len(order)  # null: after every value
        keys.append(rank[encoded.indices.fill_null(len(order)).to_numpy(zero_copy_only=False)])
    return table.take(pa.array(np.lexsort(keys)))
# Events become dicts about this many at a time (a slice of whole groups).
EVENT_SLICE_ROWS = 4096


def tell_sorted(table: Any, moves: Mapping[str, list[Event]], rule: StormRule) -> Iterator[StoryRows]:
    """Events sorted by ``SORT_KEYS`` (recognised, each naming its group) -> the story of each
    group in them (``tell``), in order: how both engines tell their stories.

    Events become dicts a slice of whole groups at a time (about ``EVENT_SLICE_ROWS``): whole
    columns to Python at once (``to_pylist`` per group cost more than telling the stories),
    without holding every event as a dict (memory, and every full garbage collection would
    walk them).

    Python's cycle collector is paused meanwhile: the stories make no reference cycles (plain
    reference counting frees what they drop), but the rows kept for the story tables' batches
    made it walk the whole heap again and again (a fifth of a Spark story task's CPU time)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield from _tell_slices(table, moves, rule)
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class ToldTables:
    """The story of every group in a sorted events table: each story table (``schemas.
    STORY_TABLES``, rows in group order) and each group's findings, in group order."""

    tables: dict[str, Any]
    findings: list[GroupFindings]


def tell_table(table: Any, moves: Mapping[str, list[Event]], rule: StormRule) -> ToldTables:
    """Events sorted by ``SORT_KEYS`` (recognised, each naming its group, with its source and
    seq) -> every group's story, as both engines tell it: over columns for the groups whose
    lines the columns read (``columns.tables.tell_columns``: classic groups of broker lines with
    times, in clusters without coordinator moves), the rest group by group in Python
    (``tell_sorted``), merged in group order."""
    import pyarrow as pa

    from kafka_rebalance.pipeline.logparse.columns.findings import column_findings
    from kafka_rebalance.pipeline.logparse.columns.order import story_rows
    from kafka_rebalance.pipeline.logparse.columns.tables import tell_columns
    from kafka_rebalance.pipeline.logparse.schemas import STORY_TABLES, arrow_schema, story_table

    if not table.num_rows:
        return ToldTables({name: arrow_schema(name).empty_table() for name in STORY_TABLES}, [])
    moved = frozenset(cluster for cluster, found in moves.items() if found)
    columns = tell_columns(table, story_rows(table), moved, rule.gap_ms, rule.min_rebalances, rule.loop_failures)
    found = column_findings(columns)
    rest = np.flatnonzero(~columns.covered)
    rows: dict[str, list[Mapping[str, Any]]] = {name: [] for name in STORY_TABLES}
    owners: dict[str, list[int]] = {name: [] for name in STORY_TABLES}
    if len(rest):
        starts, _, _ = _group_starts(table)
        bounds = np.array(starts)
        picked = np.concatenate([np.arange(bounds[number], bounds[number + 1]) for number in rest.tolist()])
        for number, told in zip(rest.tolist(), tell_sorted(table.take(pa.array(picked)), moves, rule), strict=True):
            for name, told_rows in story_tables(told):
                rows[name].extend(told_rows)
                owners[name].extend([number] * len(told_rows))
            found[number] = told["findings"][0]
    tables = {}
    for name in STORY_TABLES:
        merged = pa.concat_tables([columns.tables[name], story_table(name, rows[name])])
        group = np.concatenate([columns.row_groups[name], np.array(owners[name], np.int64)])
        tables[name] = merged.take(pa.array(np.argsort(group, kind="stable"))) if len(rest) else merged
    return ToldTables(tables, [found[number] for number in range(len(columns.covered))])


def _tell_slices(table: Any, moves: Mapping[str, list[Event]], rule: StormRule) -> Iterator[StoryRows]:
    count = table.num_rows
    if not count:
        return
    starts, clusters, groups = _group_starts(table)
    first = 0
    while first < len(starts) - 1:
        last = first + 1
        while last < len(starts) - 1 and starts[last] - starts[first] < EVENT_SLICE_ROWS:
            last += 1
        offset = starts[first]
        events = story_events(table.slice(offset, starts[last] - offset))
        for at in range(first, last):
            start, end = starts[at], starts[at + 1]
            yield tell(clusters[at], groups[at], events[start - offset:end - offset], moves.get(clusters[at]), rule)
        first = last


def _group_starts(table: Any) -> tuple[list[int], list[str], list[str]]:
    """Where each group's run of a sorted, non-empty table starts (and, last, its row count),
    and each run's cluster and group: neighbours compared by Arrow, no Python per event."""
    import pyarrow.compute as pc

    count = table.num_rows

    def differs(name: str) -> Any:  # row i+1's value against row i's
        column = table.column(name)
        return pc.fill_null(pc.not_equal(column.slice(1), column.slice(0, count - 1)), True)

    changed = pc.or_(differs("cluster"), differs("group"))
    starts = [0, *(np.flatnonzero(changed.to_numpy()) + 1).tolist()]
    firsts = table.select(["cluster", "group"]).take(starts)
    return [*starts, count], firsts.column("cluster").to_pylist(), firsts.column("group").to_pylist()


def storms(rebalances: list[RebalanceRow], member_events: list[MemberEventRow], rule: StormRule) -> list[StormRow]:
    # (start, row) of every rebalance that has a start, in order
    rows = sorted(((r["start_ms"], r) for r in rebalances if r["start_ms"] is not None),
                  key=lambda pair: (pair[0], pair[1]["generation"] or 0))
    clusters: list[list[tuple[int, RebalanceRow]]] = []
    for start_ms, row in rows:
        if clusters and start_ms - clusters[-1][-1][0] <= rule.gap_ms:
            clusters[-1].append((start_ms, row))
        else:
            clusters.append([(start_ms, row)])
    out: list[StormRow] = []
    for cluster in clusters:
        if len(cluster) < rule.min_rebalances:
            continue
        members = [row for _, row in cluster]
        start = cluster[0][0]
        end = max((r["end_ms"] if r["end_ms"] is not None else start_ms) for start_ms, r in cluster)
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


def _rebalance_row(r: Rebalance) -> RebalanceRow:
    primary = r.causes[0] if r.causes else None
    # A rebalance whose opening line is not in the input has no length: its first line seen is
    # no start (``start_known``), and a length from it would be a few ms that feed every median.
    duration = r.end_ms - r.start_ms if r.start_known and r.end_ms is not None and r.start_ms is not None else None
    return {"cluster": r.cluster, "group": r.group, "generation": r.generation, "start_ms": r.start_ms,
            "end_ms": r.end_ms if r.outcome != "open" else None, "duration_ms": duration if r.outcome != "open" else None,
            "reason": r.reason, "members": r.members, "old_generation": r.old_generation, "leader": r.leader,
            "outcome": r.outcome, "failed_members": list(dict.fromkeys(r.failed)),
            "left_members": list(dict.fromkeys(r.left)), "joined_members": list(dict.fromkeys(r.joined)),
            "partition": r.partition, "protocol": r.protocol, "source": r.source, "start_known": r.start_known,
            "assignor": r.assignor, "assignor_ms": r.assignor_ms,
            "cause": primary.cause if primary else "unknown", "cause_member": primary.member if primary else None,
            # drawn to: an open rebalance's next line, or the line that proved a rebalance whose
            # closing line is missing complete (``group_story.GroupStory._completed_by_later``)
            "clip_ms": r.clip_ms if r.outcome == "open" or r.end_ms is None else None,
            "during": list(dict.fromkeys(r.during))}


class StoryRows(TypedDict):
    """One group's story: its rows of every story table, and its findings (one)."""

    rebalances: list[RebalanceRow]
    member_events: list[MemberEventRow]
    client_rebalances: list[ClientRebalanceRow]
    causes: list[CauseRow]
    empty_periods: list[EmptyPeriodRow]
    storms: list[StormRow]
    findings: list[GroupFindings]


def story_tables(told: StoryRows) -> tuple[tuple[str, Sequence[Mapping[str, Any]]], ...]:
    """A story's rows per table, in ``schemas.STORY_TABLES`` order (as Arrow reads them)."""
    return (("rebalances", told["rebalances"]), ("member_events", told["member_events"]), ("storms", told["storms"]),
            ("empty_periods", told["empty_periods"]), ("client_rebalances", told["client_rebalances"]),
            ("causes", told["causes"]))


def tell(cluster: str, group: str, events: list[Event], coordinator_moves: list[Event] | None = None,
         rule: StormRule = DEFAULT_STORM_RULE) -> StoryRows:
    """All tables' rows for one group (see the module docstring)."""
    ordered = distinct_events(order_events(events))
    story = GroupStory(cluster, group, coordinator_moves)
    feed = story.feed
    event: Event = {}
    try:
        for event in ordered:
            feed(event)
    except Exception as exc:  # noqa: BLE001 - the last guard: name the input and the line
        raise LineError(event.get("source"), event.get("line_no"), exc) from exc
    story.finish()
    clients = client_rebalances(cluster, group, ordered)
    rebalances = story.rebalances
    if not any(r.source == "broker" for r in rebalances) and clients:
        rebalances = rebalances_from_clients(cluster, group, clients)
        client_causes(rebalances, story.member_events)
    rebalances.sort(key=lambda r: (r.start_ms if r.start_ms is not None else -1))
    infer_joins(rebalances)
    not_logged(rebalances)
    rows = [_rebalance_row(r) for r in rebalances]
    causes: list[CauseRow] = []
    for r, row in zip(rebalances, rows, strict=True):
        chosen = r.causes or [CauseClaim("unknown", None, None, r.evidence[:1])]
        if len(chosen) > 1:
            merged: dict[tuple[str, str | None], CauseClaim] = {}
            for cause in chosen:
                key = (cause.cause, cause.member)
                known = merged.get(key)
                merged[key] = cause if known is None else \
                    CauseClaim(known.cause, known.member, known.detail, known.events + cause.events)
            chosen = list(merged.values())
        generation, start_ms = row["generation"], row["start_ms"]
        for cause in chosen:
            events = cause.events
            if len(events) == 1:
                evidence = events if events[0] else []
            else:
                evidence = sorted((e for e in events if e), key=_evidence_order)[:EVIDENCE_CAP]
            causes.append({"cluster": cluster, "group": group, "generation": generation,
                           "start_ms": start_ms, "cause": cause.cause, "member": cause.member,
                           "detail": cause.detail, "evidence": [e.get("line") or "" for e in evidence],
                           "evidence_sources": [_where(e) for e in evidence]})
    storm_rows = storms(rows, story.member_events, rule)
    return {"rebalances": rows, "member_events": story.member_events, "client_rebalances": clients,
            "causes": causes, "empty_periods": story.empty_periods, "storms": storm_rows,
            "findings": [findings(cluster, group, rows, story.member_events, storm_rows, story.empty_periods, causes)]}


def _evidence_order(event: Event) -> tuple[int, int]:
    return event.get("time_ms") or 0, event.get("seq") or 0


def _where(event: Event) -> str:
    """``file:line`` of an event (the Spark engine does not know line numbers: file only)."""
    line_no = event.get("line_no")
    return f"{event.get('source')}:{line_no}" if line_no is not None else str(event.get("source"))
