"""The bookkeeping of one split of an input (the local engine's split is the whole file), kept
by both engines with the same code: its line counts per side, the times it covers, its
unrecognised shapes, its coordinator moves, the group each client named last and the clients
whose lines named no group before they named one. The Spark engine sends it from a scan task
to the driver as JSON; the local engine reads it in place."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, cast

import numpy as np

from kafka_rebalance.pipeline.logparse.kinds import COORDINATOR_KINDS
from kafka_rebalance.pipeline.logparse.rows import Event, UnrecognisedRow


def fill_client_group(record: Event, last_group: dict[str, str]) -> None:
    """Some client lines do not name their group (librdkafka's JoinGroup response): they belong
    to the group the same client named last in the same file."""
    client = record.get("client_id")
    if record.get("side") != "client" or not client:
        return
    group = record.get("group")
    if group:
        last_group[client] = group
    elif client in last_group:
        record["group"] = last_group[client]


def move_fields(move: Event) -> Event:
    """What a story task needs of a coordinator move read in another task."""
    return {"cluster": move.get("cluster", ""), "partition": move.get("partition"), "time_ms": move.get("time_ms"),
            "line": move.get("line"), "source": move.get("source"), "seq": move.get("seq"), "kind": move.get("kind"),
            "reason": move.get("reason")}


@dataclass
class SplitFacts:
    """What is known of one split once it is read (``add`` each of its records in order)."""

    index: int
    source: str
    cluster: str
    start: int
    lines: int = 0
    events: int = 0
    broker_lines: int = 0
    client_lines: int = 0
    unrecognised_lines: int = 0
    first_ms: int | None = None
    last_ms: int | None = None
    # shape -> [count, seq of its first line, that line]: a JSON array, counted in place
    unrecognised: dict[str, list[Any]] = field(default_factory=dict)
    # the coordinator moves, as read (not sent with the facts: every story task gets them)
    moves: list[Event] = field(default_factory=list)
    # client -> the group it named last in this split (for lines of the next split naming none)
    named_last: dict[str, str] = field(default_factory=dict)
    # clients with lines naming no group before they named one in this split, in order (a dict:
    # asked at each such line, a list made a split of many such clients quadratic)
    unfilled: dict[str, None] = field(default_factory=dict)
    unreadable: str | None = None

    def add(self, record: Event, last_group: dict[str, str]) -> None:
        """Count one record of the split; a client line naming no group gets the one its client
        named last (``last_group``: the split's so far)."""
        if record["kind"] is None:
            self.unrecognised_lines += 1
            shape = self.unrecognised.get(record["shape"])
            if shape is None:
                self.unrecognised[record["shape"]] = [1, record["seq"], record["line"]]
            else:
                shape[0] += 1
            return
        if record.get("side") == "client":
            self._add_client(record, last_group)
        self.events += 1
        if record["side"] == "broker":
            self.broker_lines += 1
        elif record["side"] == "client":
            self.client_lines += 1
        at = record.get("time_ms")
        if at is not None:
            self.first_ms = at if self.first_ms is None else min(self.first_ms, at)
            self.last_ms = at if self.last_ms is None else max(self.last_ms, at)
        if record["kind"] in COORDINATOR_KINDS:
            self.moves.append(record)

    def add_table(self, table: Any, last_group: dict[str, str], *, line_numbers: bool = False) -> Any:
        """``add`` for a table of records in order (``schemas.arrow_schema("events")``), counted a
        column at a time; the per-record bookkeeping (unrecognised shapes, client lines, moves)
        runs on those few rows only. The table with the groups ``add`` fills."""
        import pyarrow as pa
        import pyarrow.compute as pc

        recognised = table.column("kind").is_valid()
        unrecognised = np.flatnonzero(~np.asarray(recognised))
        if unrecognised.size:
            for record in table.take(pa.array(unrecognised)).to_pylist():
                self.add(record, last_group)
        side = table.column("side")
        client = np.flatnonzero(np.asarray(pc.fill_null(pc.equal(side, "client"), False))
                                & np.asarray(table.column("client_id").is_valid()))
        if client.size:
            groups = table.column("group").to_pylist()
            for at, record in zip(client.tolist(), table.take(pa.array(client)).to_pylist(), strict=True):
                self._add_client(record, last_group)
                groups[at] = record.get("group")
            table = table.set_column(table.schema.get_field_index("group"), "group", pa.array(groups, pa.string()))
        self.events += int(pc.sum(recognised.cast(pa.int64())).as_py() or 0)
        self.broker_lines += int(pc.sum(pc.equal(side, "broker").cast(pa.int64())).as_py() or 0)
        self.client_lines += int(pc.sum(pc.and_(pc.equal(side, "client"), recognised).cast(pa.int64())).as_py() or 0)
        times = pc.min_max(table.column("time_ms").filter(recognised))
        first, last = times["min"].as_py(), times["max"].as_py()
        if first is not None:
            self.first_ms = first if self.first_ms is None else min(self.first_ms, first)
            self.last_ms = last if self.last_ms is None else max(self.last_ms, last)
        moves = pc.is_in(table.column("kind"), pa.array(sorted(COORDINATOR_KINDS), pa.string()))
        for move in table.filter(pc.fill_null(moves, False)).to_pylist():
            record = {name: value for name, value in move.items() if value is not None}
            if line_numbers:
                record["line_no"] = record["seq"] + 1
            self.moves.append(cast("Event", record))
        return table

    def _add_client(self, record: Event, last_group: dict[str, str]) -> None:
        """The bookkeeping of a recognised client line: its group filled (``fill_client_group``),
        the clients still without one, and the group each client named last."""
        client = record.get("client_id")
        if not client:
            return
        if not record.get("group") and client not in last_group and client not in self.unfilled:
            self.unfilled[client] = None
        before = last_group.get(client)
        fill_client_group(record, last_group)
        if record.get("group") and last_group.get(client) != before:
            self.named_last[client] = last_group[client]

    def to_json(self) -> str:
        facts = asdict(self)
        del facts["moves"]
        return json.dumps(facts, default=str)

    @classmethod
    def from_json(cls, text: str) -> SplitFacts:
        return cls(**json.loads(text))


def unrecognised_rows(facts: list[SplitFacts], files: list[str]) -> list[UnrecognisedRow]:
    """Unrecognised shapes per (cluster, source): counts summed over splits (``facts`` in file
    order), the first line as the sample; most frequent first, then in file order."""
    order = {name: position for position, name in enumerate(files)}
    counts: dict[tuple[str, str, str], int] = {}
    first: dict[tuple[str, str, str], tuple[tuple[int, int], str]] = {}  # (file order, seq), line
    for split in facts:
        for shape, (count, seq, line) in split.unrecognised.items():
            key = (split.cluster, split.source, shape)
            if key in counts:
                counts[key] += count
            else:
                counts[key] = count
                first[key] = ((order[split.source], seq), line)
    rows: list[UnrecognisedRow] = []
    for key in sorted(counts, key=lambda k: (-counts[k], first[k][0])):
        cluster, source, shape = key
        rows.append({"cluster": cluster, "source": source, "shape": shape, "count": counts[key], "sample": first[key][1]})
    return rows
