"""What every command's Python worker daemon shares (``spark.python.daemon.module`` on a local
master, ``pipeline.spark.build_session``): the daemon forks every Python worker, so what it has
imported before it forks, every worker starts with, instead of importing it itself on its first
task. A command's daemon module (``logparse.worker_daemon`` for ``logs``, ``sim_daemon`` for
``lab`` and ``soak``) has ``warm(ahead)``, which makes its tasks' imports, and ``serve()``, and
runs ``run(warm)`` when Spark starts it as ``python -m``. A standby (``pipeline.standby``) may
have warmed it while the JVM started, and takes the place of the process Spark runs.

Spark puts the pyspark and py4j it ships, as zip files (``$SPARK_HOME/python/lib``), first on
the workers' path. Python caches no bytecode for a zip's modules: it compiles them from source
at every import, which doubled the logs daemon's imports (1.05 -> 2.1 CPU-s, paid on the first
run of every session) and cost each forked worker 0.2 CPU-s more for ``pyspark.worker``. On a
local master the driver's own pyspark is installed beside this package, so the zips go behind it
(where none is installed they still serve): workers run the pyspark the driver runs."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable


def bundled_last(path: list[str]) -> list[str]:
    """``path`` with Spark's bundled zips (``.../python/lib/*.zip``) moved to its end."""
    from pathlib import PurePath

    bundled = [entry for entry in path
               if entry.endswith(".zip") and PurePath(entry).parent.parts[-2:] == ("python", "lib")]
    return [entry for entry in path if entry not in bundled] + bundled


def serve() -> None:
    """PySpark's daemon loop, forking a worker per connection from the JVM."""
    from pyspark import daemon

    from kafka_rebalance.pipeline.arrow_memory import use_system_allocator

    use_system_allocator()  # before the fork: every worker's tables come from it
    sys.path[:] = bundled_last(sys.path)  # a standby adopted the JVM's PYTHONPATH: zips last again
    # What the imports made lives as long as the workers: moved out of the collector's sight,
    # so a worker's full collections do not walk it again and again (nor write to its pages,
    # which a forked worker would then copy).
    gc.freeze()
    daemon.manager()


def run(warm: Callable[[], None]) -> None:
    """A daemon module's main: serve as the standby started beside the JVM, if there is one that
    takes over; else warm here, then serve."""
    from kafka_rebalance.pipeline.standby import hand_over

    if not hand_over():  # a standby started beside the JVM became the daemon, and has ended
        warm()
        serve()
