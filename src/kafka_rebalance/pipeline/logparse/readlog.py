"""One input (a Spark split, a whole file, a paste) -> its ``events`` table and ``SplitFacts``:
the one reading path of both engines, so they agree by construction.

Each block from ``scan.scan_blocks`` is read in three steps. The gated lines are cut out of the
block into one Arrow array (no line is decoded in Python) and searched once more by hyperscan,
for the message markers (``fastparse.MARKERS``) and what makes a line several records. The
common lines (plain log4j, one record, a broker message RE2 reads) are parsed a column at a
time (``fastparse.parse_log4j``). The rest, and the line after each of them (a wrapped line is
joined again from it), go through the per-line parser (``parse.parse_numbered``) exactly as
``scan`` hands them over, with each common line it meets in their way passed as a line it does
not own (it only ends a wrapped line; its events are the column parser's). The events of both are
put back in line order, counted into the facts (``SplitFacts.add_table``) and handed on.

``seq`` is the byte offset of a line's start (the Spark engine) or its index in the input
(``line_numbers``, the local engine).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from kafka_rebalance.pipeline.logparse.catalogue import GATE_SUBSTRINGS, MESSAGES
from kafka_rebalance.pipeline.logparse.fastparse import MARKERS, parse_log4j
from kafka_rebalance.pipeline.logparse.layout import SyslogReference
from kafka_rebalance.pipeline.logparse.parse import (
    READ_ERRORS,
    RECORD_OPENINGS,
    LineError,
    parse_numbered,
    plan_of,
)
from kafka_rebalance.pipeline.logparse.scan import (
    BLOCK_BYTES,
    ScanCounts,
    ScannedBlock,
    Split,
    cut_lines,
    decode,
    first_line,
    gated_fence_before,
    line_data,
    passes_gate_bytes,
    scan_blocks,
)
from kafka_rebalance.pipeline.logparse.schemas import arrow_schema
from kafka_rebalance.pipeline.logparse.split_facts import SplitFacts

try:
    import hyperscan
except ImportError:  # the ``spark`` extra's speed-up: without it, markers are found with ``in``
    hyperscan = None  # type: ignore[assignment]

# Hyperscan ids over the gated lines: the markers, the record openings that are no marker, and
# last a line holding the broker prefix twice (``parse.records_of``'s two tests for several records).
_PHRASES = (*MARKERS, *(opening for opening in RECORD_OPENINGS if opening not in MARKERS))
_OPENING_IDS = [_PHRASES.index(opening) for opening in RECORD_OPENINGS]
_TWO_PREFIXES_ID = len(_PHRASES)
_BROKER_PREFIX = "[GroupCoordinator"
assert all(phrase.isascii() for phrase in GATE_SUBSTRINGS)
# Bytes the column parser takes: printable ASCII, tab, and the newline that ends a line.
_TAB, _NEWLINE = 0x09, 0x0A


def unusual_bytes(raw: np.ndarray) -> np.ndarray:
    """Where ``raw`` (uint8) holds a byte the column parser does not take: two comparisons over
    the bytes (a 256-entry lookup per byte cost four times as long), then the newlines (one a
    line) and tabs among those found let through."""
    odd = np.flatnonzero((raw < 0x20) | (raw > 0x7E))
    found = raw[odd]
    unusual: np.ndarray = odd[(found != _NEWLINE) & (found != _TAB)]
    return unusual


def _literal(phrase: str) -> bytes:
    return b"".join(bytes([c]) if chr(c).isalnum() else b"\\x%02x" % c for c in phrase.encode())


def _on_hit(pattern: int, _start: int, end: int, _flags: int, append: Any) -> None:
    append(end << 8 | pattern)


class _PhraseSearch:
    """Every phrase of ``_PHRASES`` found in the gated lines in one hyperscan pass."""

    def __init__(self) -> None:
        assert hyperscan is not None
        self.database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        expressions = [*(_literal(p) for p in _PHRASES), _literal(_BROKER_PREFIX) + b"[^\\n]*" + _literal(_BROKER_PREFIX)]
        self.database.compile(expressions=expressions, ids=list(range(len(expressions))), elements=len(expressions),
                              flags=[0] * len(expressions))

    def __call__(self, data: Any, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(line, phrase id) of every phrase found in the lines ``data[offsets[i]:offsets[i+1]]``."""
        assert hyperscan is not None
        hits: list[int] = []
        self.database.scan(data, match_event_handler=_on_hit, context=hits.append,
                           scratch=hyperscan.Scratch(self.database))
        packed = np.array(hits, np.int64)
        ends = packed >> 8
        return np.searchsorted(offsets, ends - 1, side="right") - 1, packed & 255


# Below this many gated lines in a block (a paste, a small file), ``in`` finds the phrases
# sooner than compiling the hyperscan database would (about 50 ms, then 1.4 us a line against
# ``in``'s 80 us: they break even at about 650 lines).
SEARCH_FROM_LINES = 600
_SEARCH: list[_PhraseSearch | None] = []


