"""Where the in-process engine's stories spend their time, against what its goal (150 MB/s on
one core, ``benchmarks/logs.py --local-only``) leaves them: the first ``--head`` bytes of a log
read as the engine reads them, then every group's story told ``--repeat`` times
(``story.tell``, the best CPU time per group), and the table by events per group.

    .venv/bin/python benchmarks/logs_story.py --log /tmp/kafka-rebalance-bench-1GB-0.03.log \\
        [--head 64MB] [--repeat 5] [--goal 150]

A group's story costs a fixed part (its rebalances' rows, causes, storms and findings, and the
state of a story) and a part per event: the rows of small groups show the fixed part, the large
ones the part per event. The last lines set them against the budget: the goal's time for the
input, less the reading, the events made into dicts and the tables, per group.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from itertools import groupby
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from logs import log_head  # noqa: E402
from logs_generator import parse_size  # noqa: E402

# Events per group: the rows of the table.
BUCKETS = ((1, 3), (4, 5), (6, 9), (10, 19), (20, 49), (50, None))


def best_cpu(work, repeat: int) -> tuple[float, object]:
    """The best CPU seconds of ``repeat`` calls of ``work``, and its last answer."""
    best, answer = float("inf"), None
    for _ in range(max(1, repeat)):
        started = time.process_time()
        answer = work()
        best = min(best, time.process_time() - started)
    return best, answer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, required=True, help="a log file (benchmarks/logs.py's, for one)")
    parser.add_argument("--head", default="64MB", help="bytes of the log to read (default 64MB)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each part; the best is kept (default 5)")
    parser.add_argument("--goal", type=float, default=150.0, help="the goal in MB/s (default 150)")
    args = parser.parse_args(argv)

    import numpy as np
    import pyarrow as pa

    from kafka_rebalance.pipeline.logparse.layout import SyslogReference
    from kafka_rebalance.pipeline.logparse.local_engine import story_input
    from kafka_rebalance.pipeline.logparse.readlog import SplitReader
    from kafka_rebalance.pipeline.logparse.scan import Split
    from kafka_rebalance.pipeline.logparse.schemas import STORY_TABLES, story_table
    from kafka_rebalance.pipeline.logparse.story import DEFAULT_STORM_RULE, story_events, story_tables, tell

    head_bytes = parse_size(args.head)
    head = str(log_head(args.log, head_bytes))
    syslog = SyslogReference(int(time.time() * 1000))

    def read() -> list:
        reader = SplitReader(Split(head), 0, head, head, syslog=syslog, line_numbers=True)
        tables = list(reader.tables())
        return [tables, reader.facts.moves]

    read_s, (tables, moves) = best_cpu(read, args.repeat)
    told = story_input(pa.concat_tables(tables))
    dicts_s, events = best_cpu(lambda: story_events(told), args.repeat)
    keys = list(zip(told.column("cluster").to_pylist(), told.column("group").to_pylist(), strict=True))
    groups, at = [], 0
    for key, run in groupby(keys):
        size = sum(1 for _ in run)
        groups.append((key, events[at:at + size]))
        at += size

    gc.disable()  # as story.tell_sorted runs the stories
    best = [float("inf")] * len(groups)
    told_rows: list = []
    for attempt in range(max(1, args.repeat)):
        for index, ((cluster, group), group_events) in enumerate(groups):
            started = time.process_time()
            rows = tell(cluster, group, group_events, moves, DEFAULT_STORM_RULE)
            best[index] = min(best[index], time.process_time() - started)
            if attempt == 0:
                told_rows.append(rows)
    gc.enable()

    def build_tables() -> None:
        rows: dict[str, list] = {table: [] for table in STORY_TABLES}
        for story in told_rows:
            for table, table_rows in story_tables(story):
                rows[table].extend(table_rows)
        for table in STORY_TABLES:
            story_table(table, rows[table])

    tables_s, _ = best_cpu(build_tables, args.repeat)

    megabytes = head_bytes / 1e6
    print(f"stories of the first {megabytes:,.0f} MB of {args.log.name}: {len(events):,} events in "
          f"{len(groups):,} groups (CPU time, best of {args.repeat})")
    print()
    print("| events per group | groups | events | stories (ms) | per group (us, median) | per event (us) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for low, high in BUCKETS:
        chosen = [(len(group_events), spent) for (_, group_events), spent in zip(groups, best, strict=True)
                  if len(group_events) >= low and (high is None or len(group_events) <= high)]
        if not chosen:
            continue
        count = sum(size for size, _ in chosen)
        spent = sum(seconds for _, seconds in chosen)
        label = f"{low}-{high}" if high is not None else f"{low} or more"
        print(f"| {label} | {len(chosen):,} | {count:,} | {spent * 1e3:.1f} | "
              f"{statistics.median(seconds for _, seconds in chosen) * 1e6:.0f} | {spent / count * 1e6:.1f} |")
    stories_s = sum(best)
    print(f"| all | {len(groups):,} | {len(events):,} | {stories_s * 1e3:.1f} | "
          f"{statistics.median(best) * 1e6:.0f} | {stories_s / len(events) * 1e6:.1f} |")
    slope, fixed = np.polyfit([len(group_events) for _, group_events in groups], best, 1)
    print(f"\na story costs about {fixed * 1e6:.0f} us per group plus {slope * 1e6:.1f} us per event "
          "(a least-squares line over the groups)")
    goal_s = megabytes / args.goal
    total = read_s + dicts_s + stories_s + tables_s
    left = goal_s - read_s - dicts_s - tables_s
    print(f"reading {read_s:.3f} s, events to dicts {dicts_s:.3f} s, stories {stories_s:.3f} s, "
          f"tables {tables_s:.3f} s: {total:.3f} CPU-s = {megabytes / total:,.0f} MB/s")
    print(f"the goal, {args.goal:g} MB/s, is {goal_s:.3f} s: after the reading, the dicts and the tables "
          f"{left * 1e3:.0f} ms are left for {len(groups):,} stories of {len(events) / len(groups):.1f} events "
          f"on average, {left / len(groups) * 1e6:.0f} us each (today {stories_s / len(groups) * 1e6:.0f} us, "
          f"{stories_s / left:.1f}x that)"
          if left > 0 else f"the goal, {args.goal:g} MB/s, is {goal_s:.3f} s: the reading, the dicts and the "
          f"tables alone take {goal_s - left:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
