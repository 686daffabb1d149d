"""Log forensics, speed and latency: a realistic broker log through the Spark engine side by
side with ``grep -c`` on the same file, and a 30-line paste from stdin end to end (the local
engine that ``auto`` picks for it, and the Spark engine, with where its seconds go).

    .venv/bin/python benchmarks/logs.py [--size 1GB] [--log /tmp/server-1g.log] [--master 'local[2]']
                                        [--coordinator-share 0.03] [--local-too] [--repeat 2] [--no-paste]
                                        [--s3] [--object-size 128MB] [--paste-only] [--timeline]
                                        [--local-only [--head 64MB]] [--command-only [--vs-src DIR]]

``--command-only`` times the whole ``logs`` command instead, each run a fresh process (its Python
start and its Spark session's start included: what a user waits for), ``--vs-src`` another
tree's ``src`` in turn with this one.

``--timeline`` has Spark write its event log and tells, for each run, where its seconds went:
until the first task starts (the first run: the Python worker daemon starting), the scan tasks,
the story tasks (each task's own seconds), and after the job (the driver's report).

``--s3`` also reads the log from an S3 server (moto's, started here on 127.0.0.1, stopped at the
end) with ``--out`` on it, side by side with the same files on the local disk: the log cut into
objects of ``--object-size`` (as a broker's rotated files; moto reads a whole object to answer
any ranged GET, so one object of the whole log would measure moto, not the reader).

The generated log is kept (and reused when it already has the requested size and share), so a
second run measures the analysis alone. Coordinator lines are ``--coordinator-share`` of the
lines (a few percent on a real broker); the rest is a broker's usual INFO/WARN output.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from logs_generator import generate, parse_size  # noqa: E402
from spark_commands import command_run as spark_command_seconds  # noqa: E402

PASTE_LINES = 30
CLI = "from kafka_rebalance.cli import main; main()"


def tree_cpu_seconds() -> float:
    """CPU seconds (user + system) used so far by this process and every live descendant (the
    JVM, Spark's Python workers), from /proc: a figure that, unlike wall time, does not depend
    on what else the shared cores are doing."""
    return sum(tree_cpu_by_kind().values())


def tree_cpu_by_kind() -> dict[str, float]:
    """``tree_cpu_seconds`` per kind of process: this driver, the JVM, and the rest (Spark's
    Python workers and their daemon; the S3 server when there is one)."""
    ticks = os.sysconf("SC_CLK_TCK")
    used = {"driver": 0.0, "JVM": 0.0, "Python workers": 0.0}
    for pid in _tree_pids():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        kind = ("driver" if pid == os.getpid() else "JVM" if b"java" in command.split(b"\0")[0]
                else "Python workers")
        used[kind] += (int(fields[11]) + int(fields[12])) / ticks
    return used


def tree_peak_memory() -> dict[str, int]:
    """Peak resident memory (VmHWM, bytes) of the largest live process of each kind in this
    process tree: this driver, the JVM, Spark's Python workers (forked by the daemon the JVM
    started, or by the standby that took its place: ``pipeline.standby``)."""
    peaks: dict[str, int] = {}
    for pid in _tree_pids():
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        kind = ("driver (Python)" if pid == os.getpid() else "JVM" if b"java" in command.split(b"\0")[0]
                else "Python worker" if b"pyspark" in command or b"pipeline.standby" in command else None)
        for line in status.splitlines():
            if kind and line.startswith("VmHWM:"):
                peaks[kind] = max(peaks.get(kind, 0), int(line.split()[1]) * 1024)
    return peaks


def _tree_pids() -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    mine = {os.getpid()}
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in mine and pid not in mine:
                mine.add(pid)
                grew = True
    return mine


def grep_seconds(log: Path) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run(["grep", "-c", "GroupCoordinator", str(log)], capture_output=True, text=True, check=False)
    return time.perf_counter() - started, int(done.stdout.strip() or 0)


def make_paste(log: Path, lines: int = PASTE_LINES) -> str:
    """``lines`` consecutive lines of the log around its first rebalance, as a user would paste."""
    window: list[str] = []
    with log.open(encoding="utf-8") as fh:
        for line in fh:
            window.append(line)
            if len(window) > lines:
                window.pop(0)
            if "Assignment received from leader" in line and len(window) == lines:
                break
    return "".join(window)


def paste_run(paste: str, engine: str, master: str) -> tuple[float, dict, float]:
    """A paste on stdin, end to end in a fresh process (tables, the answer, report.html): wall
    seconds, the answer, and the CPU seconds of the process tree (the JVM's too)."""
    out = Path(tempfile.mkdtemp(prefix="kafka-rebalance-paste-"))
    args = [sys.executable, "-c", CLI, "logs", "-", "--json", "--out", str(out), "--engine", engine]
    if engine == "spark":
        args += ["--master", master]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(args, input=paste, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(out, ignore_errors=True)
    if done.returncode != 0:
        raise SystemExit(f"paste run failed ({engine}): {done.stderr.strip()[-500:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return seconds, json.loads(done.stdout), cpu


def paste_only(log: Path, repeat: int) -> int:
    """``--paste-only``: the paste path alone, ``repeat`` times (the local engine that ``auto``
    picks for it)."""
    paste = make_paste(log)
    runs = [paste_run(paste, "auto", "local[2]") for _ in range(max(1, repeat))]
    best = min(runs, key=lambda r: r[0])
    print(f"{PASTE_LINES}-line paste on stdin, auto ({best[1]['engine']}), {best[1]['rebalances']} rebalance(s): "
          f"best {best[0]:.2f} s end to end, {best[2]:.2f} CPU-s; runs "
          f"{', '.join(f'{r[0]:.2f} s/{r[2]:.2f} CPU-s' for r in runs)}; load average {os.getloadavg()[0]:.2f}")
    return 0


def command_run(log: Path, master: str, source: str | None) -> float:
    """The whole ``logs`` command on ``log`` on Spark, in a fresh process (the Python start, the
    session's start, the job, the report): its wall seconds. ``source``: another tree's ``src``
    to run instead (by ``PYTHONPATH``)."""
    return spark_command_seconds(["logs", str(log), "--engine", "spark"], master, source)


def command_only(log: Path, master: str, repeat: int, versus: str | None) -> int:
    """``--command-only``: the whole command, ``repeat`` times; with ``--vs-src``, that tree's in
    turn (now, then, then, now, ...: the host's drift falls on both alike)."""
    import statistics

    rows: list[tuple[int, float, float, float | None]] = []
    for number in range(max(1, repeat)):
        grep_s, _ = grep_seconds(log)
        if versus is None:
            rows.append((number + 1, grep_s, command_run(log, master, None), None))
            continue
        order = [None, versus] if number % 2 == 0 else [versus, None]
        timed = {source: command_run(log, master, source) for source in order}
        rows.append((number + 1, grep_s, timed[None], timed[versus]))
    print(f"the logs command on {log.name} ({log.stat().st_size / 1e6:,.0f} MB), --engine spark --master {master}, "
          f"whole process")
    print(f"{'run':>3}  {'grep':>6}  {'now':>7}  {'x grep':>6}" + (f"  {'--vs-src':>8}  {'now/vs':>6}" if versus else ""))
    for number, grep_s, now, then in rows:
        line = f"{number:>3}  {grep_s:>5.2f}s  {now:>6.2f}s  {now / grep_s:>5.1f}x"
        print(line + (f"  {then:>7.2f}s  {now / then:>5.2f}x" if then is not None else ""))
    nows = [row[2] for row in rows]
    summary = f"median {statistics.median(nows):.2f} s"
    if versus:
        thens = [row[3] for row in rows if row[3] is not None]
        ratios = [row[2] / row[3] for row in rows if row[3] is not None]
        summary += f", --vs-src {statistics.median(thens):.2f} s, now/vs {statistics.median(ratios):.2f}x (median of pairs)"
    print(f"{summary}; load average {os.getloadavg()[0]:.2f}")
    return 0


def log_head(log: Path, head_bytes: int) -> Path:
    """The first ``head_bytes`` of ``log`` as a file of their own in the temp dir (kept, reused)."""
    head = Path(tempfile.gettempdir()) / f"{log.name}.head-{head_bytes}"
    if not head.exists() or head.stat().st_size != head_bytes:
        with log.open("rb") as source, head.open("wb") as target:
            target.write(source.read(head_bytes))
    return head


def local_only(log: Path, head_bytes: int, repeat: int) -> int:
    """``--local-only``: the in-process engine on the first ``head_bytes`` of the log (one core,
    this process: wall and CPU seconds, the best of ``repeat``), and what reading one Spark split
    of that size costs a scan task (``readlog.SplitReader``: scan and parse, no story)."""
    from kafka_rebalance.pipeline.logparse.layout import SyslogReference
    from kafka_rebalance.pipeline.logparse.local_engine import analyse_local
    from kafka_rebalance.pipeline.logparse.scan import Split

    try:
        from kafka_rebalance.pipeline.logparse.readlog import SplitReader
    except ImportError:  # a version before the one reading path of both engines: the engine alone
        SplitReader = None  # noqa: N806

    head = log_head(log, head_bytes)
    megabytes = head_bytes / 1e6
    syslog = SyslogReference(int(time.time() * 1000))
    runs, reads = [], []
    for _ in range(max(1, repeat)):
        started, cpu = time.perf_counter(), time.process_time()
        result = analyse_local([(str(head), str(head))], syslog=syslog)
        runs.append((time.perf_counter() - started, time.process_time() - cpu))
        if SplitReader is not None:
            started, cpu = time.perf_counter(), time.process_time()
            reader = SplitReader(Split(str(head)), 0, str(head), str(head), syslog=syslog)
            events = sum(table.num_rows for table in reader.tables())
            reads.append((time.perf_counter() - started, time.process_time() - cpu))
    wall, cpu = min(runs)
    print(f"in-process engine, first {megabytes:,.0f} MB of {log.name} ({result.lines_read:,} lines, "
          f"{result.events:,} events, {result.groups:,} groups): best {wall:.2f} s = {megabytes / wall:,.0f} MB/s, "
          f"{cpu:.2f} CPU-s = {megabytes / cpu:,.0f} MB per CPU-second")
    if reads:
        read_wall, read_cpu = min(reads)
        print(f"  reading it as one Spark split (scan + parse, {events:,} events): best {read_wall:.2f} s, "
              f"{read_cpu:.2f} CPU-s = {read_cpu * 128 / megabytes:.2f} CPU-s per 128 MB")
    print(f"  runs: {', '.join(f'{w:.2f} s/{c:.2f} CPU-s' for w, c in runs)}; load average {os.getloadavg()[0]:.2f}")
    return 0


S3_BUCKET = "bench"


def timeline_rows(events_dir: Path, spans: list[tuple[float, float]]) -> list[tuple[str, str]]:
    """Where each run's seconds went, from Spark's event log (``spans``: each run's start and
    end; the logs job is the one job of a run, its first stage the scan tasks, its second the
    story tasks)."""
    tasks: dict[int, list[tuple[float, float]]] = {}  # stage -> (launch, finish) of each task
    jobs: list[tuple[float, list[int]]] = []  # (submitted, stage ids)
    for path in (path for path in events_dir.rglob("*") if path.is_file()):
        for line in path.read_text().splitlines():
            event = json.loads(line)
            kind = event.get("Event")
            if kind == "SparkListenerJobStart":
                jobs.append((event["Submission Time"] / 1000, sorted(event["Stage IDs"])))
            elif kind == "SparkListenerTaskEnd":
                info = event["Task Info"]
                tasks.setdefault(event["Stage ID"], []).append((info["Launch Time"] / 1000, info["Finish Time"] / 1000))
    rows = []
    for number, ((start, end), (submitted, stages)) in enumerate(zip(spans, sorted(jobs), strict=False), 1):
        scan, story = (sorted(tasks.get(stage, [])) for stage in stages[:2])
        if not scan or not story:
            continue
        rows += [(f"run {number}: until the first task starts", f"{scan[0][0] - start:.2f} s "
                                                                  f"(job submitted at {submitted - start:.2f} s)"),
                 (f"run {number}: scan tasks", _spread(scan, start)),
                 (f"run {number}: story tasks", _spread(story, start)),
                 (f"run {number}: after the job (driver: report)", f"{end - max(e for _, e in story):.2f} s")]
    return rows


def _spread(tasks: list[tuple[float, float]], start: float) -> str:
    """When a stage's tasks ran, in seconds from ``start``, and each task's own seconds."""
    return (f"{min(s for s, _ in tasks) - start:.2f}-{max(e for _, e in tasks) - start:.2f} s "
            f"(tasks {', '.join(f'{e - s:.2f}' for s, e in tasks)} s)")


def start_s3(log: Path, object_bytes: int, scratch: Path):
    """The S3 server with the log cut (at line ends) into objects of about ``object_bytes``,
    and the same parts in a local folder."""
    from s3server import start_s3_server

    parts = scratch / "parts"
    parts.mkdir()
    number = 0
    with log.open("rb") as fh:
        while chunk := fh.read(object_bytes):
            chunk += fh.readline()
            (parts / f"server.log.{number:03d}").write_bytes(chunk)
            number += 1
    server = start_s3_server(scratch / "moto.log")
    started = time.perf_counter()
    server.upload(S3_BUCKET, {f"logs/{part.name}": part for part in sorted(parts.iterdir())})
    print(f"uploaded {number} objects to the S3 server in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return server, parts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1GB", help="log size to generate, e.g. 1GB, 200MB (default 1GB)")
    parser.add_argument("--log", type=Path, default=None, help="log file to write or reuse (default: in the temp dir)")
    parser.add_argument("--master", default="local[2]", help="Spark master URL (default local[2])")
    parser.add_argument("--coordinator-share", type=float, default=0.03,
                        help="share of the log's lines that are GroupCoordinator lines (default 0.03)")
    parser.add_argument("--local-too", action="store_true", help="also time the in-process engine on the big log")
    parser.add_argument("--no-paste", action="store_true", help="skip the paste-latency runs")
    parser.add_argument("--paste-only", action="store_true",
                        help="time only the paste path (--repeat times), not the whole log")
    parser.add_argument("--local-only", action="store_true",
                        help="time only the in-process engine on the first --head bytes of the log (--repeat times)")
    parser.add_argument("--head", default="64MB", help="bytes of the log --local-only reads (default 64MB)")
    parser.add_argument("--command-only", action="store_true",
                        help="time only the whole logs command on the log (--repeat fresh processes, Spark)")
    parser.add_argument("--vs-src", default=None,
                        help="with --command-only: another tree's src folder, run in turn with this one")
    parser.add_argument("--s3", action="store_true", help="also read the log from an S3 server (moto's) and compare")
    parser.add_argument("--object-size", default="128MB", help="size of the log's objects in the S3 mode (default 128MB)")
    parser.add_argument("--timeline", action="store_true",
                        help="also tell where each run's seconds went, from Spark's event log")
    parser.add_argument("--repeat", type=int, default=2,
                        help="runs of the whole log in one session: the first starts Spark's Python workers, the "
                             "best of the others shows the steady rate (default 2)")
    args = parser.parse_args(argv)

    size = parse_size(args.size)
    share = args.coordinator_share
    log = args.log or Path(tempfile.gettempdir()) / f"kafka-rebalance-bench-{args.size}-{share:g}.log"
    generated_s = None
    if not log.exists() or abs(log.stat().st_size - size) > size * 0.01:
        started = time.perf_counter()
        generate(log, size, coordinator_share=share)
        generated_s = time.perf_counter() - started
    megabytes = log.stat().st_size / 1e6
    if args.paste_only:
        return paste_only(log, args.repeat)
    if args.local_only:
        return local_only(log, parse_size(args.head), args.repeat)
    if args.command_only:
        return command_only(log, args.master, args.repeat, args.vs_src)

    # 1. latency: a 30-line paste on stdin, end to end in a fresh process, both engines.
    if not args.no_paste:
        paste = make_paste(log)
        local_s, local_facts, local_cpu = paste_run(paste, "auto", args.master)
        spark_paste_s, spark_facts, _ = paste_run(paste, "spark", args.master)

    # 2. throughput: the whole log on Spark, and grep -c on the same file.
    grep_s, grep_count = grep_seconds(log)
    grep_s, grep_count = grep_seconds(log)  # the second run reads from the page cache, as Spark will

    from kafka_rebalance.pipeline.logparse.layout import SyslogReference
    from kafka_rebalance.pipeline.logs import LOGS_CLASS_ARCHIVE, logs_session, run_logs
    from kafka_rebalance.pipeline.spark import ARCHIVE_SETTLE_SECONDS, class_archive_options
    from kafka_rebalance.pipeline.without_pandas import without_pandas

    syslog = SyslogReference(int(time.time() * 1000))  # as the CLI decides it: the run's start

    out = Path(tempfile.mkdtemp(prefix="kafka-rebalance-logs-bench-"))
    server = None
    if args.s3:
        # Before the session: its JVM and Python workers take the variables from this process.
        server, parts = start_s3(log, parse_size(args.object_size), out)
        objects = len(list(parts.iterdir()))
        os.environ.update(server.env())
    # The first session of an installation records the driver JVM's class archive and starts
    # (and runs its first job) without it; every later one maps it: say which this one is.
    archive = class_archive_options(profile=LOGS_CLASS_ARCHIVE)
    archive_state = ("class archive mapped" if "SharedArchiveFile" in archive
                     else f"recording the class archive: mapped {ARCHIVE_SETTLE_SECONDS} s after this session"
                     if "ArchiveClassesAtExit" in archive else "no class archive")
    extra_conf: dict[str, str] = {}
    if args.timeline:
        (out / "events").mkdir()
        extra_conf.update({"spark.eventLog.enabled": "true", "spark.eventLog.dir": (out / "events").as_uri(),
                           "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false"})
    started = time.perf_counter()
    # as the command starts its session: with pandas refused
    with without_pandas():
        spark = logs_session(args.master, app_name="kafka-rebalance-logs-bench", extra_conf=extra_conf)
    session_s = time.perf_counter() - started
    runs = []
    stores: dict[str, list[tuple[float, float, dict]]] = {"local disk": [], "S3 server": []}

    run_spans: list[tuple[float, float]] = []  # each run's start and end (epoch seconds)

    def timed(inputs: list[str], out_dir: str) -> tuple[float, float, dict]:
        """Wall and CPU seconds of a run; the S3 server's own CPU (a child of this process) is
        left out of the CPU and kept in ``server_cpu``."""
        kinds_before, server_before = tree_cpu_by_kind(), server_cpu_seconds()
        started, epoch = time.perf_counter(), time.time()
        with without_pandas():  # as the ``logs`` command runs it
            run = run_logs(spark, inputs, out_dir, engine="spark", progress=False, syslog=syslog)
        seconds = time.perf_counter() - started
        run_spans.append((epoch, epoch + seconds))
        server = server_cpu_seconds() - server_before
        kinds = {kind: used - kinds_before[kind] for kind, used in tree_cpu_by_kind().items()}
        kinds["Python workers"] -= server
        cpu = sum(kinds.values())
        server_cpu.append(server)
        cpu_split.append(", ".join(f"{kind} {used:.1f}" for kind, used in kinds.items()))
        print(f"{inputs[0]}: {seconds:.1f} s, CPU {cpu:.1f} s ({cpu_split[-1]}; + S3 server {server:.1f} s), "
              f"load {os.getloadavg()[0]:.1f}", file=sys.stderr)
        return seconds, cpu, run.summary

    server_cpu: list[float] = []
    cpu_split: list[str] = []  # per timed run: CPU seconds per kind of process
    run_splits: list[str] = []  # the same for ``runs`` (the whole log from the local disk)

    def server_cpu_seconds() -> float:
        if server is None:
            return 0.0
        fields = Path(f"/proc/{server.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    try:
        for attempt in range(max(1, args.repeat)):
            runs.append(timed([str(log)], str(out / f"spark-{attempt}")))
            run_splits.append(cpu_split[-1])
            if server is not None:
                stores["local disk"].append(timed([str(parts)], str(out / f"parts-{attempt}")))
                stores["S3 server"].append(timed([f"s3://{S3_BUCKET}/logs/"], f"s3://{S3_BUCKET}/out-{attempt}"))
        peaks = tree_peak_memory()
    finally:
        spark.stop()
        if server is not None:
            server.stop()
    timeline = timeline_rows(out / "events", run_spans) if args.timeline else []
    analysis_s, cpu_s, summary = runs[0]
    local_big = None
    if args.local_too:
        started = time.perf_counter()
        local_run = run_logs(None, [str(log)], str(out / "local"), engine="local", syslog=syslog)
        local_big = (time.perf_counter() - started, local_run.summary)
    shutil.rmtree(out, ignore_errors=True)

    rows = [
        ("log", f"{log} ({megabytes:,.0f} MB, {summary['lines_read']:,} lines, {grep_count:,} GroupCoordinator "
                f"lines = {grep_count / max(summary['lines_read'], 1):.1%})"),
        ("generated in", f"{generated_s:.1f} s" if generated_s is not None else "reused"),
        ("grep -c GroupCoordinator", f"{grep_s:.2f} s = {megabytes / grep_s:,.0f} MB/s"),
        ("Spark session start", f"{session_s:.1f} s ({archive_state})"),
        ("Spark engine, whole log", f"{analysis_s:.1f} s = {megabytes / analysis_s:,.1f} MB/s "
                                    f"({analysis_s / grep_s:,.0f}x grep's time)"),
        *((f"  {stage}", f"{seconds:.1f} s") for stage, seconds in summary["seconds"].items()),
        ("  CPU used (driver, JVM, Python workers)", f"{cpu_s:.1f} s = {megabytes / cpu_s:,.1f} MB per CPU-second"),
        ("    per process", run_splits[0]),
    ]
    if len(runs) > 1:
        again_s, again_cpu, again = min(runs[1:], key=lambda r: r[0])
        rows += [
            (f"same, again in the session (best of {len(runs) - 1})",
             f"{again_s:.1f} s = {megabytes / again_s:,.1f} MB/s, CPU {again_cpu:.1f} s "
             f"({run_splits[runs.index(min(runs[1:], key=lambda r: r[0]))]})"),
            *((f"  {stage}", f"{seconds:.1f} s") for stage, seconds in again["seconds"].items()),
        ]
    if server is not None:
        local_best = min(stores["local disk"], key=lambda r: r[0])
        for store, timings in stores.items():
            best = min(timings, key=lambda r: r[0])
            server_note = f" (+ S3 server {max(server_cpu):.1f} s at most)" if store == "S3 server" else ""
            rows.append((f"{store}, {objects} objects of {args.object_size} (best of {len(timings)})",
                         f"{best[0]:.1f} s = {megabytes / best[0]:,.1f} MB/s, CPU {best[1]:.1f} s{server_note} "
                         f"({local_best[0] / best[0]:.0%} of the local rate; runs: "
                         f"{', '.join(f'{t[0]:.1f}' for t in timings)} s)"))
            assert best[2]["rebalances"] == summary["rebalances"], store
    rows += [
        ("peak memory", ", ".join(f"{kind} {size / 2**20:,.0f} MiB" for kind, size in sorted(peaks.items()))),
        ("found", f"{summary['groups']:,} groups, {summary['rebalances']:,} rebalances "
                  f"({summary['open_rebalances']:,} open), {summary['member_failures']:,} failures, "
                  f"{summary['storms']:,} storms"),
    ]
    if local_big is not None:
        seconds, facts = local_big
        rows.append(("local engine, whole log", f"{seconds:.1f} s = {megabytes / seconds:,.1f} MB/s "
                                                f"(same rebalances: {facts['rebalances'] == summary['rebalances']})"))
    if not args.no_paste:
        rows += [
        (f"{PASTE_LINES}-line paste on stdin, auto (local)", f"{local_s:.2f} s end to end, {local_cpu:.2f} CPU-s "
                                                            f"({local_facts['rebalances']} rebalance(s))"),
        (f"{PASTE_LINES}-line paste on stdin, --engine spark", f"{spark_paste_s:.1f} s end to end"),
        *((f"  {stage}", f"{seconds:.1f} s") for stage, seconds in spark_facts["seconds"].items()),
        ("  JVM, session start and imports (the rest)",
         f"{spark_paste_s - sum(spark_facts['seconds'].values()):.1f} s"),
        ]
    rows += timeline
    rows += [
        ("machine", f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}, master {args.master}"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