def _phrase_search() -> _PhraseSearch | None:
    """The hyperscan search, compiled once per process when first needed."""
    if not _SEARCH:
        try:
            _SEARCH.append(_PhraseSearch() if hyperscan is not None else None)
        except hyperscan.error:
            _SEARCH.append(None)
    return _SEARCH[0]


def phrase_search_for(lines: int) -> _PhraseSearch | None:
    """The search for a block of ``lines`` gated lines: hyperscan's once it is compiled (every
    block after the first large one, the tail of a file included), or None (``in``)."""
    return _phrase_search() if _SEARCH or lines >= SEARCH_FROM_LINES else None


def prepare() -> None:
    """Compile what every block needs (the phrase search) and the per-line plans of every
    message, for a process that forks the workers that read (``worker_daemon``). The RE2 plans
    are left to each worker, made on first meeting a message: a log holds a few of the catalogue's
    messages, and making all of them in the daemon (0.15-0.22 s) delayed every worker's start."""
    _phrase_search()
    for index in range(len(MESSAGES)):
        plan_of(index)


def _phrases_with_find(lines: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """``_PhraseSearch`` without hyperscan."""
    found = [(line, phrase) for line, text in enumerate(lines) for phrase, word in enumerate(_PHRASES)
             if word.encode() in text]
    found += [(line, _TWO_PREFIXES_ID) for line, text in enumerate(lines) if text.count(_BROKER_PREFIX.encode()) >= 2]
    return np.array([f[0] for f in found], np.int64), np.array([f[1] for f in found], np.int64)


HEAD_LINES = 5


def _first_lines(block: bytes | bytearray, size: int, count: int) -> list[str]:
    """The first ``count`` lines of ``block[:size]``, each with its newline."""
    lines: list[str] = []
    start = 0
    while start < size and len(lines) < count:
        end = block.find(b"\n", start, size)
        end = size if end == -1 else end + 1
        lines.append(decode(block[start:end]))
        start = end
    return lines


class SplitReader:
    """Reads one split: ``tables()`` yields its events block by block (``arrow_schema("events")``,
    in line order, client lines naming no group filled as ``SplitFacts.add`` fills them);
    ``facts`` is complete once they are all read (a client line whose client named its group
    only in a split before is left for the story tasks: ``exchange.read_split``). ``data``: the
    input's bytes when it is no file (a paste)."""

    def __init__(self, split: Split, index: int, source: str, cluster: str, *, syslog: SyslogReference,
                 line_numbers: bool = False, data: bytes | None = None,
                 on_read: Callable[[int], None] | None = None, block_bytes: int = BLOCK_BYTES):
        self.split = split
        self.block_bytes = block_bytes
        self.data = data
        self.on_read = on_read
        self.source = source
        self.cluster = cluster
        self.syslog = syslog
        self.line_numbers = line_numbers
        self.counts = ScanCounts()
        self.facts = SplitFacts(index, source, cluster, split.start)
        self.last_group: dict[str, str] = {}
        self.head: list[str] = []  # the first lines of the input (the local engine's samples)

    def tables(self) -> Iterator[Any]:
        held: list[tuple[int, str, bool]] = []  # per-line items waiting for a line of the next block
        lines_before = 0
        for scanned in scan_blocks(self.split, self.counts, data=self.data, block_bytes=self.block_bytes,
                                   newlines=self.line_numbers):
            if self.on_read is not None:
                self.on_read(scanned.size)
            if scanned.offset == 0:
                self.head = _first_lines(scanned.block, scanned.size, HEAD_LINES)
            newlines = scanned.newlines
            items, fast, waiting_from = self._block(scanned, newlines, lines_before, held)
            if newlines is not None:
                lines_before += len(newlines)
            cut = len(items) if waiting_from is None else waiting_from
            scanned.wants_next = waiting_from is not None
            held = items[cut:]
            table = self._merge(fast, self._per_line(items[:cut]))
            if table.num_rows:
                yield self.facts.add_table(table, self.last_group, line_numbers=self.line_numbers)
        table = self._merge(None, self._per_line(held))
        if table.num_rows:
            yield self.facts.add_table(table, self.last_group, line_numbers=self.line_numbers)
        self.facts.lines = self.counts.lines

    def _per_line(self, items: list[tuple[int, str, bool]]) -> list[Any]:
        if not items:
            return []
        return list(parse_numbered(items, self.source, self.cluster, syslog=self.syslog,
                                   line_numbers=self.line_numbers))

    def _seqs(self, scanned: ScannedBlock, starts: np.ndarray, newlines: np.ndarray | None,
              lines_before: int) -> np.ndarray:
        """The ``seq`` of the lines starting at ``starts`` (bytes into the block)."""
        if newlines is None:
            return starts + scanned.offset
        return np.searchsorted(newlines, starts) + lines_before

    def _block(self, scanned: ScannedBlock, newlines: np.ndarray | None, lines_before: int,
               held: list[tuple[int, str, bool]]) -> tuple[list[tuple[int, str, bool]], Any, int | None]:
        """A block -> (the per-line parser's items, after those held from the block before; the
        column parser's events; the first item that still waits for a line of the next block).
        Only the lines the column parser does not take are visited one by one."""
        block, size, owned_end = scanned.block, scanned.size, scanned.owned_end

        def seq(start: int) -> int:
            return int(self._seqs(scanned, np.array([start]), newlines, lines_before)[0])

        items = list(held)
        waiting_from: int | None = 0 if held else None
        if held:
            follower = first_line(block, 0, size)
            if follower is not None:
                start, end = follower
                owned = start < owned_end
                gated = owned and passes_gate_bytes(block[start:end])
                if not gated:
                    waiting_from = None
                    if not gated_fence_before(block, start, owned_end):
                        items.append((seq(start), decode(block[start:end]), owned))
        gated_lines = scanned.gated
        if not len(gated_lines):
            return items, None, waiting_from
        try:
            fast, taken = self._parse_columns(scanned, newlines, lines_before)
        except READ_ERRORS:
            raise
        except Exception as exc:  # noqa: BLE001 - the last guard, as ``parse.parse_numbered``'s: a defect names its input
            raise LineError(self.source, None, exc) from exc
        count = len(gated_lines)

        def ends_wrapped_line(index: int) -> None:
            """A line the column parser took, after a line the per-line parser holds: it is that
            line's follower (it only ends it)."""
            start, end = gated_lines[index].tolist()
            items.append((seq(start), decode(block[start:end]), False))

        if waiting_from is not None and taken[0]:
            ends_wrapped_line(0)
            waiting_from = None
        for index in np.flatnonzero(~taken).tolist():
            start, end = gated_lines[index].tolist()
            if waiting_from is None:
                waiting_from = len(items)
            items.append((seq(start), decode(block[start:end]), True))
            follower = first_line(block, end + 1, size)
            if follower is None:
                continue
            follower_start, follower_end = follower
            if index + 1 == count or follower_start < int(gated_lines[index + 1, 0]):
                items.append((seq(follower_start), decode(block[follower_start:follower_end]),
                              follower_start < owned_end))
                waiting_from = None
            elif taken[index + 1]:
                ends_wrapped_line(index + 1)
                waiting_from = None
        return items, fast, waiting_from

    def _parse_columns(self, scanned: ScannedBlock, newlines: np.ndarray | None,
                       lines_before: int) -> tuple[Any, np.ndarray]:
        """The gated lines the column parser takes -> (their events' table, which lines)."""
        import pyarrow as pa

        bounds = scanned.gated
        count = len(bounds)
        lines = cut_lines(scanned.block, scanned.size, bounds)
        data, line_offsets = line_data(lines)
        raw = np.frombuffer(data, np.uint8)
        plain = np.ones(count, bool)
        unusual = unusual_bytes(raw)  # few or none: not a count per line
        if unusual.size:
            plain[np.searchsorted(line_offsets, unusual, side="right") - 1] = False
        search = phrase_search_for(count)
        if search is not None:
            hit_lines, hit_ids = search(data, line_offsets)
        else:
            hit_lines, hit_ids = _phrases_with_find(lines.to_pylist())
        markers = np.zeros((count, _TWO_PREFIXES_ID + 1), bool)
        markers[hit_lines, hit_ids] = True
        several = markers[:, _TWO_PREFIXES_ID] | (markers[:, _OPENING_IDS].sum(axis=1) >= 2)
        candidates = np.flatnonzero(plain & ~several)
        taken = np.zeros(count, bool)
        if not candidates.size:
            return None, taken
        text = lines.take(pa.array(candidates)).cast(pa.string())
        columns, rows = parse_log4j(text, markers[candidates, :len(MARKERS)])
        if not rows.size:
            return None, taken
        chosen = candidates[rows]
        taken[chosen] = True
        columns["seq"] = pa.array(self._seqs(scanned, bounds[chosen, 0], newlines, lines_before), pa.int64())
        columns["source"] = pa.array([self.source] * len(chosen), pa.string())
        columns["cluster"] = pa.array([self.cluster] * len(chosen), pa.string())
        columns["shape"] = pa.nulls(len(chosen), pa.string())
        schema = arrow_schema("events")
        return pa.Table.from_arrays([columns[name] for name in schema.names], schema=schema), taken

    def _merge(self, fast: Any, slow: list[Any]) -> Any:
        """The column parser's and the per-line parser's events in line order (several records
        of one line in their order)."""
        import pyarrow as pa

        schema = arrow_schema("events")
        tables = [t for t in (fast, pa.Table.from_pylist(slow, schema=schema) if slow else None) if t is not None]
        if not tables:
            return schema.empty_table()
        table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        if len(tables) > 1:
            seqs = table.column("seq").to_numpy()
            table = table.take(pa.array(np.lexsort((np.arange(len(seqs)), seqs))))
        return table
