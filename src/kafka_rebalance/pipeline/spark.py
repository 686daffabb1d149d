"""The SparkSession every pipeline command uses, and a rich progress bar fed by Spark's status
tracker.

Defaults are for a person at a terminal: the Spark UI is off, Spark's own logging is cut to
errors, the driver binds to 127.0.0.1 (nothing listens on a public interface), and timestamps
are read and written as UTC so a broker log's wall-clock times come out unchanged.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from importlib import resources
from pathlib import Path

from pyspark.sql import SparkSession

from kafka_rebalance.pipeline.standby import STANDBY_ENV, interpreter_settings, start_standby

DEFAULT_MASTER = "local[*]"
LOOPBACK = "127.0.0.1"
# Set to "off" to start the driver JVM without the class archive (``class_archive_options``).
CLASS_ARCHIVE_ENV = "KAFKA_REBALANCE_CLASS_ARCHIVE"
# Set to "off" to start the worker daemon as PySpark does, after the JVM (``pipeline.standby``).
STANDBY_SWITCH_ENV = "KAFKA_REBALANCE_STANDBY"
# The driver JVM (all of Spark on a local master) compiles with the client compiler only: every
# command's job moves opaque bytes (Arrow streams, pickled batches) and its tasks' Python does
# the work, so C2's compile threads cost more CPU than they win back (a 16-run lab: the JVM's
# 8.4-9.3 -> 4.1-4.4 CPU-s, no slower; logs on 200 MB, when the JVM still split the lines:
# 22.6 -> 16.5 CPU-s for the first run in a session).
LOCAL_DRIVER_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
# A finished archive is adopted once its writer has been gone this long (it writes at exit).
ARCHIVE_SETTLE_SECONDS = 30
# An archive file that names no installation is removed once this old (``prune_archives``).
UNNAMED_ARCHIVE_DAYS = 7


def class_archive_options(cache_dir: Path | None = None, profile: str = "") -> str:
    """JVM options for Class Data Sharing: the first session on a machine records the classes
    Spark loads into an archive when its JVM exits; later sessions map it instead of loading
    and verifying those classes again (measured: session start 3.5-4.3 -> 1.8-2.0 s, the first
    job of a session ~1 s faster). One archive per Java binary and PySpark installation (its
    version and folder: the JVM refuses an archive recorded with another class path, so two
    virtualenvs need two) and per ``profile`` (a command whose jobs load classes others do not,
    such as ``logs``), in the user's cache directory (about 150 MB each). A missing, stale or
    broken archive only means a normal start: the JVM checks it and silently does without."""
    if os.environ.get(CLASS_ARCHIVE_ENV, "on") == "off":
        return ""
    import hashlib

    import pyspark

    java = shutil.which("java", path=str(Path(os.environ["JAVA_HOME"]) / "bin")) if os.environ.get(
        "JAVA_HOME") else shutil.which("java")
    if java is None:
        return ""
    java_path = Path(java).resolve()
    try:
        java_stamp = f"{java_path}:{java_path.stat().st_mtime_ns}"
    except OSError:
        return ""
    installed = Path(pyspark.__file__).resolve().parent
    key = hashlib.sha1(f"{java_stamp}:{pyspark.__version__}:{installed}".encode()).hexdigest()[:12]
    cache = cache_dir or user_cache_dir()
    archive = cache / f"spark-classes-{key}{'-' + profile if profile else ''}.jsa"
    quiet = "-Xlog:cds=off -Xlog:cds+dynamic=off"
    try:
        prune_archives(cache)
        _note_installation(cache / f"spark-classes-{key}.source", installed)
        _adopt_written_archive(cache, archive)
        if archive.exists():
            return f"-XX:SharedArchiveFile={archive} {quiet}"
        if any(cache.glob(f"{archive.stem}.*.tmp")):
            return ""  # another session is recording it (or its archive is settling)
        cache.mkdir(parents=True, exist_ok=True)
    except OSError:
        return ""
    # Each writer has its own name: two first sessions at once must not write one file.
    return f"-XX:ArchiveClassesAtExit={archive.with_name(f'{archive.stem}.{os.getpid()}.tmp')} {quiet}"


def _note_installation(source: Path, installed: Path) -> None:
    """Beside an installation's archives, the PySpark folder they were recorded with."""
    if not source.exists():
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(f"{installed}\n", encoding="utf-8")


