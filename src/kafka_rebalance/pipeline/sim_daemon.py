"""PySpark's Python worker daemon for ``lab`` and ``soak`` on a local master: the simulator,
pyarrow and PySpark's worker imported before the daemon forks its workers (``pipeline.worker_daemon``
says why and how), so a worker's first task simulates at once instead of importing them
first; with a standby (``pipeline.standby``) they are imported while the JVM starts. The
workers go without pandas (``without_pandas.PandasRefused``): the tasks build Arrow tables,
and pyarrow does without it."""

from __future__ import annotations

import sys

from kafka_rebalance.pipeline.worker_daemon import bundled_last, run, serve

__all__ = ["SIM_WORKER_DAEMON", "warm", "serve"]

SIM_WORKER_DAEMON = "kafka_rebalance.pipeline.sim_daemon"


def warm(ahead: bool = False) -> None:
    """Make the imports the workers inherit: the lab's and the soak's task functions with the
    simulator's modules they use, and what those import on first use (numpy's random generator,
    the churn scenarios, pyarrow's Parquet writer, numpy's masked arrays, which pyarrow asks
    about when it converts an array). ``ahead`` (a standby's warming) changes nothing here: a
    task has no plans to compile."""
    from kafka_rebalance.pipeline.without_pandas import PandasRefused

    sys.path[:] = bundled_last(sys.path)
    sys.meta_path.insert(0, PandasRefused())  # for good: a worker runs these jobs' tasks only
    import numpy.ma  # noqa: F401
    import numpy.random  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    import pyspark.worker  # noqa: F401

    import kafka_rebalance.pipeline.io  # noqa: F401
    import kafka_rebalance.pipeline.lab  # noqa: F401
    import kafka_rebalance.pipeline.soak  # noqa: F401
    import kafka_rebalance.sim.churn  # noqa: F401
    import kafka_rebalance.sim.invariants  # noqa: F401
    import kafka_rebalance.sim.ownership_metrics  # noqa: F401
    import kafka_rebalance.sim.schedules  # noqa: F401
    import kafka_rebalance.sim.shrink  # noqa: F401
    from kafka_rebalance.sim import run_simulation  # noqa: F401


if __name__ == "__main__":
    run(warm)
