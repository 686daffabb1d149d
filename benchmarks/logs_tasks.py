"""The Python work of the Spark engine's logs job without Spark: one scan task over a whole log
file (``exchange.read_split``: the hyperscan gate, the parse a column at a time, the ``events``
table and the exchange's Arrow streams), then one story task over everything it sent
(``exchange.tell_received``), in this process, with the CPU seconds of each part.

    .venv/bin/python benchmarks/logs_tasks.py --log /tmp/server-200m.log [--repeat 3]
    py-spy record -r 250 -f raw -o tasks.txt -- .venv/bin/python benchmarks/logs_tasks.py --log ...

The first line gives the imports and compiled plans a worker daemon pays once per session; each
repeat gives the reading alone (``readlog.SplitReader``: scan and parse), the whole scan task and
the story task. Run under ``py-spy`` for where inside each part the time goes.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, required=True, help="a log file (a slice of benchmarks/logs.py's log)")
    parser.add_argument("--repeat", type=int, default=1, help="times to run each part (default 1)")
    args = parser.parse_args(argv)

    started = time.process_time()
    import pandas  # noqa: F401  (the worker daemon's imports: logparse/worker_daemon.py)
    import pyarrow.parquet  # noqa: F401
    import pyspark.worker  # noqa: F401

    from kafka_rebalance.pipeline.logparse import exchange, readlog, scan
    from kafka_rebalance.pipeline.logparse.layout import SyslogReference
    from kafka_rebalance.pipeline.logparse.schemas import STORY_TABLES
    from kafka_rebalance.pipeline.logparse.story import DEFAULT_STORM_RULE
    readlog.prepare()  # as the worker daemon does before it forks
    print(f"imports and compiled plans (once per session, in the worker daemon)  {time.process_time() - started:.2f} CPU-s")

    syslog = SyslogReference(int(time.time() * 1000))
    split = scan.Split(str(args.log))
    source = str(args.log)
    for attempt in range(max(1, args.repeat)):
        out = Path(tempfile.mkdtemp(prefix="kafka-rebalance-tasks-"))
        try:
            started = time.process_time()
            reader = readlog.SplitReader(split, 0, source, "default", syslog=syslog)
            records = sum(table.num_rows for table in reader.tables())
            read_s = time.process_time() - started
            started = time.process_time()
            rows = list(exchange.read_split(split, 0, "default", source, 1, str(out / "events"),
                                            syslog=syslog))
            task_s = time.process_time() - started
            started = time.process_time()
            told = list(exchange.tell_received(rows, DEFAULT_STORM_RULE, 1, str(out / "events"),
                                               {table: str(out / table) for table in STORY_TABLES}, "00000"))
            story_s = time.process_time() - started
        finally:
            shutil.rmtree(out, ignore_errors=True)
        print(f"run {attempt + 1}: {reader.counts.lines:,} lines, {records:,} records; CPU-s: "
              f"reading (scan and parse) {read_s:.2f}, scan task {task_s:.2f}, "
              f"story task {story_s:.2f} ({len(told):,} rows back)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
