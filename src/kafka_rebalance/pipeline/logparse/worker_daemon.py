"""PySpark's Python worker daemon for the logs job on a local master, with what its tasks import
already imported: the daemon forks every Python worker, so a worker starts with pyarrow, the
catalogue's per-line parse plans, the hyperscan databases and PySpark's own worker module in
place instead of importing and compiling them itself. Measured on ``local[2]``: one import of about 1 CPU-s
for the session instead of one per worker (``benchmarks/logs.py``); 0.3 CPU-s less again since
the workers go without pandas (``without_pandas.PandasRefused``: the logs job's tasks are RDD
functions over Arrow tables, and pyarrow does without it). Named by ``spark.python.daemon.module``
(``pipeline.spark.build_session``); run by Spark as ``python -m``. On a local master a standby has
made these imports while the JVM started, and takes the place of the process Spark runs
(``pipeline.standby``): the first job no longer waits for them.

Spark puts the pyspark and py4j it ships, as zip files (``$SPARK_HOME/python/lib``), first on
the workers' path. Python caches no bytecode for a zip's modules: it compiles them from source
at every import, which doubled the daemon's imports (1.05 -> 2.1 CPU-s, paid on the first run of
every session) and cost each forked worker 0.2 CPU-s more for ``pyspark.worker``. On a local
master the driver's own pyspark is installed beside this package, so the zips go behind it
(where none is installed they still serve): workers run the pyspark the driver runs."""

from __future__ import annotations

import gc
import sys


def _bundled_last(path: list[str]) -> list[str]:
    """``path`` with Spark's bundled zips (``.../python/lib/*.zip``) moved to its end."""
    from pathlib import PurePath

    bundled = [entry for entry in path
               if entry.endswith(".zip") and PurePath(entry).parent.parts[-2:] == ("python", "lib")]
    return [entry for entry in path if entry not in bundled] + bundled


def warm(ahead: bool = False) -> None:
    """Make the imports and plans the workers inherit. ``ahead``: warming before any task waits
    (a standby's, ``pipeline.standby``), so the RE2 plans of every message too, which a daemon
    started by a waiting task leaves to each worker (``readlog.prepare``)."""
    from kafka_rebalance.pipeline.logparse.without_pandas import PandasRefused

    sys.path[:] = _bundled_last(sys.path)
    sys.meta_path.insert(0, PandasRefused())  # for good: a worker runs the logs job's tasks only
    # Imported for the workers to inherit (after the path is set: pyspark from its installation),
    # with what the tasks would import on first use: numpy's masked arrays (pyarrow asks about
    # them when it converts an array) and the story's column modules (``story.tell_table``).
    import numpy.ma  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    import pyspark.worker  # noqa: F401

    import kafka_rebalance.pipeline.logparse.columns.findings  # noqa: F401
    import kafka_rebalance.pipeline.logparse.columns.order  # noqa: F401
    import kafka_rebalance.pipeline.logparse.columns.tables  # noqa: F401
    import kafka_rebalance.pipeline.logparse.exchange  # noqa: F401
    import kafka_rebalance.pipeline.logparse.layout  # noqa: F401
    import kafka_rebalance.pipeline.logparse.scan  # noqa: F401
    from kafka_rebalance.pipeline.logparse.readlog import prepare

    prepare()  # the phrase search and the per-line plans, compiled once for every worker
    if ahead:
        from kafka_rebalance.pipeline.logparse.fastparse import re2_plans

        re2_plans()


def serve() -> None:
    """PySpark's daemon loop, forking a worker per connection from the JVM."""
    from pyspark import daemon

    sys.path[:] = _bundled_last(sys.path)  # a standby adopted the JVM's PYTHONPATH: zips last again
    # What the imports made lives as long as the workers: moved out of the collector's sight,
    # so a worker's full collections do not walk it again and again (nor write to its pages,
    # which a forked worker would then copy).
    gc.freeze()
    daemon.manager()


if __name__ == "__main__":
    from kafka_rebalance.pipeline.standby import hand_over

    if not hand_over():  # a standby started beside the JVM became the daemon, and has ended
        warm()
        serve()