def prune_archives(cache: Path, now: float | None = None) -> list[Path]:
    """Remove the archives no session can use again, and return them: those of a PySpark
    installation that is gone (a deleted virtualenv or clone: its ``.source`` names a folder
    that no longer exists), and any archive file without a ``.source`` that nobody has written
    for ``UNNAMED_ARCHIVE_DAYS`` (recorded before archives named their installation). Each is
    about 150-190 MB; a test suite run in a fresh clone left four."""
    now = time.time() if now is None else now
    removed: list[Path] = []
    named: set[str] = set()
    for source in cache.glob("spark-classes-*.source"):
        key = source.name[len("spark-classes-"):-len(".source")]
        named.add(key)
        try:
            folder = source.read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if folder and not Path(folder).exists():
            for path in cache.glob(f"spark-classes-{key}[.-]*"):
                path.unlink(missing_ok=True)
                removed.append(path)
    for path in cache.glob("spark-classes-*"):
        key = path.name[len("spark-classes-"):].split(".", 1)[0].split("-", 1)[0]
        if key in named or path.suffix == ".source" or _alive(_writer(path)):
            continue
        try:
            stale = now - path.stat().st_mtime > UNNAMED_ARCHIVE_DAYS * 86400
        except OSError:
            continue
        if stale:
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _adopt_written_archive(cache: Path, archive: Path) -> None:
    """Move the newest archive a finished session wrote into place; drop the others."""
    written = sorted(cache.glob(f"{archive.stem}.*.tmp"), key=lambda p: p.stat().st_mtime, reverse=True)
    settled = [p for p in written if not _alive(_writer(p)) and time.time() - p.stat().st_mtime > ARCHIVE_SETTLE_SECONDS]
    if settled and not archive.exists():
        os.replace(settled[0], archive)
        settled = settled[1:]
    for leftover in settled:
        leftover.unlink(missing_ok=True)


def _writer(path: Path) -> int:
    """The pid in ``<archive>.<pid>.tmp`` (0: not ours, treated as gone)."""
    middle = path.name.rsplit(".", 2)[-2]
    return int(middle) if middle.isdigit() else 0


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/kafka-rebalance`` (default ``~/.cache/kafka-rebalance``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kafka-rebalance"


# Spark's own output (the JVM's start-up warnings, log4j, Python workers' stderr) of the last few
# sessions, one file each, under the cache folder; older files are removed.
SPARK_LOGS_KEPT = 20
_session_log: Path | None = None


def session_log() -> Path | None:
    """The file the running session's JVM writes its output to (None: it writes to the terminal)."""
    return _session_log


def new_session_log(folder: Path | None = None) -> Path | None:
    """A fresh log file for a session's JVM under ``folder`` (default: the cache folder's
    ``spark-logs``), or None when no such file can be made."""
    folder = folder or user_cache_dir() / "spark-logs"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for old in sorted(folder.glob("spark-*.log"), key=lambda p: p.stat().st_mtime)[:-SPARK_LOGS_KEPT + 1]:
            old.unlink(missing_ok=True)
        path = folder / f"spark-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{os.getpid()}.log"
        path.touch()
    except OSError:
        return None
    return path


@contextmanager
def output_of_new_processes_to(path: Path) -> Iterator[None]:
    """Processes started inside the block (the JVM, and the Python workers it starts) write their
    stdout and stderr into ``path``; this process's own output is back on the terminal after.
    The JVM prints its start-up warnings (``Using incubator modules``) before any logging
    configuration applies, so only its file descriptors can keep them off the terminal."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)


def quiet_log4j_config() -> str:
    """Path of the log4j2 configuration that keeps Spark's console output to errors."""
    return str(resources.files("kafka_rebalance") / "data" / "log4j2-quiet.properties")


def build_session(master: str | None = None, app_name: str = "kafka-rebalance", *, quiet: bool = True,
                  extra_conf: dict[str, str] | None = None, class_archive: str = "",
                  worker_daemon: str | None = None) -> SparkSession:
    """Create (or return the running) SparkSession for ``master`` (any URL Spark accepts).
    On a local master the driver JVM (the only one) gets ``LOCAL_DRIVER_JVM_OPTIONS`` and its
    class archive, of profile ``class_archive`` (``class_archive_options``);
    ``worker_daemon``: a module of this package to run as PySpark's worker daemon on a local
    master (where this package is installed; a cluster's executors get it as a zip only once
    the daemon runs), with ``warm(ahead)`` and ``serve()``: a standby warms it while the JVM starts
    (``pipeline.standby``). ``quiet``:
    Spark's logging is cut to errors and the JVM's output goes to a file (``session_log``),
    not to the terminal."""
    master = master or DEFAULT_MASTER
    # The driver JVM and Python workers must use this interpreter (the one with our package).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", LOOPBACK)
        .config("spark.driver.bindAddress", LOOPBACK)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.python.worker.reuse", "true")
    )
    starting = SparkSession.getActiveSession() is None
    driver_jvm_options = ""
    if is_local_master(master):
        driver_jvm_options = f"{LOCAL_DRIVER_JVM_OPTIONS} {class_archive_options(profile=class_archive)}".strip()
        if worker_daemon:
            builder = builder.config("spark.python.daemon.module", worker_daemon)
            # Its imports made while the JVM starts, not after the first job has begun.
            wanted = starting and os.environ.get(STANDBY_SWITCH_ENV, "on") != "off"
            standby = start_standby(worker_daemon, daemon_interpreter_settings()) if wanted else None
            if standby is not None:
                builder = builder.config(f"spark.executorEnv.{STANDBY_ENV}", standby.socket_path)
    if quiet:
        option = f"-Dlog4j.configurationFile=file:{quiet_log4j_config()}"
        builder = builder.config("spark.driver.extraJavaOptions", f"{option} {driver_jvm_options}".strip()).config(
            "spark.executor.extraJavaOptions", option)
    elif driver_jvm_options:
        builder = builder.config("spark.driver.extraJavaOptions", driver_jvm_options)
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    global _session_log
    log = new_session_log() if quiet and starting else None
    if log is None:
        spark = builder.getOrCreate()
    else:
        _session_log = log  # named in the error if the JVM does not start
        with output_of_new_processes_to(log):
            spark = builder.getOrCreate()
    if quiet:
        spark.sparkContext.setLogLevel("ERROR")
    if not is_local_master(master):
        ship_package(spark)
    return spark


