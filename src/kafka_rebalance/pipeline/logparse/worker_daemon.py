"""PySpark's Python worker daemon for the logs job on a local master, with what its tasks import
already imported: the daemon forks every Python worker, so a worker starts with pyarrow, the
catalogue's per-line parse plans, the hyperscan databases and PySpark's own worker module in
place instead of importing and compiling them itself. Measured on ``local[2]``: one import of about 1 CPU-s
for the session instead of one per worker (``benchmarks/logs.py``); 0.3 CPU-s less again since
the workers go without pandas (``without_pandas.PandasRefused``: the logs job's tasks are RDD
functions over Arrow tables, and pyarrow does without it). Named by ``spark.python.daemon.module``
(``pipeline.spark.build_session``); run by Spark as ``python -m``. On a local master a standby has
made these imports while the JVM started, and takes the place of the process Spark runs
(``pipeline.standby``): the first job no longer waits for them. What every daemon does
beside (the path, the loop) is ``pipeline.worker_daemon``."""

from __future__ import annotations

import sys

from kafka_rebalance.pipeline.worker_daemon import bundled_last, run, serve

__all__ = ["warm", "serve"]


def warm(ahead: bool = False) -> None:
    """Make the imports and plans the workers inherit. ``ahead``: warming before any task waits
    (a standby's, ``pipeline.standby``), so the RE2 plans of every message too, which a daemon
    started by a waiting task leaves to each worker (``readlog.prepare``)."""
    from kafka_rebalance.pipeline.without_pandas import PandasRefused

    sys.path[:] = bundled_last(sys.path)
    sys.meta_path.insert(0, PandasRefused())  # for good: a worker runs the logs job's tasks only
    # Imported for the workers to inherit (after the path is set: pyspark from its installation),
    # with what the tasks would import on first use: numpy's masked arrays (pyarrow asks about
    # them when it converts an array) and the story's column modules (``story.tell_table``).
    import numpy.ma  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    import pyspark.worker  # noqa: F401

    import kafka_rebalance.pipeline.arrow_memory  # noqa: F401
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


if __name__ == "__main__":
    run(warm)
