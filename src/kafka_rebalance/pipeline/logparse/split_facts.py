"""The bookkeeping of one split of an input (the local engine's split is the whole file), kept
by both engines with the same code: its line counts per side, the times it covers, its
unrecognised shapes, its coordinator moves, the group each client named last and the clients
whose lines named no group before they named one. The Spark engine sends it from a scan task
to the driver as JSON; the local engine reads it in place."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

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
        named last (``last_group``: the split's so far, and what it inherited)."""
        if record["kind"] is None:
            self.unrecognised_lines += 1
            shape = self.unrecognised.get(record["shape"])
            if shape is None:
                self.unrecognised[record["shape"]] = [1, record["seq"], record["line"]]
            else:
                shape[0] += 1
            return
        client = record.get("client_id")
        if (record.get("side") == "client" and client and not record.get("group") and client not in last_group
                and client not in self.unfilled):
            self.unfilled[client] = None
        before = last_group.get(client) if client else None
        fill_client_group(record, last_group)
        if client and record.get("group") and last_group.get(client) != before:
            self.named_last[client] = last_group[client]
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