def import_meanwhile(*modules: str) -> None:
    """Import ``modules`` on a thread of their own, while this one waits for the JVM to start (a
    wait that leaves the interpreter free): a command's report (pandas, matplotlib) then no longer
    waits until the session has started. Where the command imports them for use, it waits for
    this import to finish; a module that fails here fails again there, with its error."""
    import importlib

    def load() -> None:
        for module in modules:
            with suppress(Exception):
                importlib.import_module(module)

    threading.Thread(target=load, name="import-meanwhile", daemon=True).start()


def daemon_interpreter_settings() -> dict[str, str]:
    """The interpreter's start-up variables of the Python worker daemon this process's JVM will
    start: the JVM's own (this process's), with the two PySpark sets for its workers."""
    return {**interpreter_settings(os.environ), "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0"),
            "PYTHONUNBUFFERED": "YES"}


def is_local_master(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster")


def ship_package(spark: SparkSession) -> None:
    """Send this package to the executors of a real cluster, where it may not be installed
    (its dependencies, numpy and pydantic, must be)."""
    package_dir = Path(__file__).resolve().parents[1]
    folder = Path(tempfile.mkdtemp(prefix="kafka-rebalance-"))
    atexit.register(shutil.rmtree, folder, True)
    archive = folder / "kafka_rebalance.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in package_dir.rglob("*"):
            if "__pycache__" in path.parts or path.is_dir():
                continue
            zf.write(path, Path("kafka_rebalance") / path.relative_to(package_dir))
    spark.sparkContext.addPyFile(str(archive))


@contextmanager
def spark_progress(spark: SparkSession, description: str, *, enabled: bool | None = None) -> Iterator[None]:
    """A progress bar on stderr (``pipeline.progress``) of the Spark jobs run inside the block:
    finished/total tasks of their stages, read from Spark's status tracker (job and stage
    progress) a few times a second. The total grows as jobs plan their stages.
    """
    from kafka_rebalance.pipeline.progress import REFRESH_PER_SECOND, progress_bar, wanted

    if not wanted(enabled):
        yield
        return
    context = spark.sparkContext
    group = f"kafka-rebalance-{id(description)}-{time.monotonic_ns()}"
    context.setJobGroup(group, description)
    stop = threading.Event()
    progress = progress_bar("tasks")
    task = progress.add_task(description, total=None)

    def poll() -> None:
        tracker = context.statusTracker()
        seen: dict[int, tuple[int, int]] = {}
        while not stop.is_set():
            for job_id in tracker.getJobIdsForGroup(group):
                job = tracker.getJobInfo(job_id)
                if job is None:
                    continue
                for stage_id in job.stageIds:
                    stage = tracker.getStageInfo(stage_id)
                    if stage is not None:
                        seen[stage_id] = (stage.numCompletedTasks, stage.numTasks)
            if seen:
                done = sum(d for d, _ in seen.values())
                total = sum(t for _, t in seen.values())
                progress.update(task, completed=done, total=max(total, 1))
            stop.wait(1 / REFRESH_PER_SECOND)

    thread = threading.Thread(target=poll, daemon=True)
    with progress:
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            # None removes the property (SparkContext.setLocalProperty); pyspark annotates str only.
            context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
