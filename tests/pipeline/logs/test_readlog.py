"""The one reading path of both engines (``readlog.SplitReader``), which parses the common
broker line a column at a time (``fastparse``), gives what the per-line parser gives over the
same scan (``parse.parse_numbered(scan(...))``), bookkeeping (``SplitFacts``) included: for any
mix of common lines, wrapped lines, fences, several records on one line, other layouts and
noise, split anywhere, read in blocks of any size, with the phrases found by hyperscan or by
``in``. And every line of the test corpus the column parser takes gets the event
``parse.parse_line`` gives it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_rebalance.pipeline.logparse import readlog
from kafka_rebalance.pipeline.logparse.catalogue import MESSAGES
from kafka_rebalance.pipeline.logparse.fastparse import MARKERS, literal_leads, parse_log4j, re2_plans
from kafka_rebalance.pipeline.logparse.kinds import Side
from kafka_rebalance.pipeline.logparse.parse import (
    EVENT_COLUMNS,
    parse_line,
    parse_numbered,
    passes_gate,
    plan_of,
)
from kafka_rebalance.pipeline.logparse.scan import ScanCounts, Split, plan_splits
from kafka_rebalance.pipeline.logparse.split_facts import SplitFacts
from tests.conftest import TEST_SYSLOG
from tests.pipeline.logs.line_reader import scan

DATA = Path(__file__).resolve().parents[2] / "data"
CORPUS = sorted(p for folder in ("excerpts", "excerpts-edges", "logs") for p in (DATA / folder).iterdir()
                if p.name != "expected.json")
FIELDS = [name for name, _ in EVENT_COLUMNS]
LINES = [
    "[2024-05-01 10:00:01,123] INFO [GroupCoordinator 1]: Preparing to rebalance group g{g} in state "
    "PreparingRebalance with old generation {n} (__consumer_offsets-7) (reason: Adding new member c-{n}) "
    "(kafka.coordinator.group.GroupCoordinator)",
    "[2024-05-01 10:00:02,456] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=7] Stabilized group "
    "g{g} generation {n} with 2 members (org.apache.kafka.coordinator.group.GroupMetadataManager)",
    "[2024-05-01 10:00:03,000] INFO [GroupCoordinator 1]: Member c-{n} in group g{g} has failed, removing it from "
    "the group (kafka.coordinator.group.GroupCoordinator)",
    "[2024-02-30 10:00:03,000] INFO [GroupCoordinator 1]: Group g{g} with generation {n} is now empty "
    "(__consumer_offsets-7) (kafka.coordinator.group.GroupCoordinator)",
    "[2024-05-01 10:00:04,000] INFO [GroupCoordinator 1]: Preparing to rebalance group g{g} with old generation {n} "
    "(reason: ) (kafka.coordinator.group.GroupCoordinator) [GroupCoordinator 1]: Stabilized group g{g} generation {n}",
    "[2024-05-01 10:00:05,000] INFO [GroupCoordinator 1]: Preparing to rebalance group g{g} in state Stable with "
    "old generation {n} (__consumer_offsets-7) (reason: caf\u00e9 left) (kafka.coordinator.group.GroupCoordinator)",
    "2024-05-01 10:00:06.000  INFO 1 --- [ntainer#0-0-C-1] o.s.k.l.KafkaMessageListenerContainer : "
    "[Consumer clientId=c-{n}, groupId=g{g}] Successfully joined group with generation Generation{{generationId={n}, "
    "memberId='c-{n}-x', protocol='range'}}",
    "[2024-05-01 10:00:07,000] INFO [Consumer clientId=c-{n}, groupId=g{g}] Adding newly assigned partitions: t-0",
    "[2024-05-01 10:00:08,000] WARN [GroupCoordinator 1]: Something about group g{g} nobody logs (kafka.x)",
    "[2024-05-01 10:00:09,000] INFO [GroupMetadataManager brokerId=1] Removed 0 expired offsets in 1 milliseconds. "
    "(kafka.coordinator.group.GroupMetadataManager)",
    "[2024-05-01 10:00:10,000] INFO [LocalLog partition=orders-3, dir=/data] Rolled new log segment (kafka.log.LocalLog)",
    "\tat kafka.server.KafkaApis.handle(KafkaApis.scala:150)",
    "```",
    "",
    '{{"@timestamp":"2024-05-01T10:00:11.000Z","message":"[GroupCoordinator 1]: Stabilized group g{g} generation {n}"}}',
]


@st.composite
def logs(draw):  # type: ignore[no-untyped-def]
    lines = []
    for _ in range(draw(st.integers(1, 30))):
        line = draw(st.sampled_from(LINES)).format(g=draw(st.integers(0, 2)), n=draw(st.integers(1, 9)))
        if line and draw(st.integers(0, 4)) == 0:  # wrapped by a terminal
            cut = draw(st.integers(1, len(line)))
            lines += [line[:cut], line[cut:]]
        else:
            lines.append(line)
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\r\n"]))


def _rows(records: list[dict]) -> list[dict]:
    return [{k: (str(v) if k in ("kind", "side", "library") and v is not None else v)
             for k, v in record.items() if v is not None and k in FIELDS + ["shape"]} for record in records]


def _per_line(path: Path, split_bytes: int, block_bytes: int) -> tuple[list[dict], list[str]]:
    records, facts = [], []
    size = path.stat().st_size
    for index, split in enumerate(plan_splits([(str(path), size)], split_bytes)):
        counts = ScanCounts()
        split_facts, last_group = SplitFacts(index, str(path), "c", split.start), {}
        for record in parse_numbered(scan(split, counts, block_bytes=block_bytes), str(path), "c", syslog=TEST_SYSLOG):
            split_facts.add(record, last_group)
            records.append(record)
        split_facts.lines = counts.lines
        facts.append(split_facts.to_json())
    return _rows(records), facts


def _column_at_a_time(path: Path, split_bytes: int, block_bytes: int) -> tuple[list[dict], list[str]]:
    records, facts = [], []
    size = path.stat().st_size
    for index, split in enumerate(plan_splits([(str(path), size)], split_bytes)):
        reader = readlog.SplitReader(split, index, str(path), "c", syslog=TEST_SYSLOG, block_bytes=block_bytes)
        for table in reader.tables():
            records += table.to_pylist()
        facts.append(reader.facts.to_json())
    return _rows(records), facts


@pytest.mark.parametrize("kernel", ["hyperscan", "in"])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=logs(), split_bytes=st.integers(200, 5000), block_bytes=st.sampled_from([64, 300, 4096, 1 << 20]))
def test_the_reader_gives_what_the_per_line_parser_gives(tmp_path_factory, monkeypatch, kernel,  # type: ignore[no-untyped-def]
                                                         text, split_bytes, block_bytes):
    if kernel == "hyperscan":  # the same for every example
        monkeypatch.setattr(readlog, "SEARCH_FROM_LINES", 0)
    else:
        monkeypatch.setattr(readlog, "phrase_search_for", lambda lines: None)
    path = tmp_path_factory.mktemp("log") / "server.log"
    path.write_bytes(text.encode("utf-8"))
    assert _column_at_a_time(path, split_bytes, block_bytes) == _per_line(path, split_bytes, block_bytes)


def test_the_local_engine_numbers_lines_and_reads_a_paste_the_same() -> None:
    text = "\n".join(line.format(g=1, n=3) for line in LINES) + "\n"
    from_paste = readlog.SplitReader(Split("-"), 0, "-", "c", syslog=TEST_SYSLOG, line_numbers=True,
                                     data=text.encode())
    rows = [row for table in from_paste.tables() for row in table.to_pylist()]
    expected = list(parse_numbered(((seq, line, True) for seq, line in enumerate(text.splitlines(keepends=True))),
                                   "-", "c", syslog=TEST_SYSLOG, line_numbers=True))
    assert _rows(rows) == _rows(expected)
    assert json.loads(from_paste.facts.to_json())["events"] == sum(1 for r in expected if r["kind"] is not None)


def test_every_line_the_column_parser_takes_is_read_as_parse_line_reads_it() -> None:
    import pyarrow as pa

    lines = [line.rstrip("\n") for path in CORPUS for line in path.open(encoding="utf-8", errors="replace")
             if passes_gate(line) and line.isascii()]
    lines += [line.format(g=2, n=5) for line in LINES if line.isascii()]
    markers = np.array([[marker in line for marker in MARKERS] for line in lines], bool)
    columns, taken = parse_log4j(pa.array(lines, pa.string()), markers)
    assert len(taken) > 50
    for row, index in enumerate(taken.tolist()):
        event = parse_line(lines[index], TEST_SYSLOG)
        assert event is not None
        expected = {name: (str(v) if isinstance(v, str) else v) for name in FIELDS
                    if name in columns and (v := event.get(name)) is not None}
        got = {name: v for name in FIELDS if name in columns and (v := columns[name][row].as_py()) is not None}
        assert got == expected, lines[index]


def test_a_message_opening_with_alternatives_is_first_matched_where_one_of_them_is() -> None:
    """``member_joined`` opens with ``(Static|Dynamic)``: a line is first matched where the first
    of its leads is, and anywhere (the leftmost match) when it does not match there."""
    assert literal_leads(r"(?P<membership>Static|Dynamic) [mM]ember with") == ("Static ", "Dynamic ")
    assert literal_leads(r"(?:Scheduling x-|Resigned as )(?P<partition>\d+)") == ("Scheduling x-", "Resigned as ")
    assert literal_leads(r"Stabilized group (?P<group>\S+)") == ("Stabilized group ",)
    assert literal_leads(r"(?:Static|Dyn(?:amic)?) member") == ()  # an alternative that is no literal
    assert literal_leads(r"(?:Static|Dynamic)? member") == ()  # the group may be absent
    assert literal_leads(r"(?P<member>\S+) left") == ()
    import pyarrow as pa

    joins = ("[2024-05-01 10:00:01,123] INFO [GroupCoordinator 1]: {before}{kind} member with unknown member id "
             "joins group g1 in Stable state. Created a new member id m-{n} and requesting the member to rejoin "
             "with this id. (kafka.coordinator.group.GroupCoordinator)")
    lines = [joins.format(before=before, kind=kind, n=n) for n, (before, kind) in enumerate([
        ("", "Dynamic"), ("", "Static"), ("Static note: ", "Dynamic"), ("Dynamic note: ", "Static"),
        ("Static ", "Dynamic"), ("Dynamic Static ", "Static"),
        ("Static member with unknown member id joins group g0 in Empty state. Created a new member id x-0 and ",
         "Dynamic")])]
    markers = np.array([[marker in line for marker in MARKERS] for line in lines], bool)
    columns, taken = parse_log4j(pa.array(lines, pa.string()), markers)
    assert taken.tolist() == list(range(len(lines)))
    for row, line in enumerate(lines):
        event = parse_line(line, TEST_SYSLOG)
        assert event is not None
        assert {name: columns[name][row].as_py() for name in ("kind", "group", "member", "membership")
                if name in columns} == {name: event.get(name) for name in ("kind", "group", "member", "membership")
                                        if name in columns}, line


def test_every_broker_message_is_read_by_re2() -> None:
    broker = [i for i, m in enumerate(MESSAGES) if m.side is Side.BROKER]
    assert all(re2_plans()[i] is not None for i in broker), [MESSAGES[i].pattern for i in broker
                                                                if re2_plans()[i] is None]


def test_prepare_makes_every_plan_a_worker_would_make_on_first_use() -> None:
    """The plans are made lazily (a paste meets a few messages); ``prepare`` makes every one in
    the worker daemon before it forks, and each message's regex and plan must build."""
    readlog.prepare()
    assert all(plan_of(index).message is message for index, message in enumerate(MESSAGES))
    assert all(message.compiled().pattern == message.pattern for message in MESSAGES)


def test_a_block_uses_hyperscan_once_compiled_and_when_it_pays_to_compile_it() -> None:
    """``in`` costs about 80 us a gated line, hyperscan 1.4 us once compiled (about 50 ms): a
    small block alone gets ``in``; once a block was large enough to compile it, every block
    gets hyperscan (a file's short last block, the next small file)."""
    assert readlog.SEARCH_FROM_LINES <= 1000
    readlog.prepare()
    assert readlog.phrase_search_for(1) is not None


@given(st.binary(max_size=300))
def test_unusual_bytes_are_those_outside_printable_ascii_tab_and_newline(data: bytes) -> None:
    plain = set(range(0x20, 0x7F)) | {0x09, 0x0A}
    expected = [at for at, byte in enumerate(data) if byte not in plain]
    assert readlog.unusual_bytes(np.frombuffer(data, np.uint8)).tolist() == expected
