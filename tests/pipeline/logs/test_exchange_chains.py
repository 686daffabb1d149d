"""A client's chain of lines across splits, told in one pass of the Spark engine's tasks (run
here in-process, without Spark): client lines naming no group take the group their client named
last in the splits before (``split_facts.fill_client_group``), filled by the story tasks from
what every scan task sends every bucket (``exchange.read_split``), and the ``events`` table
holds each such line once, with the group the local engine gives it."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from kafka_rebalance.pipeline.logparse import exchange
from kafka_rebalance.pipeline.logparse.local_engine import analyse_local
from kafka_rebalance.pipeline.logparse.scan import plan_splits
from kafka_rebalance.pipeline.logparse.schemas import STORY_TABLES
from kafka_rebalance.pipeline.logparse.story import DEFAULT_STORM_RULE
from tests.conftest import TEST_SYSLOG
from tests.pipeline.logs.frames import frames_of

LOGS = Path(__file__).resolve().parents[2] / "data" / "logs"
# librdkafka's JoinGroup response names no group: before any line of its client names one, it
# stays without (no split before), later ones take "pricing" (maybe from a split before).
NO_GROUP_YET = ("%7|1720511999.900|JOINGROUP|rdkafka#consumer-1| [thrd:main]: JoinGroup response: GenerationId 8, "
                "Protocol range, LeaderId rdkafka-0c0c0c0c-1d1d-4e4e-8f8f-909090909090 (me), my MemberId "
                "rdkafka-0c0c0c0c-1d1d-4e4e-8f8f-909090909090, member metadata count 1: (no error)\n")
COMPARED = ("kind", "group", "client_id", "time_ms", "line")


def _plain(value: object) -> object:
    """A pandas cell or an Arrow value as plain Python (an ``EventKind`` as its str)."""
    if value is None or value is pd.NA:
        return None
    return str(value) if isinstance(value, str) else int(value)  # type: ignore[call-overload]


def _events(rows: list[dict]) -> list[tuple]:
    return sorted((tuple(_plain(row[name]) for name in COMPARED) for row in rows if row["kind"] is not None),
                  key=repr)


@pytest.mark.parametrize("split_bytes", [150, 300, 10**9])
@pytest.mark.parametrize("buckets", [1, 3])
def test_the_story_tasks_fill_a_chain_that_crosses_splits(tmp_path, split_bytes, buckets):
    log = tmp_path / "client.log"
    log.write_text(NO_GROUP_YET + (LOGS / "clients-python-rdkafka-streams.log").read_text())
    source = str(log)
    routed = []
    for index, split in enumerate(plan_splits([(source, log.stat().st_size)], split_bytes)):
        routed.extend(exchange.read_split(split, index, "default", source, buckets, str(tmp_path / "events"),
                                          syslog=TEST_SYSLOG))
    findings = []
    for bucket in range(buckets):
        told = exchange.tell_received([row for row in routed if row[0] == bucket], DEFAULT_STORM_RULE, buckets,
                                      str(tmp_path / "events"),
                                      {table: str(tmp_path / table) for table in STORY_TABLES}, f"{bucket:05d}")
        findings.extend(finding for finding, _ in told if finding is not None)
    local = analyse_local([(source, "default")], syslog=TEST_SYSLOG)

    spark_events = _events(pq.read_table(tmp_path / "events").to_pylist())
    local_events = _events(frames_of(local)["events"].to_dict("records"))
    assert spark_events == local_events
    groups = [(row[1], row[2]) for row in spark_events if row[0] == "client_joined"]
    assert (None, "rdkafka#consumer-1") in groups and ("pricing", "rdkafka#consumer-1") in groups
    assert sorted(findings) == sorted(json.dumps(finding, default=str) for finding in local.findings)
    rebalances = pq.read_table(tmp_path / "client_rebalances").to_pylist()
    assert len(rebalances) == len(frames_of(local)["client_rebalances"]) > 0
