"""The byte-range scan the Spark engine reads with (``logparse.scan``): split anywhere, it finds
the same events and unrecognised lines as reading every line (the local engine), wrapped lines
joined again included, with either search (hyperscan, or ``bytes.find`` without it), which give
the same lines at any block size; and year-less syslog times (``layout``'s syslog reference)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.pipeline.logparse import layout
from kafka_rebalance.pipeline.logparse.catalogue import GATE_SUBSTRINGS, NOISE_SUBSTRINGS
from kafka_rebalance.pipeline.logparse.parse import parse_line, parse_lines, parse_numbered
from kafka_rebalance.pipeline.logparse.scan import (
    BLOCK_BYTES,
    FIND_SEARCH,
    HYPERSCAN_SEARCH,
    ScanCounts,
    Search,
    Split,
    plan_splits,
    scan_blocks,
)
from tests.conftest import TEST_SYSLOG
from tests.pipeline.logs.line_reader import scan

# Both ways of finding the gated lines; hyperscan comes with the ``spark`` extra (CI has it).
SEARCHES = [
    pytest.param(FIND_SEARCH, id="find"),
    pytest.param(HYPERSCAN_SEARCH, id="hyperscan",
                 marks=pytest.mark.skipif(HYPERSCAN_SEARCH is None, reason="hyperscan is not installed")),
]

PREPARING = ("[2024-05-01 10:00:0{s},123] INFO [GroupCoordinator 1]: Preparing to rebalance group g{g} in state "
             "PreparingRebalance with old generation {n} (__consumer_offsets-7) (reason: Adding new member "
             "consumer-1-0a1b with group instance id None; client reason: not provided) "
             "(kafka.coordinator.group.GroupCoordinator)")
STABILIZED = ("[2024-05-01 10:00:0{s},456] INFO [GroupCoordinator 1]: Stabilized group g{g} generation {n} "
              "(__consumer_offsets-7) with 2 members (kafka.coordinator.group.GroupCoordinator)")
NOISE = [
    "[2024-05-01 10:00:01,000] INFO [LocalLog partition=orders-3, dir=/data] Rolled new log segment at offset 9 "
    "in 1 ms. (kafka.log.LocalLog)",
    "[2024-05-01 10:00:01,000] INFO [GroupMetadataManager brokerId=1] Removed 0 expired offsets in 1 milliseconds. "
    "(kafka.coordinator.group.GroupMetadataManager)",
    "\tat kafka.server.KafkaApis.handle(KafkaApis.scala:150)",
    "```",
    "",
    "[2024-05-01 10:00:02,000] WARN [GroupCoordinator 1]: Something about group g9 nobody logs (kafka.x)",
]


def _without_position(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in ("seq", "line_no")}


def _both_ways(path, text: str, split_bytes: int, search: Search) -> tuple[list[dict], list[dict], int]:
    path.write_bytes(text.encode("utf-8"))
    every_line = [_without_position(r) for r in parse_lines(path.open(encoding="utf-8", newline=""), str(path), syslog=TEST_SYSLOG)]
    counts = ScanCounts()
    scanned = []
    for split in plan_splits([(str(path), path.stat().st_size)], split_bytes):
        scanned += [_without_position(r) for r in parse_numbered(scan(split, counts, search=search), str(path), syslog=TEST_SYSLOG)]
    return every_line, scanned, counts.lines


@st.composite
def logs(draw):
    lines = []
    for index in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["preparing", "stabilized", "noise"]))
        if kind == "noise":
            lines.append(draw(st.sampled_from(NOISE)))
            continue
        template = PREPARING if kind == "preparing" else STABILIZED
        line = template.format(s=index % 10, g=draw(st.integers(0, 2)), n=draw(st.integers(1, 9)))
        if draw(st.booleans()):  # wrapped by a terminal, where a paste's width falls
            cut = draw(st.integers(45, len(line) - 1))
            lines += [line[:cut], line[cut:]]
        else:
            lines.append(line)
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    return ending.join(lines) + draw(st.sampled_from([ending, ""]))


@pytest.mark.parametrize("search", SEARCHES)
@settings(max_examples=60, deadline=None)
@given(text=logs(), split_bytes=st.sampled_from([37, 200, 1000, 10**9]))
def test_scanning_byte_ranges_reads_what_reading_every_line_reads(tmp_path_factory, search, text, split_bytes):
    path = tmp_path_factory.mktemp("scan") / "server.log"
    every_line, scanned, lines = _both_ways(path, text, split_bytes, search)
    if split_bytes > len(text.encode()):
        assert scanned == every_line
    else:
        # Known edge (``scan``'s docstring): a wrapped line cut exactly at a split boundary is
        # joined by the split before, and its second half, when it holds a gate phrase, is also
        # read on its own by the next split. Nothing is lost; real splits are >= 128 MB.
        assert [r for r in every_line if r not in scanned] == []
    assert lines == len(text.splitlines())


@pytest.mark.parametrize("search", SEARCHES)
def test_a_wrapped_line_is_joined_again_by_the_scan(tmp_path, search):
    line = PREPARING.format(s=1, g=1, n=4)
    text = "\n".join([NOISE[0], line[:90], line[90:], NOISE[2], STABILIZED.format(s=2, g=1, n=5)]) + "\n"
    every_line, scanned, _ = _both_ways(tmp_path / "paste.log", text, 10**9, search)
    assert [r["kind"] for r in scanned] == ["preparing_rebalance", "stabilized"] and scanned == every_line
    assert scanned[0]["old_generation"] == 4 and scanned[0]["reason"].startswith("Adding new member")


@pytest.mark.parametrize("search", SEARCHES)
def test_a_gzip_file_is_one_split(tmp_path, search):
    import gzip

    path = tmp_path / "server.log.gz"
    text = "\n".join([NOISE[0], STABILIZED.format(s=1, g=1, n=5)] * 3) + "\n"
    path.write_bytes(gzip.compress(text.encode()))
    (split,) = plan_splits([(str(path), 10**10)], 128)
    counts = ScanCounts()
    events = list(parse_numbered(scan(split, counts, search=search), str(path), syslog=TEST_SYSLOG))
    assert [e["kind"] for e in events] == ["stabilized"] * 3 and counts.lines == 6


# ------------------------------------------------------------------- the two searches, block edges

# Pieces of lines: every gate and noise phrase (so also both in one line, and a noise phrase
# running into a gate phrase: "...Manage" + "roup"), fence marks after Unicode spaces, bytes that
# are not UTF-8, and carriage returns.
PIECES = [p.encode() for p in (*GATE_SUBSTRINGS, *NOISE_SUBSTRINGS)] + [
    b"TransactionStateManage", b"g", b"```", b"~~~", b"  ", b"\xe2\x80\x83", b"\x1c", b"\t", b"\r", b"x" * 40,
    b"\xff", b"\xe2\x82", "é".encode(), b"Stabilized group g generation 5",
]


@st.composite
def byte_logs(draw) -> bytes:
    lines = draw(st.lists(st.lists(st.sampled_from(PIECES), max_size=5).map(b"".join), min_size=1, max_size=30))
    return b"\n".join(lines) + draw(st.sampled_from([b"\n", b""]))


def _scanned(path, split_bytes: int, search: Search, block_bytes: int) -> tuple[list[tuple[int, str, bool]], int]:
    counts = ScanCounts()
    records = []
    for split in plan_splits([(str(path), path.stat().st_size)], split_bytes):
        records += scan(split, counts, search=search, block_bytes=block_bytes)
    return records, counts.lines


@pytest.mark.skipif(HYPERSCAN_SEARCH is None, reason="hyperscan is not installed")
@settings(max_examples=300, deadline=None)
@given(data=byte_logs(), split_bytes=st.sampled_from([17, 64, 300, 10**9]), block_bytes=st.integers(1, 120))
def test_both_searches_give_the_same_lines_at_any_block_size(tmp_path_factory, data, split_bytes, block_bytes):
    """hyperscan and ``bytes.find`` give the same ``(seq, line, owned)`` stream and line count,
    read in blocks of a few bytes (phrases and lines at every block edge, lines longer than a
    block) or in one; both block sizes give the same, code fences that pass the gate included;
    no line is read twice by its own split."""
    path = tmp_path_factory.mktemp("edges") / "server.log"
    path.write_bytes(data)
    one_block = _scanned(path, split_bytes, FIND_SEARCH, 10**9)
    in_blocks = _scanned(path, split_bytes, FIND_SEARCH, block_bytes)
    for search in (FIND_SEARCH, HYPERSCAN_SEARCH):
        assert _scanned(path, split_bytes, search, block_bytes) == in_blocks
        assert _scanned(path, split_bytes, search, 10**9) == one_block
    assert in_blocks == one_block
    for records, _ in (one_block, in_blocks):
        owned = [seq for seq, _, is_owned in records if is_owned]  # a split's last follower is the next one's
        assert all(a < b for a, b in zip(owned, owned[1:], strict=False))
    assert one_block[1] == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


@pytest.mark.parametrize("search", SEARCHES)
@pytest.mark.parametrize("block_bytes", [1, 3, 6, 10**9])
def test_a_fence_that_passes_the_gate_is_read_once_in_order(tmp_path, search, block_bytes):
    """A code fence holding a gate phrase right after a gated line: skipped as that line's
    follower, read as gated itself, then its own follower; each line once, in file order."""
    path = tmp_path / "fence.log"
    path.write_bytes(b"roup\n```roup\n\nnext\n")
    got = [(seq, line) for seq, line, _ in scan(Split(str(path)), search=search, block_bytes=block_bytes)]
    assert got == [(0, "roup"), (5, "```roup"), (13, "")]


@pytest.mark.parametrize("search", SEARCHES)
def test_lines_across_the_real_block_boundary(tmp_path, search):
    """At the real block size (16 MiB): a gated line ending the block, or cut by its end, with
    its follower (the first half of a wrapped gated line) in the next block, read as in one block."""
    filler = b"[2024-05-01 10:00:00,000] INFO [LocalLog partition=orders-3] Rolled new log segment (kafka.log.LocalLog)\n"
    gated = STABILIZED.format(s=1, g=1, n=5).encode()
    head = filler * (BLOCK_BYTES // len(filler) - 3)
    pad = BLOCK_BYTES - len(head) - len(gated) - 1
    data = head + b"x" * (pad - 1) + b"\n" + gated + b"\n" + gated[:50] + b"\n" + gated[50:] + b"\n" + filler * 3
    for shift in (0, 30, len(gated)):  # the gated line ends the first block, is cut by its end, has one byte in it
        path = tmp_path / f"edge-{shift}.log"
        path.write_bytes(b"y" * shift + data)
        one_block, lines = _scanned(path, 10**10, FIND_SEARCH, 10**10)
        assert _scanned(path, 10**10, search, BLOCK_BYTES) == (one_block, lines)
        assert [(seq, line) for seq, line, _ in one_block[:2]] == [
            (BLOCK_BYTES - len(gated) - 1 + shift, gated.decode()), (BLOCK_BYTES + shift, gated[:50].decode())]


# --------------------------------------------------------------------------- syslog's missing year

SYSLOG = "{stamp} broker1 kafka[812]: [GroupCoordinator 0]: Stabilized group g generation {n} (__consumer_offsets-7)"


def _utc(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def test_a_syslog_story_across_new_year_runs_forward():
    """Read on Jan 2, 2025: Dec 31 is last year's, Jan 1 this year's."""
    lines = [SYSLOG.format(stamp="Dec 31 23:59:50", n=5), SYSLOG.format(stamp="Jan  1 00:00:10", n=6)]
    read_on = layout.SyslogReference(_utc("2025-01-02T09:00:00"))
    events = [parse_line(line, read_on) for line in lines]
    assert [e["time_ms"] for e in events] == [_utc("2024-12-31T23:59:50"), _utc("2025-01-01T00:00:10")]


def test_the_year_option_places_syslog_times_in_that_year_or_before_that_day():
    line = SYSLOG.format(stamp="Mar  3 10:00:00", n=5)
    year = layout.SyslogReference.from_year_option
    assert parse_line(line, year("2021"))["time_ms"] == _utc("2021-03-03T10:00:00")
    assert parse_line(line, year("2021-03-02"))["time_ms"] == _utc("2020-03-03T10:00:00")
    # Feb 29 goes back to the last leap year
    assert parse_line(SYSLOG.format(stamp="Feb 29 10:00:00", n=5), year("2023"))["time_ms"] == _utc("2020-02-29T10:00:00")
    for bad in ("21", "2021-13-01", "last year"):
        with pytest.raises(ValueError):
            layout.parse_year_option(bad)


def test_parse_line_reads_no_clock_its_reference_is_an_argument():
    """The same line read with the same reference gives the same time whenever it is read; a
    later reference moves a year-less time only when a later year fits."""
    line = SYSLOG.format(stamp="Jan  1 00:00:00", n=5)
    first = layout.SyslogReference(_utc("2030-06-01T00:00:00"))
    assert parse_line(line, first)["time_ms"] == parse_line(line, first)["time_ms"] == _utc("2030-01-01T00:00:00")
    assert parse_line(line, layout.SyslogReference(_utc("2031-01-01T00:00:00")))["time_ms"] == _utc("2031-01-01T00:00:00")
    assert parse_line(line, layout.SyslogReference(_utc("2030-12-31T23:59:59")))["time_ms"] == _utc("2030-01-01T00:00:00")


def test_the_cli_places_year_less_times_no_later_than_the_runs_start():
    from kafka_rebalance.cli.logs_cmd import _syslog_reference

    before = int(datetime.now(UTC).timestamp() * 1000)
    reference = _syslog_reference(None)
    assert before <= reference.until_ms <= datetime.now(UTC).timestamp() * 1000 + 1
    assert _syslog_reference("2021") == layout.SyslogReference.from_year_option("2021")


def test_the_applications_own_full_timestamp_wins_over_syslogs():
    line = ("Nov 23 14:00:01 broker1 kafka[812]: [2019-11-23 14:00:01,250] INFO [GroupCoordinator 0]: "
            "Stabilized group g generation 5 (__consumer_offsets-7) with 1 members")
    assert parse_line(line, TEST_SYSLOG)["time_ms"] == _utc("2019-11-23T14:00:01.250")


def test_the_year_option_end_to_end_and_as_bad_input(tmp_path):
    """``logs --year``: a syslog paste crossing New Year gets its rebalance in order; a bad value
    is one line on stderr and exit 2."""
    import json

    import pandas as pd
    from click.testing import CliRunner

    from kafka_rebalance.cli import cli, logs_cmd  # noqa: F401  (registers the command)

    prefix = "{stamp} broker1 kafka[812]: [GroupCoordinator 0]: "
    paste = "\n".join([
        prefix.format(stamp="Dec 31 23:59:50") + "Preparing to rebalance group g in state PreparingRebalance with "
        "old generation 4 (__consumer_offsets-7) (reason: Adding new member c-1 with group instance id None)",
        prefix.format(stamp="Jan  1 00:00:10") + "Stabilized group g generation 5 (__consumer_offsets-7) with 1 members",
    ]) + "\n"
    result = CliRunner().invoke(cli, ["logs", "-", "--out", str(tmp_path / "out"), "--json", "--year", "2025-01-02"],
                                input=paste)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["syslog_until"] == "2025-01-02T23:59:59+00:00"
    (row,) = pd.read_parquet(tmp_path / "out" / "rebalances").itertuples()
    assert (str(row.start), row.duration_ms) == ("2024-12-31 23:59:50", 20_000)
    bad = CliRunner().invoke(cli, ["logs", "-", "--out", str(tmp_path / "bad"), "--year", "soon"], input=paste)
    assert bad.exit_code == 2 and "--year" in bad.output and "Traceback" not in bad.output


def test_splits_are_packed_into_tasks_of_about_equal_bytes():
    from kafka_rebalance.pipeline.logparse.scan import Split, pack_splits

    sizes = {"big.log": 1000, **{f"small-{i}.log": 10 for i in range(100)}}
    splits = plan_splits(list(sizes.items()), 500)
    tasks = pack_splits(splits, sizes, 3)
    def order(split):
        return split.path, split.start

    assert len(tasks) == 3 and sorted((s for t in tasks for s in t), key=order) == sorted(splits, key=order)
    loads = sorted(sum((s.end or sizes[s.path]) - s.start for s in t) for t in tasks)
    assert loads == [500, 500, 1000] or max(loads) - min(loads) <= 500
    assert pack_splits([Split("a.log")], {"a.log": 5}, 8) == [[Split("a.log")]]


@settings(max_examples=200, deadline=None)
@given(data=byte_logs(), split_bytes=st.sampled_from([17, 64, 300, 10**9]), block_bytes=st.integers(1, 120))
def test_lines_are_counted_alike_with_the_newlines_found_or_not(tmp_path_factory, data, split_bytes, block_bytes):
    """The local engine asks for the blocks' newlines (its line numbers) and counts lines from
    them; the Spark engine counts them alone: the same count, and the newlines where they are."""
    path = tmp_path_factory.mktemp("log") / "server.log"
    path.write_bytes(data)
    for split in plan_splits([(str(path), len(data))], split_bytes):
        counted, found = ScanCounts(), ScanCounts()
        for _ in scan_blocks(split, counted, block_bytes=block_bytes):
            pass
        for scanned in scan_blocks(split, found, block_bytes=block_bytes, newlines=True):
            block = bytes(scanned.block[:scanned.size])
            assert scanned.newlines.tolist() == [at for at, byte in enumerate(block) if byte == 10]
        assert found.lines == counted.lines


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200), cut=st.integers(0, 200))
def test_newlines_are_counted_as_bytes_count_counts_them(data, cut):
    from kafka_rebalance.pipeline.logparse.scan import count_newlines

    data = data.replace(b"\x00", b"\n")  # newlines frequent enough to matter
    end = min(cut, len(data))
    assert count_newlines(bytearray(data), end) == data[:end].count(b"\n")
