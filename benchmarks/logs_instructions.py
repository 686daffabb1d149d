"""The in-process engine's instructions, counted, for the working tree and a git revision side by
side: on this shared host wall and CPU time drift by a third within an hour, the number of
instructions a run executes (valgrind's callgrind, ``Ir``) moves by well under 1%.

    .venv/bin/python benchmarks/logs_instructions.py --log /tmp/server-1g.log.head-64000000 --vs f651803
    .venv/bin/python benchmarks/logs_instructions.py --log /tmp/server-1g.log.head-16000000 --vs f651803 --reading

``--reading`` counts the reading alone, as a Spark scan task reads its split (``readlog.SplitReader``:
the scan and the parse, no stories): after the imports, the worker daemon's ``readlog.prepare``
and a first read of 2 MB (which makes the plans of the messages met), counted on their own and
subtracted.

Each tree (the revision's ``src`` exported with ``git archive`` into a temporary folder) is
byte-compiled first, so neither run pays for compiling modules, and each run is a fresh
process: the imports (counted once on their own and subtracted), then ``analyse_local`` on the
log. Hash seed and Arrow's thread count are fixed (a thread pool's spinning is counted too).
Needs ``valgrind``; a run takes about 50x the plain one (64 MB: about 4 minutes; the two trees
run at once).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMPORTS = "import pandas, pyarrow, pyarrow.compute\nimport kafka_rebalance.pipeline.logparse.local_engine\n"
RUN = IMPORTS + """import sys
from kafka_rebalance.pipeline.logparse.layout import SyslogReference
from kafka_rebalance.pipeline.logparse.local_engine import analyse_local
analyse_local([(sys.argv[1], "bench")], syslog=SyslogReference(1765000000000))
"""
WARM = IMPORTS + """import sys
from kafka_rebalance.pipeline.logparse.layout import SyslogReference
from kafka_rebalance.pipeline.logparse.readlog import SplitReader, prepare
from kafka_rebalance.pipeline.logparse.scan import Split
prepare()
list(SplitReader(Split(sys.argv[1], 0, 2_000_000), 0, sys.argv[1], "bench", syslog=SyslogReference(1765000000000)).tables())
"""
READ = WARM + """list(SplitReader(Split(sys.argv[1]), 0, sys.argv[1], "bench", syslog=SyslogReference(1765000000000)).tables())
"""


def counted(src: Path, script: Path, *args: str) -> subprocess.Popen[str]:
    """A process counting the instructions of ``script`` on ``src``'s package."""
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONHASHSEED="0", OMP_NUM_THREADS="1")
    return subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                             str(script), *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def instructions(process: subprocess.Popen[str]) -> int:
    _, err = process.communicate()
    for line in err.splitlines():
        if "Collected :" in line:
            return int(line.split(":")[-1])
    raise SystemExit(f"callgrind printed no count: {err.strip()[-300:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, required=True, help="a log file (a slice of benchmarks/logs.py's log)")
    parser.add_argument("--vs", required=True, help="a git revision to compare the working tree with")
    parser.add_argument("--reading", action="store_true", help="count the reading alone (a Spark split), no stories")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    if not args.log.is_file():
        raise SystemExit(f"no such log: {args.log}")
    with tempfile.TemporaryDirectory(prefix="kafka-rebalance-instructions-") as work:
        base = Path(work)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.vs, "src"], capture_output=True, check=False)
        if archive.returncode:
            raise SystemExit(f"no such revision: {args.vs}")
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        trees = {"now": ROOT / "src", args.vs: base / "src"}
        for src in trees.values():
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True, stdout=subprocess.DEVNULL)
        (base / "imports.py").write_text(WARM if args.reading else IMPORTS)
        (base / "run.py").write_text(READ if args.reading else RUN)
        runs = {name: counted(src, base / "run.py", str(args.log)) for name, src in trees.items()}
        imports = {name: instructions(counted(src, base / "imports.py", str(args.log))) for name, src in trees.items()}
        totals = {name: instructions(process) for name, process in runs.items()}
    megabytes = args.log.stat().st_size / 1e6
    what = "the reading alone (a Spark split)" if args.reading else "in-process engine"
    before = "imports, warm-up" if args.reading else "imports"
    print(f"{what} on {args.log.name} ({megabytes:,.0f} MB), instructions (callgrind Ir):")
    print(f"| tree | whole run | {before} | the run itself | per MB | vs {args.vs} |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    work = {name: totals[name] - imports[name] for name in trees}
    for name in trees:
        print(f"| {name} | {totals[name] / 1e9:.3f} G | {imports[name] / 1e9:.3f} G | {work[name] / 1e9:.3f} G "
              f"| {work[name] / megabytes / 1e6:.1f} M | {work[name] / work[args.vs]:.3f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
