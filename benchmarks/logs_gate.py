"""The gate of ``kafka-rebalance logs`` (which lines hold a gate phrase and no noise phrase,
``catalogue.GATE_SUBSTRINGS`` and ``NOISE_SUBSTRINGS``) computed by every vectorised kernel at
hand, on the same bytes: what the cheapest way to find the lines worth reading costs per MB, the
part of reading that no parser change removes.

    .venv/bin/python benchmarks/logs_gate.py --log /tmp/kafka-rebalance-bench-1GB-0.03.log [--head 64MB] [--repeat 3]

Kernels: the product's hyperscan pass (``scan.HYPERSCAN_SEARCH``: the gate phrases, each line
reported once at its end, then the noise phrases in the lines found), the same without the noise phrases (their share), its
``bytes.find`` fallback (``scan.FIND_SEARCH``), and on an Arrow array of the lines (cutting the
lines counted in): RE2 (``pyarrow.compute.match_substring_regex``, one alternation per phrase
list), Arrow's literal search (``pyarrow.compute.match_substring``, a call per phrase), and
polars' Aho-Corasick (``str.contains_any``) when polars is importable (it is no dependency).
Each kernel must find the same lines; the table gives its best time of ``--repeat`` and MB/s.
A second table times the other pass over every byte, the count of the lines read, block by block
as a scan reads them: numpy over the block (the product, ``scan.count_newlines``), numpy 256 KB
at a time (its comparisons kept in cache), and ``bytes.count``.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))

from logs_generator import parse_size  # noqa: E402

from kafka_rebalance.pipeline.logparse.catalogue import GATE_SUBSTRINGS, NOISE_SUBSTRINGS  # noqa: E402
from kafka_rebalance.pipeline.logparse.scan import (  # noqa: E402
    BLOCK_BYTES,
    FIND_SEARCH,
    HYPERSCAN_SEARCH,
    count_newlines,
)


def line_array(data: bytes) -> pa.Array:
    """The lines of ``data`` (each without its newline) as one Arrow string array, no copy."""
    newlines = np.flatnonzero(np.frombuffer(data, np.uint8) == 10)
    offsets = np.empty(len(newlines) + 1, np.int32)
    offsets[0] = 0
    offsets[1:] = newlines + 1
    return pa.Array.from_buffers(pa.string(), len(newlines), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def product(search: Callable[..., Any]) -> Callable[[bytes], int]:
    def gate(data: bytes) -> int:
        gated = search(data, len(data), len(data))
        return len(gated)
    return gate


def hyperscan_gate_only(data: bytes) -> int:
    """The product's gate expression alone: every line holding a gate phrase, noise lines kept."""
    import hyperscan

    def literal(phrase: str) -> bytes:
        return b"".join(bytes([c]) if chr(c).isalnum() else b"\\x%02x" % c for c in phrase.encode())
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    expression = b"(?:" + b"|".join(literal(p) for p in GATE_SUBSTRINGS) + b")[^\n]*$"
    database.compile(expressions=[expression], ids=[0], elements=1, flags=[hyperscan.HS_FLAG_MULTILINE])
    hits: list[int] = []
    database.scan(data, match_event_handler=lambda *args: hits.append(args[2]), scratch=hyperscan.Scratch(database))
    return len(hits)


def re2(data: bytes) -> int:
    lines = line_array(data)
    gate = pc.match_substring_regex(lines, "|".join(re.escape(p) for p in GATE_SUBSTRINGS))
    noise = pc.match_substring_regex(lines, "|".join(re.escape(p) for p in NOISE_SUBSTRINGS))
    return int(pc.sum(pc.and_not(gate, noise)).as_py() or 0)


def arrow_literals(data: bytes) -> int:
    lines = line_array(data)

    def any_of(phrases: tuple[str, ...]) -> pa.Array:
        found = pc.match_substring(lines, phrases[0])
        for phrase in phrases[1:]:
            found = pc.or_(found, pc.match_substring(lines, phrase))
        return found
    return int(pc.sum(pc.and_not(any_of(GATE_SUBSTRINGS), any_of(NOISE_SUBSTRINGS))).as_py() or 0)


