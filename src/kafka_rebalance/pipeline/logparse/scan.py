"""Reading a byte range of a log for the few lines that can matter, without looking at the rest.

A broker log is mostly lines about segments, replicas and the controller; the lines about
groups are a few percent. Splitting a gigabyte into lines (in the JVM or in Python) and
handing them over costs far more than finding the gate phrases (``catalogue.GATE_SUBSTRINGS``)
in the raw bytes. So a split is read in blocks of whole lines, and only the lines holding a gate
phrase and no noise phrase (``catalogue.NOISE_SUBSTRINGS``) are decoded, together with the line
after each of them: a line cut in two by a terminal or a paste is joined again from that one
(``parse.parse_numbered``), exactly as when every line is read. The lines are found by one
hyperscan pass over each block for the gate phrases, the noise phrases then looked for in
the lines found (``HYPERSCAN_SEARCH``), or without hyperscan
by one ``bytes.find`` pass per gate phrase and a test of each line found (``FIND_SEARCH``): the
same lines either way (``SEARCH`` is the first available).

The Spark job runs the splits of a file in parallel (the local engine reads a file as one
split: ``readlog.SplitReader`` reads both, block by block with ``scan_blocks``). One known edge: when a terminal cut a line exactly where one split
ends, the split before joins the two halves, and the second half, if it holds a gate phrase
itself, is also read on its own by the next split (one extra record; splits are >= 128 MB). ``seq`` is the byte offset of a line's start (in the decompressed stream for
``.gz``): increasing in file order, so the story orders lines as written. A code fence between
a gated line and its follower is skipped (the local engine skips fences too); one that itself
passes the gate is read as gated, and the line after it is read once, as its follower.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from io import BufferedIOBase
from itertools import repeat
from typing import Any

import numpy as np

from kafka_rebalance.pipeline.io import open_input
from kafka_rebalance.pipeline.logparse.catalogue import GATE_SUBSTRINGS, NOISE_SUBSTRINGS
from kafka_rebalance.pipeline.logparse.layout import is_fence

try:
    import hyperscan
except ImportError:  # an optional speed-up (the ``spark`` extra): bytes.find finds the same lines
    hyperscan = None  # type: ignore[assignment]

GATE_BYTES = tuple(phrase.encode() for phrase in GATE_SUBSTRINGS)
NOISE_BYTES = tuple(phrase.encode() for phrase in NOISE_SUBSTRINGS)
BLOCK_BYTES = 16 * 1024 * 1024
HEAD_READ_BYTES = 64 * 1024
NEWLINE = b"\n"


@dataclass(frozen=True)
class Split:
    """Lines *starting* in ``[start, end)`` of ``path`` (``end`` None: to the end of the file)."""

    path: str
    start: int = 0
    end: int | None = None


def plan_splits(files: list[tuple[str, int]], split_bytes: int) -> list[Split]:
    """(path, size) -> splits of about ``split_bytes``; a ``.gz`` file is one split (it cannot
    be entered in the middle)."""
    splits = []
    for path, size in files:
        if path.endswith(".gz") or size <= split_bytes:
            splits.append(Split(path))
            continue
        count = -(-size // split_bytes)
        step = -(-size // count)
        splits.extend(Split(path, first, min(first + step, size) if first + step < size else None)
                      for first in range(0, size, step))
    return splits


def pack_splits(splits: list[Split], sizes: dict[str, int], tasks: int) -> list[list[Split]]:
    """Splits -> at most ``tasks`` lists of about equal bytes (largest first, each to the least
    loaded list): a directory of many small files becomes a few tasks, not one task per file."""
    def length(split: Split) -> int:
        return (split.end if split.end is not None else sizes[split.path]) - split.start

    bins: list[tuple[int, int, list[Split]]] = [(0, i, []) for i in range(max(1, min(tasks, len(splits))))]
    for split in sorted(splits, key=length, reverse=True):
        load, index, members = min(bins)
        members.append(split)
        bins[index] = (load + length(split), index, members)
    return [sorted(members, key=lambda s: (s.path, s.start)) for _, _, members in sorted(bins, key=lambda b: b[1])
            if members]


class ScanCounts:
    """Lines a scan owned (counted while reading)."""

    def __init__(self) -> None:
        self.lines = 0


def _open(location: str) -> BufferedIOBase:
    """A local path, or a URL read from its store by this process (``pipeline.io``)."""
    return open_input(location, read_ahead=True)  # type: ignore[return-value]


def _start_of_next_line(fh: BufferedIOBase, start: int) -> int:
    """Position ``fh`` at the first line starting at or after ``start`` (the line holding byte
    ``start - 1`` belongs to the split before); return that offset. (A store's file has no
    ``readline``.)"""
    fh.seek(start - 1)
    position = start - 1
    while True:
        chunk = fh.read(HEAD_READ_BYTES)
        if not chunk:
            return position
        newline = chunk.find(NEWLINE)
        if newline != -1:
            position += newline + 1
            fh.seek(position)
            return position
        position += len(chunk)


def _read_block(fh: BufferedIOBase, buffer: bytearray, filled: int, block_bytes: int) -> int:
    """Reads ``block_bytes`` more into ``buffer`` after its first ``filled`` (fewer if the stream
    ends), growing it as it fills: a small file never gets a 16 MB buffer. The new ``filled``."""
    end = filled + block_bytes
    while filled < end:
        if filled == len(buffer):
            buffer.extend(bytes(min(max(len(buffer), 1 << 16), end - filled)))
        with memoryview(buffer) as view:
            read = fh.readinto(view[filled:min(end, len(buffer))])
        if not read:
            break
        filled += read
    return filled


def _blocks(fh: BufferedIOBase, base: int, block_bytes: int) -> Iterator[tuple[int, bytearray, int]]:
    """(offset of the block, buffer, size): ``buffer[:size]`` is a block of whole lines (the last
    may lack its newline), ending at the last newline of what was read so far in reads of
    ``block_bytes``. One buffer is filled again for every block: copying 16 MB twice a block
    cost more than finding the gated lines in it."""
    buffer = bytearray()
    carried = 0  # the start of a line, moved to the front of the buffer
    while True:
        filled = _read_block(fh, buffer, carried, block_bytes)
        if filled == carried:
            if carried:
                yield base, buffer, carried
            return
        cut = buffer.rfind(NEWLINE, 0, filled) + 1
        if cut == 0:
            carried = filled
            continue
        yield base, buffer, cut
        base += cut
        buffer[:filled - cut] = buffer[cut:filled]
        carried = filled - cut


# A search finds, in ``block[:size]`` (whole lines), the lines that pass the gate (a gate phrase
# and no noise phrase) among those starting before ``stop``, as rows of (start, end) in order,
# end at the newline.
Block = bytes | bytearray
Search = Callable[[Block, int, int], np.ndarray]


def line_bounds(pairs: list[tuple[int, int]] | np.ndarray) -> np.ndarray:
    """(start, end) pairs as a search gives them: an int64 array of one row each."""
    return np.asarray(pairs, np.int64).reshape(-1, 2)


NO_LINES = line_bounds([])


def find_gated_lines(block: Block, size: int, stop: int) -> np.ndarray:
    """The search without hyperscan: one ``bytes.find`` pass per gate phrase, then each line
    found is tested for every phrase."""
    owned = block[:stop]
    return line_bounds([(start, _line_end(owned, start, stop)) for start in _gated_starts(owned)
                        if passes_gate_bytes(owned[start:_line_end(owned, start, stop)])])


def _gated_starts(block: Block) -> list[int]:
    """Starts of the lines holding a gate phrase (noise lines included; dropped by the caller)."""
    starts: set[int] = set()
    for phrase in GATE_BYTES:
        at = block.find(phrase)
        while at != -1:
            start = block.rfind(NEWLINE, 0, at) + 1
            starts.add(start)
            end = block.find(NEWLINE, at)
            if end == -1:
                break
            at = block.find(phrase, end)
    return sorted(starts)


def cut_lines(block: Block, size: int, bounds: np.ndarray) -> Any:
    """The lines at ``bounds`` (rows of start, end) of ``block[:size]``, each with its newline,
    as one Arrow binary array: cut out together by one ``take``, no Python per line."""
    import pyarrow as pa

    count = len(bounds)
    offsets = np.empty(2 * count, np.int32)
    offsets[0::2] = bounds[:, 0]
    offsets[1::2] = np.minimum(bounds[:, 1] + 1, size)  # with its newline: no phrase spans two lines
    # The spans between the lines are elements too (odd ones), left out by the take.
    spans = pa.Array.from_buffers(pa.binary(), 2 * count - 1, [None, pa.py_buffer(offsets), pa.py_buffer(block)])
    return spans.take(pa.array(np.arange(0, 2 * count, 2)))


def line_data(lines: Any) -> tuple[memoryview, np.ndarray]:
    """An Arrow binary array's bytes (its lines back to back) and where each line starts in
    them (one more: the end of the last)."""
    offsets = np.frombuffer(lines.buffers()[1], np.int32, count=len(lines) + 1, offset=lines.offset * 4)
    return memoryview(lines.buffers()[2])[offsets[0]:offsets[-1]], (offsets - offsets[0]).astype(np.int64)


def _rest_of_line_after(phrases: tuple[bytes, ...]) -> bytes:
    """A hyperscan expression matching from any of ``phrases`` to the end of its line: with one
    report per pattern and end offset, each line holding one is reported once, at its end."""
    def literal(phrase: bytes) -> bytes:
        return b"".join(bytes([c]) if chr(c).isalnum() else b"\\x%02x" % c for c in phrase)
    return b"(?:" + b"|".join(literal(p) for p in phrases) + b")[^\n]*$"


def _on_end(_pattern: int, _start: int, end: int, _flags: int, append: Any) -> None:
    append(end)


class HyperscanSearch:
    """The gate phrases found in one hyperscan pass over the block, each line holding one
    reported once at its end (in the order of the ends); a line passes the gate when it holds no
    noise phrase either. The noise phrases are looked for in the gated lines alone, cut out of the
    block together (``cut_lines``), by a second pass of their own: in the first pass every noise
    line of the block was reported, and the whole search took a fifth longer; a ``bytes.find``
    per line and phrase took twice as long as the second pass (``benchmarks/logs_gate.py``).
    Code fences are not looked for here: the few lines read one by one test their follower
    (``first_line``), and a fence pattern in this pass cost a tenth of it for every byte."""

    def __init__(self) -> None:
        assert hyperscan is not None
        self.database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self.database.compile(expressions=[_rest_of_line_after(GATE_BYTES)], ids=[0], elements=1,
                              flags=[hyperscan.HS_FLAG_MULTILINE])
        self.noise = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self.noise.compile(expressions=[_rest_of_line_after(NOISE_BYTES)], ids=[0], elements=1,
                           flags=[hyperscan.HS_FLAG_MULTILINE])

    def __call__(self, block: Block, size: int, stop: int) -> np.ndarray:
        assert hyperscan is not None
        ends: list[int] = []
        with memoryview(block) as view, view[:size] as lines:
            # A scratch per call: scans in other threads never share one.
            self.database.scan(lines,  # type: ignore[type-var]  # any buffer: the stubs say bytes
                               match_event_handler=_on_end, context=ends.append,
                               scratch=hyperscan.Scratch(self.database))
        gated = np.sort(np.array(ends, np.int64))
        if stop < size:
            gated = gated[:int(np.searchsorted(gated, stop))]
        if not gated.size:
            return NO_LINES
        # Each line starts after the newline before its end (``rfind`` mapped: no Python loop).
        starts = np.fromiter(map(block.rfind, repeat(NEWLINE), repeat(0), gated.tolist()), np.int64, gated.size)
        bounds = np.stack([starts + 1, gated], axis=1)
        passing: np.ndarray = bounds[~self._noisy(block, size, bounds)]
        return passing

    def _noisy(self, block: Block, size: int, bounds: np.ndarray) -> np.ndarray:
        """Whether each line at ``bounds`` holds a noise phrase."""
        assert hyperscan is not None
        data, offsets = line_data(cut_lines(block, size, bounds))
        hits: list[int] = []
        self.noise.scan(data,  # type: ignore[type-var]  # any buffer: the stubs say bytes
                        match_event_handler=_on_end, context=hits.append, scratch=hyperscan.Scratch(self.noise))
        noisy = np.zeros(len(bounds), bool)
        noisy[np.searchsorted(offsets, np.array(hits, np.int64) - 1, side="right") - 1] = True  # a hit's last byte
        return noisy


def _hyperscan_search() -> Search | None:
    if hyperscan is None:
        return None
    try:
        return HyperscanSearch()
    except hyperscan.error:  # a platform vectorscan does not run on: bytes.find does the same
        return None


FIND_SEARCH: Search = find_gated_lines
HYPERSCAN_SEARCH: Search | None = _hyperscan_search()
SEARCH: Search = HYPERSCAN_SEARCH or FIND_SEARCH


def _line_end(block: Block, start: int, size: int) -> int:
    end = block.find(NEWLINE, start, size)
    return size if end == -1 else end


def count_newlines(block: Block, end: int) -> int:
    """Newlines in ``block[:end]``: numpy compares and counts 2-4 times as fast as ``bytes.count``
    (``benchmarks/logs_gate.py`` times the two, and a compare of 256 KB at a time, no faster on a
    16 MB block)."""
    return int(np.count_nonzero(np.frombuffer(block, np.uint8, count=end) == NEWLINE[0]))


def _count_lines(block: Block, end: int, newlines: np.ndarray | None) -> int:
    """Lines in ``block[:end]`` (``end`` > 0; the last may lack its newline), from the block's
    ``newlines`` when known."""
    ended = count_newlines(block, end) if newlines is None else int(np.searchsorted(newlines, end))
    return ended + (0 if block[end - 1] == NEWLINE[0] else 1)


def decode(line: Block) -> str:
    return line.decode("utf-8", "replace")


@dataclass
class ScannedBlock:
    """One block of a split as ``scan_blocks`` found it: ``block[:size]`` is whole lines starting
    at byte ``offset`` of the input (the buffer is filled again for the next block), ``gated``
    the (start, end) rows of the split's lines in it that pass the gate, ``newlines`` where the
    block's newlines are (when asked for: line numbers). A consumer that still wants the line
    after the last gated line sets ``wants_next`` before asking for the next block."""

    offset: int
    block: Block
    size: int
    owned_end: int
    gated: np.ndarray
    newlines: np.ndarray | None = None
    wants_next: bool = False


def scan_blocks(split: Split, counts: ScanCounts, *, search: Search | None = None, block_bytes: int = BLOCK_BYTES,
                data: bytes | None = None, newlines: bool = False) -> Iterator[ScannedBlock]:
    """The blocks of ``split`` (or of ``data``, a paste's bytes) with their gated lines, and
    where their newlines are if ``newlines``: the blocks after the split's end only while the
    consumer wants a line from them."""
    search = search if search is not None else SEARCH
    with _open(split.path) if data is None else io.BytesIO(data) as fh:
        base = _start_of_next_line(fh, split.start) if split.start > 0 else 0
        for offset, block, size in _blocks(fh, base, block_bytes):
            owned_end = size
            if split.end is not None and offset + size > split.end:
                owned_end = 0 if offset >= split.end else block.find(NEWLINE, split.end - 1 - offset, size) + 1 or size
            gated = NO_LINES
            positions = np.flatnonzero(np.frombuffer(block, np.uint8, count=size) == NEWLINE[0]) if newlines else None
            if owned_end:
                counts.lines += _count_lines(block, owned_end, positions)
                gated = search(block, size, owned_end)
            scanned = ScannedBlock(offset, block, size, owned_end, gated, positions)
            yield scanned
            if owned_end < size and not scanned.wants_next:
                return


def first_line(block: Block, start: int, size: int) -> tuple[int, int] | None:
    """The first line of ``block[:size]`` at or after ``start`` that is not a code fence, or None
    if the block ends."""
    while start < size:
        end = _line_end(block, start, size)
        if not is_fence(decode(block[start:end])):
            return start, end
        start = end + 1
    return None


def gated_fence_before(block: Block, follower_start: int, owned_end: int) -> bool:
    """Whether one of the fences that start the block (before ``follower_start``, owned by this
    split) passes the gate: then it is read as gated, and the follower after it."""
    start = 0
    while start < min(follower_start, owned_end):
        end = _line_end(block, start, follower_start)
        if passes_gate_bytes(block[start:end]):
            return True
        start = end + 1
    return False


def passes_gate_bytes(line: Block) -> bool:
    return any(g in line for g in GATE_BYTES) and not any(n in line for n in NOISE_BYTES)
