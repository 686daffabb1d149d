"""Broker-log analysis: parsing with Spark's regexp_extract, rebuilding rebalances, storms,
the seed's log excerpts end to end, and agreement with the pure-Python parser."""

from __future__ import annotations

import gzip
import json
import math
import shutil

import pandas as pd
import pytest

from kafka_rebalance.protocol import logformat as lf

pytestmark = pytest.mark.spark

LEGACY = "[{ts}] INFO [GroupCoordinator 0]: {msg} (kafka.coordinator.group.GroupCoordinator)"
MODERN = ("[{ts}] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=12] {msg} "
          "(kafka.coordinator.group.GroupCoordinator)")


def lines_frame(spark, lines: list[str]):
    from pyspark.sql import functions as F

    rows = [(line, i) for i, line in enumerate(lines)]
    return spark.createDataFrame(rows, "value string, seq long").withColumn("seq", F.col("seq"))


def events_of(spark, lines: list[str]):
    from kafka_rebalance.pipeline.logs import parse_events

    return parse_events(lines_frame(spark, lines))


def rebalances_of(spark, lines: list[str]) -> pd.DataFrame:
    from kafka_rebalance.pipeline.logs import rebalances_from_events

    return rebalances_from_events(events_of(spark, lines)).orderBy("group", "start_ms").toPandas()


def test_parses_every_kind_in_both_formats(spark):
    lines = [
        MODERN.format(ts="2024-05-01 10:00:00,000", msg="Preparing to rebalance group g1 in state Stable with old "
                      "generation 4 (reason: Adding new member c3-1 with group instance id None)."),
        MODERN.format(ts="2024-05-01 10:00:03,050", msg="Stabilized group g1 generation 5 with 3 members."),
        MODERN.format(ts="2024-05-01 10:00:03,060", msg="Assignment received from leader c1-1 for group g1 for "
                      "generation 5. The group has 3 members, 0 of which are static."),
        MODERN.format(ts="2024-05-01 10:01:00,000", msg="[Group g1] Member c2-1 has left group through explicit "
                      "`LeaveGroup` request; client reason: the consumer is being closed"),
        LEGACY.format(ts="2019-07-17 15:22:37,664", msg="Member kafka-python-1.3.5-3feb5deb-de82-40a4-8da9-1c6ec7d1ca4f "
                      "in group old has failed, removing it from the group"),
        LEGACY.format(ts="2019-07-17 15:20:37,266", msg="Group old with generation 742 is now empty (__consumer_offsets-9)"),
        "[2024-05-01 10:00:00,000] INFO [Log partition=t-0] Rolled new log segment (kafka.log.LocalLog)",
        "[2024-05-01 10:00:00,000] INFO [GroupCoordinator 0]: Loading group metadata for g1 (kafka.coordinator.group.GroupCoordinator)",
        MODERN.format(ts="not a time", msg="Stabilized group g1 generation 5 with 3 members."),
    ]
    events = events_of(spark, lines).orderBy("seq").toPandas()
    assert list(events["kind"]) == ["preparing_rebalance", "stabilized", "assignment_received", "member_left",
                                    "member_failed", "group_empty"]
    first = events.iloc[0]
    assert (first["group"], first["state"], first["old_generation"], first["partition"]) == ("g1", "Stable", 4, 12)
    assert first["reason"] == "Adding new member c3-1 with group instance id None"
    assert events.iloc[1]["members"] == 3
    assert events.iloc[2]["leader"] == "c1-1"
    assert events.iloc[3]["member"] == "c2-1" and events.iloc[3]["reason"] == "the consumer is being closed"
    assert events.iloc[5]["partition"] == 9 and events.iloc[5]["generation"] == 742
    assert str(events.iloc[0]["time"]) == "2024-05-01 10:00:00"


def test_no_break_space_indented_lines_parse(spark):
    line = "\u00a0  " + LEGACY.format(ts="2020-01-06 12:11:23,808", msg="Preparing to rebalance group illidan-c "
                                       "with old generation 158651 (__consumer_offsets-9)")
    events = events_of(spark, [line]).toPandas()
    assert list(events["old_generation"]) == [158651]
    assert lf.parse_line(line) is not None  # the Python parser reads it too


