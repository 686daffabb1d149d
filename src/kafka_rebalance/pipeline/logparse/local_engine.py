"""The in-process engine of ``kafka-rebalance logs`` (a paste, a few files of an incident):
every input read and parsed in order, each group's story told, every table built in Arrow as
the Spark engine's story tasks build theirs; the same parser, split bookkeeping
(``split_facts``) and story (``story.tell_table``, over all the events at once as a story task
over its bucket) the Spark engine runs."""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka_rebalance.pipeline.logparse.findings import GroupFindings
from kafka_rebalance.pipeline.logparse.inputs import STDIN
from kafka_rebalance.pipeline.logparse.layout import SyslogReference
from kafka_rebalance.pipeline.logparse.parse import READ_ERRORS
from kafka_rebalance.pipeline.logparse.readlog import SplitReader
from kafka_rebalance.pipeline.logparse.rows import CoverageRow, Event
from kafka_rebalance.pipeline.logparse.scan import Split
from kafka_rebalance.pipeline.logparse.schemas import arrow_schema, story_table
from kafka_rebalance.pipeline.logparse.split_facts import SplitFacts, unrecognised_rows
from kafka_rebalance.pipeline.logparse.story import DEFAULT_STORM_RULE, StormRule, in_story_order, tell_table


@dataclass
class LocalResult:
    """Every table (Arrow), plus what the summary and the report need."""

    tables: dict[str, Any]
    findings: list[GroupFindings]
    coverage: list[CoverageRow]
    events: int
    groups: int
    lines_read: int
    samples: list[str] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)


def story_input(events: Any) -> Any:
    """What the stories read of an ``events`` table (as a Spark story task reads its bucket):
    the recognised events naming a group, with their line numbers (the evidence's
    ``file:line``), in story order (``story.SORT_KEYS``)."""
    import pyarrow.compute as pc

    group = events.column("group")
    told = events.filter(pc.and_(events.column("kind").is_valid(), pc.fill_null(pc.not_equal(group, ""), False)))
    return in_story_order(told.append_column("line_no", pc.add(told.column("seq"), 1)))


def analyse_local(inputs: list[tuple[str, str]], rule: StormRule = DEFAULT_STORM_RULE, stdin_text: str | None = None,
                  on_read: Callable[[int], None] | None = None, *, syslog: SyslogReference) -> LocalResult:
    """``inputs``: (source, cluster) pairs in order -> all tables, in this process, each input
    read as the Spark engine reads a split (``readlog.SplitReader``; ``seq`` the line index).
    ``on_read`` is told the bytes read, block by block (for a progress bar); ``syslog`` places
    year-less times (``layout.SyslogReference``)."""
    import pyarrow as pa

    moves: dict[str, list[Event]] = defaultdict(list)
    read: list[SplitFacts] = []
    coverage: list[CoverageRow] = []
    samples: list[str] = []
    unreadable: list[tuple[str, str]] = []
    parsed: list[Any] = []
    for index, (source, cluster) in enumerate(inputs):
        data = None
        if source == STDIN:
            data = (stdin_text if stdin_text is not None else sys.stdin.read()).encode("utf-8", "surrogateescape")
        reader = SplitReader(Split(source), index, source, cluster, syslog=syslog, line_numbers=True, data=data,
                             on_read=on_read)
        try:
            blocks = list(reader.tables())
        except READ_ERRORS as exc:  # a truncated or corrupt .gz
            blocks = []
            reader.facts = SplitFacts(index, source, cluster, 0)
            unreadable.append((source, f"unreadable: {exc}"))
        facts = reader.facts
        facts.lines = reader.counts.lines
        parsed.extend(blocks)
        read.append(facts)
        moves[cluster].extend(facts.moves)
        samples.extend(s.rstrip("\n") for s in reader.head if s.strip())
        coverage.append({"source": source, "cluster": cluster, "lines": facts.lines,
                         "broker_lines": facts.broker_lines, "client_lines": facts.client_lines,
                         "unrecognised_lines": facts.unrecognised_lines,
                         "first_ms": facts.first_ms, "last_ms": facts.last_ms})
    events = pa.concat_tables(parsed) if parsed else arrow_schema("events").empty_table()
    told = story_input(events)
    stories = tell_table(told, moves, rule)
    findings = stories.findings
    tables: dict[str, Any] = dict(stories.tables)
    # each input's shapes in the order it was first given (as they were counted)
    tables["unrecognised"] = story_table("unrecognised",
                                         unrecognised_rows(read, list(dict.fromkeys(s for s, _ in inputs))))
    tables["events"] = events
    return LocalResult(tables, findings, coverage, sum(f.events for f in read), len(findings),
                       sum(f.lines for f in read), samples[:5], unreadable)

