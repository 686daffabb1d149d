"""PySpark's Python worker daemon for the logs job on a local master, with what its tasks import
already imported: the daemon forks every Python worker, so a worker starts with pyarrow, pandas
(pyarrow imports it to build any array from a list), the catalogue's parse plans and the
hyperscan database in place instead of importing and compiling them itself. Measured on
``local[2]``: one import of about 1 CPU-s for the session instead of one per worker
(``benchmarks/logs.py``). Named by ``spark.python.daemon.module``
(``pipeline.spark.build_session``); run by Spark as ``python -m``."""

from __future__ import annotations

import pandas  # noqa: F401
import pyarrow.parquet  # noqa: F401
from pyspark import daemon

import kafka_rebalance.pipeline.logparse.exchange  # noqa: F401
import kafka_rebalance.pipeline.logparse.layout  # noqa: F401
import kafka_rebalance.pipeline.logparse.scan  # noqa: F401

if __name__ == "__main__":
    daemon.manager()
