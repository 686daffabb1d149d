"""One local SparkSession for every pipeline test (starting Spark costs seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEED_002 = ROOT / "tests" / "data" / "seeds" / "002_2dbaf8b85c23802f.txt"


@pytest.fixture(scope="session")
def spark():
    from kafka_rebalance.pipeline.spark import build_session

    session = build_session("local[2]", "kafka-rebalance-tests", extra_conf={"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()


@pytest.fixture(scope="session")
def seed_document() -> Path:
    return SEED_002


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """moto's S3 server on 127.0.0.1 (``s3server.S3Server``), for the whole session."""
    from s3server import start_s3_server

    server = start_s3_server(tmp_path_factory.mktemp("s3-server") / "moto.log")
    yield server
    server.stop()
