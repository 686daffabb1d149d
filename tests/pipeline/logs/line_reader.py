"""The tests' reference reader of a split: ``scan_blocks``'s blocks handed over a line at a time,
as ``parse.parse_numbered`` takes them. The product reads blocks a column at a time
(``readlog.SplitReader``); reading the same blocks line by line, through the per-line parser, is
what it is checked against."""

from __future__ import annotations

from collections.abc import Iterator

from kafka_rebalance.pipeline.logparse.scan import (
    BLOCK_BYTES,
    ScanCounts,
    Search,
    Split,
    decode,
    first_line,
    gated_fence_before,
    passes_gate_bytes,
    scan_blocks,
)


def scan(split: Split, counts: ScanCounts | None = None, *, search: Search | None = None,
         block_bytes: int = BLOCK_BYTES) -> Iterator[tuple[int, str, bool]]:
    """``(seq, line, owned)`` in file order: every line of the split that passes the gate
    (``owned`` True), each followed by the next line that is not a code fence (for joining
    wrapped lines). That follower is ``owned`` False when it starts after the split: it may
    complete the split's last line but is not read on its own (the next split owns it).
    ``search`` (default: hyperscan when installed) and ``block_bytes`` change the speed only."""
    counts = counts if counts is not None else ScanCounts()
    want_follower = False
    for scanned in scan_blocks(split, counts, search=search, block_bytes=block_bytes):
        offset, block, size, owned_end = scanned.offset, scanned.block, scanned.size, scanned.owned_end
        if want_follower:
            follower = first_line(block, 0, size)
            if follower is not None:
                want_follower = False
                start, end = follower
                owned = start < owned_end
                gated = owned and passes_gate_bytes(block[start:end])
                if not gated and not gated_fence_before(block, start, owned_end):
                    yield offset + start, decode(block[start:end]), owned
        gated_lines = scanned.gated.tolist()
        for index, (start, end) in enumerate(gated_lines):
            yield offset + start, decode(block[start:end]), True
            follower = first_line(block, end + 1, size)
            if follower is None:
                want_follower = True
                continue
            follower_start, follower_end = follower
            next_gated = gated_lines[index + 1][0] if index + 1 < len(gated_lines) else None
            # At or after the next gated line (a gated fence was skipped): read from there.
            if next_gated is None or follower_start < next_gated:
                yield offset + follower_start, decode(block[follower_start:follower_end]), follower_start < owned_end
        scanned.wants_next = want_follower