def test_restart_inside_a_rebalance_is_one_rebalance(spark):
    lines = [
        MODERN.format(ts="2024-05-01 10:00:00,000", msg="Preparing to rebalance group g in state Stable with old "
                      "generation 1 (reason: x)."),
        MODERN.format(ts="2024-05-01 10:00:01,000", msg="Stabilized group g generation 2 with 2 members."),
        MODERN.format(ts="2024-05-01 10:00:01,500", msg="Preparing to rebalance group g in state CompletingRebalance "
                      "with old generation 2 (reason: y)."),
        MODERN.format(ts="2024-05-01 10:00:02,000", msg="Stabilized group g generation 3 with 2 members."),
        MODERN.format(ts="2024-05-01 10:00:02,010", msg="Assignment received from leader m1 for group g for "
                      "generation 3. The group has 2 members, 0 of which are static."),
    ]
    rebalances = rebalances_of(spark, lines)
    assert len(rebalances) == 1
    row = rebalances.iloc[0]
    assert (row["old_generation"], row["generation"], row["duration_ms"], row["reason"]) == (1, 3, 2010, "x")
    assert row["outcome"] == "stable" and row["leader"] == "m1"


def test_failure_in_the_same_millisecond_causes_the_next_rebalance(spark):
    lines = [
        LEGACY.format(ts="2020-01-06 12:11:40,980", msg="Member kafka-python-1.4.7-0094bb59-7cc1-4c80-9020-7c10c61bae98"
                      " in group illidan-c has failed, removing it from the group"),
        LEGACY.format(ts="2020-01-06 12:11:40,980", msg="Preparing to rebalance group illidan-c with old generation "
                      "158652 (__consumer_offsets-9)"),
        LEGACY.format(ts="2020-01-06 12:12:00,000", msg="Member other-1 in group illidan-c has failed, removing it "
                      "from the group"),
    ]
    rebalances = rebalances_of(spark, lines)
    assert len(rebalances) == 1
    row = rebalances.iloc[0]
    assert row["outcome"] == "open" and pd.isna(row["end"]) and pd.isna(row["generation"])
    assert list(row["failed_members"]) == ["kafka-python-1.4.7-0094bb59-7cc1-4c80-9020-7c10c61bae98", "other-1"]


def _burst(group: str, starts_s: list[int], failing: str | None = None) -> list[str]:
    lines, gen = [], 10
    for s in starts_s:
        ts = f"2024-05-01 10:{s // 60:02d}:{s % 60:02d},000"
        if failing:
            lines.append(MODERN.format(ts=ts, msg=f"Member {failing} in group {group} has failed, removing it from "
                                       "the group."))
        lines.append(MODERN.format(ts=ts, msg=f"Preparing to rebalance group {group} in state Stable with old "
                                   f"generation {gen} (reason: r)."))
        ts2 = f"2024-05-01 10:{s // 60:02d}:{s % 60:02d},500"
        lines.append(MODERN.format(ts=ts2, msg=f"Assignment received from leader m for group {group} for generation "
                                   f"{gen + 1}. The group has 2 members, 0 of which are static."))
        gen += 1
    return lines


def test_storms_and_fail_rejoin_loops(spark):
    from kafka_rebalance.pipeline.logs import StormRule, rebalances_from_events, storms_from_rebalances

    member = "kafka-python-1.3.5-3feb5deb-de82-40a4-8da9-1c6ec7d1ca4f"
    lines = (_burst("loop", [0, 60, 120, 180], failing=member)  # every minute, same client
             + _burst("calm", [0, 1200, 2400])                   # 20 minutes apart: no storm
             + _burst("burst", [0, 10, 20, 1000]))               # three close together, then one alone
    rebalances = rebalances_from_events(events_of(spark, lines))
    storms = storms_from_rebalances(rebalances, StormRule(gap_ms=300_000, min_rebalances=3)).toPandas()
    by_group = storms.set_index("group")
    assert sorted(by_group.index) == ["burst", "loop"]
    assert by_group.loc["loop", "rebalances"] == 4 and by_group.loc["loop", "kind"] == "fail-rejoin loop"
    assert by_group.loc["loop", "top_client"] == "kafka-python-1.3.5"
    assert by_group.loc["burst", "rebalances"] == 3 and by_group.loc["burst", "kind"] == "burst"
    assert by_group.loc["burst", "duration_ms"] == 20_500


