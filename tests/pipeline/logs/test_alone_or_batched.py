"""Alone or together, the same answer: what ``logs`` finds in an excerpt (groups, rebalances,
generations, member events, causes) does not depend on what else it is given with, on either
engine; inputs labelled one cluster complete each other's story (a superset of each alone)."""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.pipeline.logparse.inputs import input_clusters
from kafka_rebalance.pipeline.logparse.local_engine import analyse_local
from kafka_rebalance.pipeline.logparse.schemas import STORY_TABLES
from tests.conftest import TEST_SYSLOG
from tests.pipeline.logs.frames import frames_of

DATA = Path(__file__).resolve().parents[2] / "data"
EXCERPTS = sorted(str(p) for p in (DATA / "excerpts").iterdir() if p.name != "expected.json")
# Where a line is (file:line) is the one thing the Spark engine does not know as the local one does.
LOCAL_ONLY = {"causes": ("evidence_sources",)}


def _clean(value):
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list):
        return tuple(value)
    if hasattr(value, "tolist") and not isinstance(value, str):
        value = value.tolist()
        return tuple(value) if isinstance(value, list) else value
    return value


def rows_of(frames: dict[str, pd.DataFrame], cluster: str, *, skip: dict[str, tuple] | None = None) -> dict:
    """Every story table's rows of one cluster, as sorted tuples (and the events of the file)."""
    out = {}
    for table in STORY_TABLES:
        frame = frames[table]
        frame = frame[frame["cluster"] == cluster].drop(columns=list((skip or {}).get(table, ())))
        out[table] = sorted((tuple(_clean(v) for v in row) for row in frame.itertuples(index=False, name=None)),
                            key=repr)
    return out


def analyse(files: list[str]) -> dict[str, pd.DataFrame]:
    labels = input_clusters(files)
    return frames_of(analyse_local([(name, labels[name]) for name in files], syslog=TEST_SYSLOG))


@cache
def alone(path: str) -> dict:
    return rows_of(analyse([path]), input_clusters([path])[path])


def test_the_corpus_covers_every_layout_and_version_with_and_without_times():
    expected = json.loads((DATA / "excerpts" / "expected.json").read_text())
    assert len(expected) == len(EXCERPTS) >= 30
    assert sum(not case["timestamps"] for case in expected.values()) >= 7
    versions = " ".join(case["kafka"] for case in expected.values())
    for version in ("0.10.0", "0.11", "1.1", "2.0", "2.1", "2.3", "2.4", "2.5", "2.8", "3.0", "3.2", "3.7-4.x"):
        assert version in versions, version


@settings(max_examples=12, deadline=None)
@given(st.lists(st.sampled_from(EXCERPTS), min_size=2, max_size=len(EXCERPTS), unique=True))
def test_each_excerpt_in_any_batch_is_what_it_is_alone(batch):
    frames = analyse(batch)
    labels = input_clusters(batch)
    for path in batch:
        assert rows_of(frames, labels[path]) == alone(path), path


def test_the_whole_corpus_at_once_and_every_excerpt_finds_something():
    frames = analyse(EXCERPTS)
    labels = input_clusters(EXCERPTS)
    for path in EXCERPTS:
        mine = rows_of(frames, labels[path])
        assert mine == alone(path), path
        assert mine["rebalances"] or mine["client_rebalances"], path


def _keys(rows: dict, cluster_free: bool = True) -> dict[str, set]:
    def project(table: str, columns: tuple[str, ...]) -> set:
        from kafka_rebalance.pipeline.logparse.schemas import TABLES

        names = [c for c, _, _ in TABLES[table]]
        return {tuple(row[names.index(c)] for c in columns) for row in rows[table]}

    return {"rebalances": project("rebalances", ("group", "generation")),
            "member_events": project("member_events", ("group", "member", "kind")),
            "causes": project("causes", ("group", "generation", "cause", "member"))}


def test_inputs_labelled_one_cluster_complete_each_others_story():
    """A broker's log and its consumers' logs, labelled one cluster: everything each shows alone
    is in the combined story (the consumer's own rebalance becomes the broker's, with its cause)."""
    files = [str(DATA / "logs" / "broker-3.9.log"), str(DATA / "logs" / "spring-boot-billing.log")]
    labels = {name: "shop" for name in files}
    combined = _keys(rows_of(frames_of(analyse_local([(name, "shop") for name in files], syslog=TEST_SYSLOG)), "shop"))
    assert labels
    combined_generations = {group: generation for group, generation in combined["rebalances"]}
    for path in files:
        mine = _keys(alone(path))
        for table in ("rebalances", "member_events", "causes"):
            # a consumer alone may not know a rebalance's generation (its partitions were lost): the
            # combined story knows it, so only the group is compared for those
            # and "not in the log" alone is no fact the combined story must repeat: it may know
            known = {key for key in mine[table] if table == "member_events" or key[1] is not None}
            if table == "causes":
                known = {key for key in known if key[2] != "unknown"}
            assert known <= combined[table], (path, table, known - combined[table])
            assert {key[0] for key in mine[table] - known} <= set(combined_generations)
    # more than either alone: the consumer's poll timeout explains the broker's rebalance
    broker = _keys(alone(files[0]))
    assert combined["causes"] > broker["causes"] or combined["member_events"] > broker["member_events"]


@pytest.mark.spark
def test_spark_gives_each_excerpt_what_the_local_engine_gives_it_alone(spark, tmp_path):
    """One Spark run of the whole corpus, and two excerpts alone on Spark (one without times,
    one with two records on a line): each excerpt's rows are its rows alone on the local engine."""
    from kafka_rebalance.pipeline.logs import run_logs

    runs = [(EXCERPTS, tmp_path / "all")]
    for name in ("04-broker-2.0-prefix-no-time.log", "09-broker-2.2-two-on-a-line.log"):
        runs.append(([str(DATA / "excerpts" / name)], tmp_path / name))
    for files, out in runs:
        run_logs(spark, files, str(out), engine="spark", progress=False, syslog=TEST_SYSLOG)
        frames = {table: pd.read_parquet(out / table) for table in STORY_TABLES}
        labels = input_clusters(files)
        for path in files:
            local = {t: [tuple(v for i, v in enumerate(row) if i not in _skipped(t)) for row in rows]
                     for t, rows in alone(path).items()}
            assert rows_of(frames, labels[path], skip=LOCAL_ONLY) == {t: sorted(r, key=repr) for t, r in local.items()}, path


def _skipped(table: str) -> set[int]:
    from kafka_rebalance.pipeline.logparse.schemas import TABLES

    names = [c for c, _, _ in TABLES[table]]
    return {names.index(c) for c in LOCAL_ONLY.get(table, ())}
