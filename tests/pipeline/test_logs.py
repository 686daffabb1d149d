"""Log forensics on Spark: the Spark engine gives the same tables as the local engine (one
parser, one story, two ways to run them; lines wrapped by a paste included), the byte-level
prefilter keeps every line a message can match, and the seed document (prose with two pasted
excerpts) end to end."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import TEST_SYSLOG

pytestmark = pytest.mark.spark

DATA = Path(__file__).resolve().parents[1] / "data" / "logs"
# Every test log, the paste with a line wrapped by a terminal among them.
COMPARED = sorted(DATA.iterdir())


def _clean(value):
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "tolist") and not isinstance(value, str):
        value = value.tolist()
        return tuple(value) if isinstance(value, list) else value
    if isinstance(value, pd.Timestamp):
        return value.tz_localize(None) if value.tzinfo else value
    return value


def _rows(frame: pd.DataFrame, columns: list[str]) -> list[tuple]:
    return sorted((tuple(_clean(v) for v in row) for row in frame[columns].itertuples(index=False, name=None)),
                  key=repr)


@pytest.fixture(scope="module")
def both_engines(spark, tmp_path_factory):
    import logs_generator

    from kafka_rebalance.pipeline.logs import run_logs

    root = tmp_path_factory.mktemp("engines")
    inputs = root / "inputs"
    inputs.mkdir()
    for path in COMPARED:
        shutil.copy(path, inputs / path.name)
    logs_generator.generate(inputs / "server.log", 400_000, groups=30, seed=3, coordinator_share=0.05)
    spark_run = run_logs(spark, [str(inputs)], str(root / "spark"), engine="spark", progress=False, syslog=TEST_SYSLOG)
    local_run = run_logs(None, [str(inputs)], str(root / "local"), engine="local", syslog=TEST_SYSLOG)
    return root, spark_run, local_run


TABLE_COLUMNS = {
    "rebalances": ["cluster", "group", "generation", "old_generation", "start", "end", "duration_ms", "outcome",
                   "members", "leader", "reason", "failed_members", "left_members", "protocol", "source", "cause",
                   "cause_member", "start_known"],
    "member_events": ["cluster", "group", "member", "time", "kind", "client", "reason"],
    "client_rebalances": ["group", "client_library", "client", "member", "generation", "assigned", "revoked", "lost",
                          "start", "end", "outcome"],
    "causes": ["group", "generation", "start", "cause", "member", "detail", "evidence"],
    "storms": ["group", "start", "end", "rebalances", "failures", "kind"],
    "empty_periods": ["group", "generation", "start", "end", "duration_ms"],
}


# Every column but where a line is: the local engine numbers lines, a Spark task knows the byte
# offset where its split's lines start (``seq``, and the ``file:line`` of causes' evidence).
EVERY_COLUMN = {table: () for table in (*TABLE_COLUMNS, "unrecognised")} | {
    "events": ("seq",), "causes": ("evidence_sources",)}


def _same_tables(spark_out: Path, local_out: Path, table: str, columns: list[str] | None = None, *,
                 some: bool = True) -> None:
    spark_frame, local_frame = pd.read_parquet(spark_out / table), pd.read_parquet(local_out / table)
    assert list(spark_frame.columns) == list(local_frame.columns)
    columns = columns or [c for c in local_frame.columns if c not in EVERY_COLUMN[table]]
    local_rows = _rows(local_frame, columns)
    assert len(local_rows) > 0 or not some
    assert _rows(spark_frame, columns) == local_rows


@pytest.mark.parametrize("table", sorted(TABLE_COLUMNS))
def test_spark_engine_gives_the_local_engines_tables(both_engines, table):
    root, spark_run, local_run = both_engines
    _same_tables(root / "spark", root / "local", table, TABLE_COLUMNS[table])


@pytest.mark.parametrize("table", sorted(EVERY_COLUMN))
def test_every_column_of_every_table_is_the_same(both_engines, table):
    """Every column, the ``events`` table (client lines' groups filled in) and the
    ``unrecognised`` one (its sample: the first such line in file order) included."""
    root, spark_run, local_run = both_engines
    _same_tables(root / "spark", root / "local", table)


@pytest.fixture(scope="module")
def tiny_splits(spark, tmp_path_factory):
    """The Spark engine with splits of a few hundred bytes and a bucket per few KB of input:
    client lines that name no group land in a split after the one where their client named it
    (filled by the story tasks), and groups are told in many story tasks. The run's Spark jobs
    are counted (in a job group of their own)."""
    from kafka_rebalance.pipeline import logs
    from kafka_rebalance.pipeline.logparse import exchange

    root = tmp_path_factory.mktemp("tiny-splits")
    inputs = root / "inputs"
    inputs.mkdir()
    for name in ("clients-python-rdkafka-streams.log", "broker-3.9.log", "spring-boot-billing.log",
                 "broker-4.0-kip848.log"):
        shutil.copy(DATA / name, inputs / name)
    patch = pytest.MonkeyPatch()
    patch.setattr(logs, "MIN_SPLIT_BYTES", 300)
    patch.setattr(logs, "MAX_SPLIT_BYTES", 300)
    patch.setattr(exchange, "BUCKET_INPUT_BYTES", 2_000)
    context = spark.sparkContext
    context.setJobGroup("tiny-splits", "the logs job on tiny splits")
    try:
        spark_run = logs.run_logs(spark, [str(inputs)], str(root / "spark"), engine="spark", progress=False, syslog=TEST_SYSLOG)
        jobs = len(context.statusTracker().getJobIdsForGroup("tiny-splits"))
    finally:
        patch.undo()
        context.setLocalProperty("spark.jobGroup.id", None)
    local_run = logs.run_logs(None, [str(inputs)], str(root / "local"), engine="local", syslog=TEST_SYSLOG)
    return root, spark_run, local_run, jobs


@pytest.mark.parametrize("table", sorted(EVERY_COLUMN))
def test_tiny_splits_and_many_buckets_give_the_same_tables(tiny_splits, table):
    root, spark_run, local_run, _ = tiny_splits
    _same_tables(root / "spark", root / "local", table, some=table not in ("storms", "empty_periods", "unrecognised"))
    for key in ("lines_read", "lines_matched", "groups", "rebalances", "client_rebalances"):
        assert spark_run.summary[key] == local_run.summary[key], key


def test_a_client_line_naming_no_group_is_filled_from_the_split_before(tiny_splits):
    """In the one job (no second run told what the first learnt), the ``events`` rows included."""
    root, _, _, jobs = tiny_splits
    from kafka_rebalance.pipeline.logparse.scan import plan_splits

    name = "clients-python-rdkafka-streams.log"
    events = pd.read_parquet(root / "spark" / "events")
    joins = events[events["line"].str.contains("JoinGroup response", na=False) & events["source"].str.endswith(name)]
    log = (DATA / name).read_bytes()
    starts = [split.start for split in plan_splits([(name, len(log))], 300)]

    def split_of(offset: int) -> int:
        return max(i for i, start in enumerate(starts) if start <= offset)

    # The premise: such a line is in a later split than the line naming its group.
    assert any(split_of(seq) > split_of(log.rfind(b'Group "pricing"', 0, seq)) for seq in joins["seq"])
    assert len(joins) > 0 and set(joins["group"]) == {"pricing"}
    assert jobs == 1


def test_an_unreadable_gz_is_skipped_on_spark_too(spark, tmp_path):
    import gzip

    from kafka_rebalance.pipeline.logs import run_logs

    good = tmp_path / "logs" / "broker.log.gz"
    good.parent.mkdir()
    with gzip.open(good, "wb") as fh:
        fh.write((DATA / "broker-3.9.log").read_bytes())
    broken = tmp_path / "logs" / "cut.log.gz"
    broken.write_bytes(good.read_bytes()[:-40])
    runs = {engine: run_logs(spark if engine == "spark" else None, [str(good.parent)], str(tmp_path / engine),
                             engine=engine, progress=False, syslog=TEST_SYSLOG) for engine in ("spark", "local")}
    for run in runs.values():
        assert [s["path"] for s in run.summary["skipped_inputs"]] == [str(broken)]
        assert run.summary["rebalances"] == runs["local"].summary["rebalances"] > 0


def test_spark_engine_summary_and_report(both_engines):
    root, spark_run, local_run = both_engines
    for key in ("lines_read", "lines_matched", "groups", "rebalances", "open_rebalances", "client_rebalances",
                "member_failures", "storms", "lines_unrecognised"):
        assert spark_run.summary[key] == local_run.summary[key], key
    assert spark_run.summary["engine"] == "spark" and local_run.summary["engine"] == "local"
    lines = {Path(c["source"]).name: c["lines"] for c in spark_run.summary["coverage"]}
    assert lines["server.log"] == sum(1 for _ in (root / "inputs" / "server.log").open())
    html = (root / "spark" / "report.html").read_text()
    assert "<svg" in html and "Group broker-3.9.log/billing" in html and "<script" not in html
    assert not list((root / "spark").glob(".staging-*"))


def test_the_prefilter_keeps_every_line_the_catalogue_reads(tmp_path):
    """A line the Python parser reads must get through the byte-level gate of ``scan``:
    otherwise the Spark engine (which parses only what the gate keeps) and the local engine differ."""
    from kafka_rebalance.pipeline.logparse.parse import parse_line
    from kafka_rebalance.pipeline.logparse.scan import Split
    from tests.pipeline.logs.line_reader import scan

    lines = [line.rstrip("\n") for path in COMPARED for line in path.open(encoding="utf-8")]
    readable = [line for line in lines if parse_line(line, TEST_SYSLOG) is not None]
    log = tmp_path / "all.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    kept = {line for _, line, owned in scan(Split(str(log))) if owned}
    assert set(readable) <= kept and len(readable) > 40


def test_seed_document_end_to_end(spark, seed_document, tmp_path):
    """The seed document itself (Chinese prose with the two pasted log excerpts) as a log."""
    from kafka_rebalance.pipeline.logs import run_logs

    log = tmp_path / "seed002.txt"
    shutil.copy(seed_document, log)
    run_logs(spark, [str(log)], str(tmp_path / "out"), engine="spark", progress=False, syslog=TEST_SYSLOG)
    out = tmp_path / "out"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["lines_read"] == len(log.read_text(encoding="utf-8").splitlines())
    # 13 pasted coordinator lines, one of them quoted twice in the prose; the prose itself is
    # not counted as unrecognised log lines.
    assert summary["lines_matched"] == 14 and summary["lines_unrecognised"] == 0
    assert summary["groups"] == 2
    rebalances = pd.read_parquet(out / "rebalances").sort_values(["group", "start"])
    answer = rebalances[rebalances["group"] == "answer_action"]
    assert list(answer["generation"]) == [742, 743]
    assert list(answer["duration_ms"]) == [0, 30_002]
    assert list(answer["outcome"]) == ["empty", "stable"]
    illidan = rebalances[rebalances["group"] == "illidan-c"]
    assert list(illidan["old_generation"]) == [158651, 158652]
    first = illidan.iloc[0]
    assert first["generation"] == 158652 and first["duration_ms"] == 7_171 and pd.isna(first["members"])
    # the two members failed 7 s into the rebalance (12:11:23.808 -> 12:11:30): what happened during
    # it, not its cause; this broker (no state in its line: before 2.1) prints no reason
    assert len(first["failed_members"]) == 2 and first["cause"] == "not_logged"
    assert len(first["during"]) == 2 and all("failed" in text for text in first["during"])
    assert illidan.iloc[1]["outcome"] == "open"
    failed = pd.read_parquet(out / "member_events").query("kind == 'failed'")
    assert sorted(failed["member"].unique()) == sorted([
        "kafka-python-1.3.5-3feb5deb-de82-40a4-8da9-1c6ec7d1ca4f",
        "kafka-python-1.4.7-d03089db-9df1-4464-bf06-4968df80bfa6",
        "kafka-python-1.4.7-50c01dbc-eab5-41aa-823b-3530d32f845d",
        "kafka-python-1.4.7-0094bb59-7cc1-4c80-9020-7c10c61bae98",
    ])
    assert list(pd.read_parquet(out / "empty_periods")["duration_ms"]) == [60_396]
    advice = " ".join(a["finding"] + " " + a["advice"] for a in summary["advice"])
    assert "kafka-python 1.3" in advice and "generation 158652" in advice
