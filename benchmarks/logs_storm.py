"""One group's rebalance storm through the log analysis: the story of a group must cost time in
proportion to its lines, not to their square. The lines of ``logs_generator``'s many groups are
told as the story of one group (every group name replaced by ``storm``): thousands of rebalances,
failures and joins in one group, as a fail-rejoin loop left running for days writes them. Each
size is twice the one before; the last column is the growth of the CPU time against the lines'.

    .venv/bin/python benchmarks/logs_storm.py [--sizes 3MB,6MB,12MB,24MB] [--json]

The local engine (``analyse_local``: read, parse, story, tables) in this process, one run per
size; the Spark engine tells a group's story with the same code.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from logs_generator import PROFILES, TOPICS, generate, parse_size  # noqa: E402

GROUP_NAME = re.compile(r"\b(?:" + "|".join(TOPICS) + r")-(?:" + "|".join(PROFILES) + r")-\d+\b")


def storm_log(path: Path, size_bytes: int) -> None:
    """A log of ``size_bytes`` of coordinator lines only, every group named ``storm``."""
    generated = path.with_suffix(".groups.log")
    generate(generated, size_bytes, coordinator_share=1.0)
    path.write_text(GROUP_NAME.sub("storm", generated.read_text()))
    generated.unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3MB,6MB,12MB,24MB", help="log sizes, comma-separated (default 3MB,6MB,12MB,24MB)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)

    from kafka_rebalance.pipeline.logparse.layout import SyslogReference
    from kafka_rebalance.pipeline.logparse.tables import analyse_local

    rows = []
    with tempfile.TemporaryDirectory(prefix="kafka-rebalance-storm-") as scratch:
        for size in args.sizes.split(","):
            log = Path(scratch) / f"storm-{size}.log"
            storm_log(log, parse_size(size))
            started = time.process_time()
            result = analyse_local([(str(log), "default")], syslog=SyslogReference(0))
            cpu = time.process_time() - started
            rebalances = len(result.frames["rebalances"])
            rows.append({"size": size, "lines": result.lines_read, "rebalances": rebalances,
                         "member_events": len(result.frames["member_events"]), "cpu_s": round(cpu, 2)})
            if not args.json:
                print(f"{size}: {result.lines_read:,} lines, {rebalances:,} rebalances, {cpu:.2f} CPU-s", file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("| log | lines | rebalances | member events | CPU-s | growth (CPU / lines) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for before, row in zip([None, *rows], rows, strict=False):
        growth = "" if before is None else f"{(row['cpu_s'] / before['cpu_s']) / (row['lines'] / before['lines']):.2f}"
        print(f"| {row['size']} | {row['lines']:,} | {row['rebalances']:,} | {row['member_events']:,} "
              f"| {row['cpu_s']:.2f} | {growth} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