def polars_kernel() -> Callable[[bytes], int] | None:
    try:
        import polars as pl
    except ImportError:
        return None

    def gate(data: bytes) -> int:
        lines = pl.from_arrow(line_array(data))
        kept = lines.str.contains_any(list(GATE_SUBSTRINGS)) & ~lines.str.contains_any(list(NOISE_SUBSTRINGS))
        return int(kept.sum())
    return gate


def by_block(count: Callable[[bytes, memoryview, int, int], int]) -> Callable[[bytes], int]:
    """A line count over ``data`` one scan block (``scan.BLOCK_BYTES``) at a time."""
    def counted(data: bytes) -> int:
        with memoryview(data) as view:
            return sum(count(data, view, first, min(first + BLOCK_BYTES, len(data)))
                       for first in range(0, len(data), BLOCK_BYTES))
    return counted


def sliced_count(view: memoryview, size: int) -> int:
    """Newlines in ``view[:size]``, compared 256 KB at a time into one buffer that stays in cache."""
    data = np.frombuffer(view, np.uint8, count=size)
    equal = np.empty(min(size, SLICE_BYTES), bool)
    count = 0
    for first in range(0, size, SLICE_BYTES):
        part = data[first:first + SLICE_BYTES]
        np.equal(part, 10, out=equal[:len(part)])
        count += int(np.count_nonzero(equal[:len(part)]))
    return count


SLICE_BYTES = 256 * 1024
LINE_COUNTS: list[tuple[str, Callable[[bytes], int]]] = [
    ("numpy over the block (the product)",
     by_block(lambda data, view, first, last: count_newlines(view[first:last], last - first))),
    ("numpy, 256 KB at a time", by_block(lambda data, view, first, last: sliced_count(view[first:last], last - first))),
    ("bytes.count", by_block(lambda data, view, first, last: data.count(b"\n", first, last))),
]


def timed(kernel: Callable[[bytes], int], data: bytes, repeat: int) -> tuple[float, int]:
    best, result = float("inf"), 0
    for _ in range(max(1, repeat)):
        started = time.perf_counter()
        result = kernel(data)
        best = min(best, time.perf_counter() - started)
    return best, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, required=True, help="a log file (benchmarks/logs.py's, for one)")
    parser.add_argument("--head", default="64MB", help="bytes of the log to read (default 64MB)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    with args.log.open("rb") as fh:
        data = fh.read(parse_size(args.head))
    data = bytearray(data[: data.rfind(b"\n") + 1])  # the product reads into a bytearray
    megabytes = len(data) / 1e6
    kernels: list[tuple[str, Callable[[bytes], int] | None]] = [
        ("hyperscan: gate, then noise (the product)", product(HYPERSCAN_SEARCH) if HYPERSCAN_SEARCH else None),
        ("hyperscan: gate phrases only (noise kept)", hyperscan_gate_only if HYPERSCAN_SEARCH else None),
        ("bytes.find per phrase (the fallback)", product(FIND_SEARCH)),
        ("RE2 on the lines (pyarrow)", re2),
        ("Arrow literal search per phrase", arrow_literals),
        ("polars str.contains_any (Aho-Corasick)", polars_kernel()),
    ]
    lines = int(np.count_nonzero(np.frombuffer(data, np.uint8) == 10))
    print(f"{args.log.name}: first {megabytes:,.0f} MB, {lines:,} lines\n")
    print(f"| {'kernel':<46} | lines kept | best s | MB/s |")
    print(f"| {'-' * 46} | ---: | ---: | ---: |")
    for name, kernel in kernels:
        if kernel is None:
            print(f"| {name:<46} | not installed | | |")
            continue
        best, kept = timed(kernel, data, args.repeat)
        print(f"| {name:<46} | {kept:,} | {best:.3f} | {megabytes / best:,.0f} |")
    print(f"\n| {'line count, 16 MB blocks':<46} | lines | best s | MB/s |")
    print(f"| {'-' * 46} | ---: | ---: | ---: |")
    for name, count in LINE_COUNTS:
        best, counted = timed(count, data, args.repeat)
        print(f"| {name:<46} | {counted:,} | {best:.3f} | {megabytes / best:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
