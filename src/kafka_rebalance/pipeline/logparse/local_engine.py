"""The in-process engine of ``kafka-rebalance logs`` (a paste, a few files of an incident):
every input read and parsed in order, each group's story told, every table built as a pandas
frame; the same parser, split bookkeeping (``split_facts``) and story the Spark engine runs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_rebalance.pipeline.logparse.findings import GroupFindings
from kafka_rebalance.pipeline.logparse.inputs import read_text_lines
from kafka_rebalance.pipeline.logparse.layout import SyslogReference
from kafka_rebalance.pipeline.logparse.parse import READ_ERRORS, parse_lines
from kafka_rebalance.pipeline.logparse.rows import CoverageRow, Event
from kafka_rebalance.pipeline.logparse.schemas import STORY_TABLES, events_frame, frame
from kafka_rebalance.pipeline.logparse.split_facts import SplitFacts, unrecognised_rows
from kafka_rebalance.pipeline.logparse.story import DEFAULT_STORM_RULE, StormRule, story_tables, tell


@dataclass
class LocalResult:
    """Every table as a pandas frame, plus what the summary and the report need."""

    frames: dict[str, Any]
    findings: list[GroupFindings]
    coverage: list[CoverageRow]
    events: int
    groups: int
    lines_read: int
    samples: list[str] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)


def analyse_local(inputs: list[tuple[str, str]], rule: StormRule = DEFAULT_STORM_RULE, stdin_text: str | None = None,
                  on_read: Callable[[int], None] | None = None, *, syslog: SyslogReference) -> LocalResult:
    """``inputs``: (source, cluster) pairs in order -> all tables, in this process. ``on_read``
    is told the characters read, every few thousand lines (for a progress bar); ``syslog``
    places year-less times (``layout.SyslogReference``)."""
    events_by_group: dict[tuple[str, str], list[Event]] = defaultdict(list)
    moves: dict[str, list[Event]] = defaultdict(list)
    read: list[SplitFacts] = []
    coverage: list[CoverageRow] = []
    samples: list[str] = []
    unreadable: list[tuple[str, str]] = []
    parsed: list[Event] = []
    for index, (source, cluster) in enumerate(inputs):
        counter = _Counting(read_text_lines(source, stdin_text), on_read)
        facts = SplitFacts(index, source, cluster, 0)
        try:
            records = list(parse_lines(counter, source, cluster, syslog=syslog))
        except READ_ERRORS as exc:  # a truncated or corrupt .gz
            records = []
            unreadable.append((source, f"unreadable: {exc}"))
        last_group: dict[str, str] = {}
        for record in records:
            facts.add(record, last_group)
            parsed.append(record)
            group = record.get("group")
            if record["kind"] is not None and group:
                events_by_group[(cluster, group)].append(record)
        facts.lines = counter.count
        read.append(facts)
        moves[cluster].extend(facts.moves)
        samples.extend(s.rstrip("\n") for s in counter.head if s.strip())
        coverage.append({"source": source, "cluster": cluster, "lines": facts.lines,
                         "broker_lines": facts.broker_lines, "client_lines": facts.client_lines,
                         "unrecognised_lines": facts.unrecognised_lines,
                         "first_ms": facts.first_ms, "last_ms": facts.last_ms})
    rows: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    findings: list[GroupFindings] = []
    for (cluster, group), events in sorted(events_by_group.items()):
        told = tell(cluster, group, events, moves.get(cluster), rule)
        for table, table_rows in story_tables(told):
            rows[table].extend(table_rows)
        findings.extend(told["findings"])
    frames = {table: frame(table, rows.get(table, [])) for table in STORY_TABLES}
    # each input's shapes in the order it was first given (as they were counted)
    frames["unrecognised"] = frame("unrecognised", unrecognised_rows(read, list(dict.fromkeys(s for s, _ in inputs))))
    frames["events"] = events_frame(parsed)
    return LocalResult(frames, findings, coverage, sum(f.events for f in read), len(events_by_group),
                       sum(f.lines for f in read), samples[:5], unreadable)


class _Counting:
    """Counts the lines it passes on and keeps the first few."""

    REPORT_EVERY = 4096

    def __init__(self, lines: Iterator[str], on_read: Callable[[int], None] | None = None):
        self._lines = lines
        self._on_read = on_read
        self.count = 0
        self.head: list[str] = []

    def __iter__(self) -> Iterator[str]:
        if self._on_read is not None:
            yield from self._reporting(self._on_read)
            return
        for line in self._lines:
            self.count += 1
            if len(self.head) < 5:
                self.head.append(line)
            yield line

    def _reporting(self, on_read: Callable[[int], None]) -> Iterator[str]:
        unreported = 0
        for line in self._lines:
            self.count += 1
            unreported += len(line)
            if len(self.head) < 5:
                self.head.append(line)
            if not self.count % self.REPORT_EVERY:
                on_read(unreported)
                unreported = 0
            yield line
        on_read(unreported)