def test_empty_periods(spark):
    from kafka_rebalance.pipeline.logs import empty_periods_from_events

    lines = [
        LEGACY.format(ts="2019-07-17 15:20:37,266", msg="Preparing to rebalance group a with old generation 741 "
                      "(__consumer_offsets-9)"),
        LEGACY.format(ts="2019-07-17 15:20:37,266", msg="Group a with generation 742 is now empty (__consumer_offsets-9)"),
        LEGACY.format(ts="2019-07-17 15:21:37,662", msg="Preparing to rebalance group a with old generation 742 "
                      "(__consumer_offsets-9)"),
    ]
    periods = empty_periods_from_events(events_of(spark, lines)).toPandas()
    assert list(periods["duration_ms"]) == [60_396] and list(periods["generation"]) == [742]


def test_seed_document_end_to_end(spark, seed_document, tmp_path):
    """The seed document itself (Chinese prose with the two pasted log excerpts) as a log."""
    from kafka_rebalance.pipeline.logs import run_logs

    log = tmp_path / "seed002.txt"
    shutil.copy(seed_document, log)
    result = run_logs(spark, [str(log)], str(tmp_path / "out"), progress=False)
    out = tmp_path / "out"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["lines_read"] == len(log.read_text(encoding="utf-8").splitlines())
    # 13 pasted coordinator lines, one of them quoted twice in the prose.
    assert summary["lines_matched"] == 14
    assert summary["lines_skipped"] == summary["lines_read"] - 14
    assert summary["groups"] == 2
    rebalances = pd.read_parquet(out / "rebalances").sort_values(["group", "start"])
    assert {"group", "generation", "start", "end", "duration_ms", "reason", "members"} <= set(rebalances.columns)
    answer = rebalances[rebalances["group"] == "answer_action"]
    assert list(answer["generation"]) == [742, 743]
    assert list(answer["duration_ms"]) == [0, 30_002]
    assert list(answer["outcome"]) == ["empty", "stable"]
    illidan = rebalances[rebalances["group"] == "illidan-c"]
    assert list(illidan["old_generation"]) == [158651, 158652]
    first = illidan.iloc[0]
    assert first["generation"] == 158652 and first["duration_ms"] == 7_171 and math.isnan(first["members"])
    assert len(first["failed_members"]) == 2
    events = pd.read_parquet(out / "member_events")
    assert set(events.columns) >= {"group", "member", "time", "kind"}
    failed = events[events["kind"] == "failed"].sort_values("time")
    assert list(failed["member"]) == [
        "kafka-python-1.4.7-d03089db-9df1-4464-bf06-4968df80bfa6",
        "kafka-python-1.4.7-50c01dbc-eab5-41aa-823b-3530d32f845d",
        "kafka-python-1.4.7-0094bb59-7cc1-4c80-9020-7c10c61bae98",
        "kafka-python-1.3.5-3feb5deb-de82-40a4-8da9-1c6ec7d1ca4f",
    ] or sorted(failed["member"]) == sorted([
        "kafka-python-1.3.5-3feb5deb-de82-40a4-8da9-1c6ec7d1ca4f",
        "kafka-python-1.4.7-d03089db-9df1-4464-bf06-4968df80bfa6",
        "kafka-python-1.4.7-50c01dbc-eab5-41aa-823b-3530d32f845d",
        "kafka-python-1.4.7-0094bb59-7cc1-4c80-9020-7c10c61bae98",
    ])
    periods = pd.read_parquet(out / "empty_periods")
    assert list(periods["duration_ms"]) == [60_396]
    advice = " ".join(a["finding"] + " " + a["advice"] for a in summary["advice"])
    assert "kafka-python 1.3" in advice and "generation 158652" in advice
    html = (out / "report.html").read_text()
    assert "answer_action" in html and "<svg" in html
    assert "<script" not in html and "<link" not in html and 'src="http' not in html and "url(http" not in html
    assert {p.name for p in (out / "figures").iterdir()} == {"rebalance_timeline.csv", "rebalance_durations.csv",
                                                             "storms.csv"}
    assert not list(out.glob(".staging-*"))
    assert result.report.endswith("report.html")


