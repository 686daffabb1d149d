"""Reading a byte range of a log for the few lines that can matter, without looking at the rest.

A broker log is mostly lines about segments, replicas and the controller; the lines about
groups are a few percent. Splitting a gigabyte into lines (in the JVM or in Python) and
handing them over costs far more than finding the gate phrases (``catalogue.GATE_SUBSTRINGS``)
with ``bytes.find``, which scans at memory speed. So a split is read in blocks of whole lines,
each gate phrase is searched in the block as a whole, and only the lines holding one (and no
noise phrase: ``parse.passes_gate`` on bytes) are decoded, together with the line after each of
them: a line cut in two by a terminal or a paste is joined again from that one
(``parse.parse_numbered``), exactly as when every line is read.

The Spark job runs the splits of a file in parallel (the local engine reads every line and
gives the same records). One known edge: when a terminal cut a line exactly where one split
ends, the split before joins the two halves, and the second half, if it holds a gate phrase
itself, is also read on its own by the next split (one extra record; splits are >= 128 MB). ``seq`` is the byte offset of a line's start (in the decompressed stream for
``.gz``): increasing in file order, so the story orders lines as written.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from kafka_rebalance.pipeline.logparse.catalogue import GATE_SUBSTRINGS, NOISE_SUBSTRINGS
from kafka_rebalance.pipeline.logparse.layout import is_fence

GATE_BYTES = tuple(phrase.encode() for phrase in GATE_SUBSTRINGS)
NOISE_BYTES = tuple(phrase.encode() for phrase in NOISE_SUBSTRINGS)
BLOCK_BYTES = 16 * 1024 * 1024
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


def _open(path: str) -> BinaryIO:
    if path.endswith(".gz"):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def _blocks(fh: BinaryIO, base: int) -> Iterator[tuple[int, bytes]]:
    """(offset of the block, block of whole lines; the last may lack its newline)."""
    carry = b""
    while True:
        chunk = fh.read(BLOCK_BYTES)
        if not chunk:
            if carry:
                yield base, carry
            return
        data = carry + chunk if carry else chunk
        cut = data.rfind(NEWLINE) + 1
        if cut == 0:
            carry = data
            continue
        yield base, data[:cut]
        base += cut
        carry = data[cut:]


def _gated_starts(block: bytes) -> list[int]:
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


def _line_end(block: bytes, start: int) -> int:
    end = block.find(NEWLINE, start)
    return len(block) if end == -1 else end


def _decode(line: bytes) -> str:
    return line.decode("utf-8", "replace")


def _count_lines(block: bytes) -> int:
    return block.count(NEWLINE) + (0 if block.endswith(NEWLINE) or not block else 1)


def scan(split: Split, counts: ScanCounts | None = None) -> Iterator[tuple[int, str, bool]]:
    """``(seq, line, owned)`` in file order: every line of the split that passes the gate
    (``owned`` True), each followed by the next line that is not a code fence (for joining
    wrapped lines). That follower is ``owned`` False when it starts after the split: it may
    complete the split's last line but is not read on its own (the next split owns it)."""
    counts = counts if counts is not None else ScanCounts()
    with _open(split.path) as fh:
        base = 0
        if split.start > 0:
            fh.seek(split.start - 1)
            # The line that holds byte start-1 belongs to the split before.
            head = fh.readline()
            base = split.start - 1 + len(head)
        want_follower = False
        for offset, block in _blocks(fh, base):
            owned_end = len(block)
            if split.end is not None and offset + owned_end > split.end:
                owned_end = 0 if offset >= split.end else block.find(NEWLINE, split.end - 1 - offset) + 1 or len(block)
            if want_follower:
                follower = _first_line(block, 0)
                if follower is not None:
                    want_follower = False
                    start, end = follower
                    owned = start < owned_end
                    gated = owned and _passes_gate(block[start:end])
                    if not gated:
                        yield offset + start, _decode(block[start:end]), owned
            if owned_end == 0:
                if not want_follower:
                    return
                continue
            owned_block = block[:owned_end] if owned_end < len(block) else block
            counts.lines += _count_lines(owned_block)
            gated_starts = [s for s in _gated_starts(owned_block) if _passes_gate(_line_at(owned_block, s))]
            for index, start in enumerate(gated_starts):
                end = _line_end(owned_block, start)
                yield offset + start, _decode(owned_block[start:end]), True
                follower = _first_line(block, end + 1)
                if follower is None:
                    want_follower = True
                    continue
                follower_start, follower_end = follower
                next_gated = gated_starts[index + 1] if index + 1 < len(gated_starts) else None
                if follower_start != next_gated:
                    yield offset + follower_start, _decode(block[follower_start:follower_end]), follower_start < owned_end
            if owned_end < len(block) and not want_follower:
                return


def _line_at(block: bytes, start: int) -> bytes:
    return block[start:_line_end(block, start)]


def _first_line(block: bytes, start: int) -> tuple[int, int] | None:
    """The first line at or after ``start`` that is not a code fence, or None if the block ends."""
    while start < len(block):
        end = _line_end(block, start)
        if not is_fence(_decode(block[start:end])):
            return start, end
        start = end + 1
    return None


def _passes_gate(line: bytes) -> bool:
    return any(g in line for g in GATE_BYTES) and not any(n in line for n in NOISE_BYTES)