def test_generated_log_agrees_with_the_python_parser(spark, tmp_path):
    """Spark's window-function reconstruction gives exactly the rebalances of
    ``logformat.parse_rebalances`` on a generated broker log with noise, restarts and storms."""
    import logs_generator

    from kafka_rebalance.pipeline.logs import parse_events, read_lines, rebalances_from_events

    log = tmp_path / "server.log"
    logs_generator.generate(log, 600_000, groups=40, seed=3)
    expected = lf.parse_rebalances(log.open(encoding="utf-8"))
    got = rebalances_from_events(parse_events(read_lines(spark, [str(log)]))).toPandas()

    def clean(value):
        return None if value is None or (isinstance(value, float) and math.isnan(value)) else value

    def as_key(group, start, end, generation, members, reason, failed, left, empty):
        return (group, clean(start), clean(end), clean(generation), clean(members), reason, tuple(failed), tuple(left),
                bool(empty))

    want = sorted((as_key(r["group"], r["start_ms"], r["end_ms"], r["generation"], r["members"], r["reason"],
                          r["failed_members"], r["left_members"], r["empty"]) for r in expected), key=repr)
    have = sorted((as_key(r.group, r.start_ms, r.end_ms, r.generation, r.members, r.reason, r.failed_members,
                          r.left_members, r.outcome == "empty") for r in got.itertuples()), key=repr)
    assert len(want) > 100
    assert have == want


def test_reads_gzip_rotated_files_and_directories(spark, tmp_path):
    from kafka_rebalance.pipeline.io import expand_log_paths
    from kafka_rebalance.pipeline.logs import parse_events, read_lines

    lines = _burst("g", [0, 60, 120])
    logs = tmp_path / "logs"
    (logs / "old").mkdir(parents=True)
    (logs / "server.log").write_text("\n".join(lines[:3]) + "\n")
    (logs / "server.log.1").write_text("\n".join(lines[3:4]) + "\n")
    with gzip.open(logs / "old" / "server.log.2024-05-01-10.gz", "wt") as fh:
        fh.write("\n".join(lines[4:]) + "\n")
    (logs / ".hidden").write_text(lines[0] + "\n")
    files = expand_log_paths([str(logs)])
    assert len(files) == 3
    events = parse_events(read_lines(spark, files)).toPandas()
    assert len(events) == len(lines)


def test_member_events_name_joins_failures_and_leaves(spark):
    from kafka_rebalance.pipeline.logs import member_events_from_events

    lines = [
        MODERN.format(ts="2024-05-01 10:00:00,000", msg="Preparing to rebalance group g1 in state Stable with old "
                      "generation 4 (reason: Adding new member c3-9f1c2d3e-0000-4000-8000-00000000abcd with group "
                      "instance id None; client reason: need to re-join with the given member-id)."),
        MODERN.format(ts="2024-05-01 10:01:00,000", msg="[Group g1] Member c2-1 has left group through explicit "
                      "`LeaveGroup` request; client reason: the consumer is being closed"),
        LEGACY.format(ts="2024-05-01 10:02:00,000", msg="Member c1-1 in group g1 has failed, removing it from the group"),
        MODERN.format(ts="2024-05-01 10:03:00,000", msg="Preparing to rebalance group g1 in state Stable with old "
                      "generation 5 (reason: removing member c2-1 on LeaveGroup)."),
    ]
    rows = member_events_from_events(events_of(spark, lines)).orderBy("time").toPandas()
    assert list(zip(rows["kind"], rows["member"], strict=True)) == [
        ("joined", "c3-9f1c2d3e-0000-4000-8000-00000000abcd"), ("left", "c2-1"), ("failed", "c1-1")]
    assert rows["client"].iloc[0] == "c3"
