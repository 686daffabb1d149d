"""What the logs prove, and no more (issue 35, section 1), on excerpts written from Kafka's
format strings (tests/data/excerpts-edges, both protocols, 0.10 to 4.x):

- a rebalance whose start is not in the input has no length, in the tables, the findings, the
  terminal, ``--json`` and the report;
- a later generation completes the rebalance that made the one before it;
- KIP-848 groups read as group epochs, with advice in that protocol's settings;
- a coordinator that fails to write (NotEnoughReplicas on __consumer_offsets) or answers
  NOT_COORDINATOR is a cause with advice;
- the session-timeout findings count the same things;
- empty input is one line and exit 2, nothing written.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from kafka_rebalance.cli import cli, logs_cmd, simulate_cmd  # noqa: F401  (importing registers the commands)
from kafka_rebalance.pipeline.advice import advise
from kafka_rebalance.pipeline.logparse.inputs import input_clusters
from kafka_rebalance.pipeline.logparse.local_engine import LocalResult, analyse_local
from kafka_rebalance.pipeline.logparse.parse import parse_lines
from kafka_rebalance.pipeline.logparse.schemas import STORY_TABLES
from kafka_rebalance.pipeline.logparse.story import tell
from kafka_rebalance.pipeline.report.logs import END_NOT_IN_THE_LOG, STARTED_BEFORE_THE_LOG
from tests.conftest import TEST_SYSLOG
from tests.pipeline.logs.frames import frames_of

DATA = Path(__file__).resolve().parents[2] / "data"
EDGES = DATA / "excerpts-edges"
EXPECTED = json.loads((EDGES / "expected.json").read_text())
SCENARIOS = Path(__file__).resolve().parents[3] / "examples" / "scenarios"
# A classic consumer's settings, which a KIP-848 group's advice must never name (its own are
# group.consumer.session.timeout.ms and group.consumer.heartbeat.interval.ms, set on the broker).
CLASSIC_ONLY = re.compile(r"(?<!group\.consumer\.)\b(?:session\.timeout\.ms|heartbeat\.interval\.ms)|cooperative-sticky"
                          r"|partition\.assignment\.strategy")


@cache
def analysed(name: str) -> LocalResult:
    path = str(EDGES / name)
    return analyse_local([(path, input_clusters([path])[path])], syslog=TEST_SYSLOG)


def run(args: list[str], stdin: str | bytes | None = None):
    result = CliRunner().invoke(cli, ["logs", *args], input=stdin, catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def _value(value):
    return None if value is None or value is pd.NA or (isinstance(value, float) and pd.isna(value)) else value


def test_the_edge_excerpts_cover_both_protocols_from_0_10_to_4():
    assert set(EXPECTED) == {p.name for p in EDGES.iterdir() if p.name != "expected.json"}
    versions = {case["kafka"] for case in EXPECTED.values()}
    assert {"0.10.1-0.10.2", "2.0", "2.4", "3.6", "3.8", "4.0"} <= versions
    assert any("GroupMetadataManager.java" in case["format_strings"] for case in EXPECTED.values())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_edge_excerpt_tells_what_its_lines_prove(name):
    expected = EXPECTED[name]
    result = analysed(name)
    rebalances = frames_of(result)["rebalances"].sort_values("start")
    told = [[row["group"], _value(row["old_generation"]), _value(row["generation"]), row["outcome"],
             bool(row["start_known"]), _value(row["duration_ms"])] for row in rebalances.to_dict("records")]
    assert told == expected["rebalances"]
    causes = {(row["group"], _value(row["generation"]), row["cause"]) for row in frames_of(result)["causes"].to_dict("records")}
    assert causes == {tuple(cause) for cause in expected["causes"]}
    assert {item.rule for item in advise(result.findings)} == set(expected["advice"])


def test_a_rebalance_that_started_before_the_log_has_no_length_and_no_part_in_the_median():
    result = analysed("01-broker-2.8-starts-with-stabilized.log")
    (finding,) = result.findings
    # 3.015 s of the one complete rebalance; the first, seen from its Stabilized line on, is not a 0.0 s one
    assert finding["median_duration_ms"] == finding["max_duration_ms"] == 3015
    first = frames_of(result)["rebalances"].sort_values("start").iloc[0]
    assert not first["start_known"] and pd.isna(first["duration_ms"])


def test_a_started_before_the_log_rebalance_is_said_so_in_the_terminal_json_and_report(tmp_path):
    path = str(EDGES / "01-broker-2.8-starts-with-stabilized.log")
    terminal = run([path, "--out", str(tmp_path / "t"), "--quiet"])
    assert terminal.exit_code == 0, terminal.output
    assert STARTED_BEFORE_THE_LOG in terminal.output and "0.0 s" not in terminal.output
    assert STARTED_BEFORE_THE_LOG in (tmp_path / "t" / "report.html").read_text()
    answer = json.loads(run([path, "--out", str(tmp_path / "j"), "--json", "--quiet"]).output)
    first, second = answer["top_groups"][0]["rebalances"]
    assert first["start_known"] is False and first["duration_ms"] is None and first["length"] == STARTED_BEFORE_THE_LOG
    assert second["start_known"] is True and second["duration_ms"] == 3015
    # the durations figure draws only what has a length: one rebalance for the group
    assert "billing (1)" in (tmp_path / "j" / "report.html").read_text()


def test_json_says_as_much_as_the_terminal(tmp_path):
    path = str(EDGES / "02-broker-2.4-closing-lines-missing.log")
    answer = json.loads(run([path, "--out", str(tmp_path / "j"), "--json", "--quiet"]).output)
    rebalances = answer["top_groups"][0]["rebalances"]
    failed = "consumer-2-9e1b7c44-0d2a-4b6f-8c3e-1a5f7d9b2e61"
    for rebalance in rebalances:
        assert {"start_known", "failed", "left", "joined", "during", "cause_basis", "protocol"} <= set(rebalance)
    by_generation = {r["generation"]: r for r in rebalances}
    assert by_generation[7]["failed"] == [failed] and by_generation[6]["failed"] == []
    assert by_generation[7]["cause_basis"] == ("the coordinator's reason for the rebalance names it, and a line "
                                               "before it shows it")
    assert by_generation[6]["length"] == END_NOT_IN_THE_LOG
    # what happened while a rebalance was open is told, never as its cause
    payments = json.loads(run([str(EDGES / "03-broker-3.6-not-enough-replicas.log"), "--out", str(tmp_path / "p"),
                               "--json", "--quiet"]).output)
    superseded = payments["top_groups"][0]["rebalances"][0]
    assert superseded["outcome"] == "superseded"
    assert superseded["during"] == ["a write to __consumer_offsets-44 was refused: NotEnoughReplicas"]
    assert superseded["joined"] == ["consumer-payments-3-6a0f2e91-3c4d-4b7a-9e15-0c8d2f6b7a13"]


def test_later_generations_complete_rebalances_whose_closing_line_is_missing():
    result = analysed("02-broker-2.4-closing-lines-missing.log")
    (finding,) = result.findings
    assert finding["open_rebalances"] == 0
    # no length without an end: none of the three has one, so no median
    assert finding["median_duration_ms"] is None
    # the member removed just before the Preparing line that names it caused that rebalance,
    # not "while a rebalance was under way"
    assert finding["failures"] == 1 and finding["failures_during_rebalances"] == 0


def test_a_refused_write_to_consumer_offsets_is_the_cause_and_the_advice_names_the_settings():
    result = analysed("03-broker-3.6-not-enough-replicas.log")
    causes = frames_of(result)["causes"]
    storage = causes[causes["cause"] == "storage_error"].iloc[0]
    assert any("NotEnoughReplicasException" in line for line in storage["evidence"])
    assert any("when storing group assignment during SyncGroup" in line for line in storage["evidence"])
    (advice,) = [a for a in advise(result.findings) if a.rule == "coordinator-writes"]
    assert "offsets.topic.replication.factor" in advice.advice and "min.insync.replicas" in advice.advice


def test_the_refused_write_line_and_its_exception_are_one_event_at_the_error_lines_time():
    lines = (EDGES / "03-broker-3.6-not-enough-replicas.log").read_text().splitlines(keepends=True)
    events = [e for e in parse_lines(lines, "x.log", syslog=TEST_SYSLOG) if e["kind"] == "coordinator_write_failed"]
    (event,) = events
    assert event["partition"] == 44 and event["line_no"] == 3 and event["time_ms"] is not None


def test_the_new_coordinators_load_and_unload_lines_are_a_coordinator_move():
    result = analysed("08-broker-4.0-coordinator-moved.log")
    causes = frames_of(result)["causes"]
    (moved,) = causes[causes["cause"] == "coordinator_moved"].to_dict("records")
    lines = " ".join(moved["evidence"])
    assert "Scheduling unloading of metadata for __consumer_offsets-18" in lines
    assert "Finished loading of metadata from __consumer_offsets-18" in lines


def test_each_protocols_advice_is_listed_under_its_own_title():
    """The report lists a finding once with its advice for every group it applies to: a KIP-848
    group's advice (its own settings) is never folded under a classic group's."""
    from kafka_rebalance.pipeline.advice import by_rule

    items = advise([*analysed("02-broker-2.4-closing-lines-missing.log").findings,
                    *analysed("06-broker-4.0-consumer-group-epochs.log").findings])
    titles = {title: {item.group for item in told} for title, told in by_rule(items)}
    assert titles["Members removed by session timeout"] == {"audit"}
    assert titles["Members removed by session timeout (KIP-848 consumer groups)"] == {"orders"}


def test_not_coordinator_told_to_a_client_is_a_cause_with_advice():
    result = analysed("05-broker-and-consumer-3.5-not-coordinator.log")
    causes = frames_of(result)["causes"]
    (row,) = causes[causes["cause"] == "coordinator_error"].to_dict("records")
    assert row["generation"] == 21 and "NOT_COORDINATOR" in row["evidence"][0]
    assert "coordinator-errors" in {a.rule for a in advise(result.findings)}


@pytest.mark.parametrize("name", ["06-broker-4.0-consumer-group-epochs.log", "07-broker-3.8-consumer-group-fenced.log"])
def test_kip848_groups_are_told_and_advised_in_their_own_settings(name):
    result = analysed(name)
    (finding,) = result.findings
    assert finding["protocols"] == ["consumer"]
    assert finding["open_rebalances"] == 0
    items = advise(result.findings)
    assert items
    for item in items:
        assert not CLASSIC_ONLY.search(item.advice), (item.rule, item.advice)
    (timeouts,) = [a for a in items if a.rule == "session-timeouts"]
    assert "group.consumer.session.timeout.ms" in timeouts.advice
    assert "group.consumer.heartbeat.interval.ms" in timeouts.advice
    (storms,) = [a for a in items if a.rule == "storms"]
    assert "group.consumer.assignors" in storms.advice
    # members joining, leaving and fenced, each with the epoch it caused
    rows = frames_of(result)["rebalances"].sort_values("start").to_dict("records")
    told = [(list(r["joined_members"]), list(r["left_members"]), list(r["failed_members"])) for r in rows]
    if name.startswith("06"):
        assert told == [(["Ab12cD34eF56gH78iJ90kA"], [], []), ([], [], ["Xy98wV76uT54sR32qP10oA"]),
                        ([], ["Ab12cD34eF56gH78iJ90kA"], [])]


def test_the_classic_groups_advice_keeps_the_classic_settings():
    items = advise(analysed("02-broker-2.4-closing-lines-missing.log").findings)
    (timeouts,) = [a for a in items if a.rule == "session-timeouts"]
    assert "session.timeout.ms" in timeouts.advice and "group.consumer." not in timeouts.advice


def test_a_simulated_kip848_group_reads_as_completed_epochs(tmp_path):
    """``simulate <a group_protocol: consumer scenario> --log FILE`` then ``logs``: every epoch
    the simulation completed is completed in the story, with advice in KIP-848's settings."""
    scenario = SCENARIOS / "consumer-groups" / "rolling-restart.yaml"
    log = tmp_path / "sim.log"
    simulated = CliRunner().invoke(cli, ["simulate", str(scenario), "--log", str(log)], catch_exceptions=False)
    assert simulated.exit_code == 0, simulated.output
    events = list(parse_lines(log.read_text().splitlines(keepends=True), "sim.log", syslog=TEST_SYSLOG))
    (group,) = {e["group"] for e in events}
    told = tell("default", group, events)
    assert {r["protocol"] for r in told["rebalances"]} == {"consumer"}
    assert all(r["outcome"] in ("stable", "superseded", "empty") for r in told["rebalances"])
    assert all(r["duration_ms"] is not None for r in told["rebalances"] if r["outcome"] == "stable")
    for item in advise(told["findings"]):
        assert not CLASSIC_ONLY.search(item.advice), (item.rule, item.advice)


def _broker(second: int, text: str) -> str:
    return f"[2024-05-01 10:{second // 60:02d}:{second % 60:02d},000] INFO [GroupCoordinator 1]: {text}\n"


def test_session_timeout_counts_agree_members_and_clients():
    """Four member ids removed, three clients: one restarted under a new member id. Both findings
    count clients the same way, and say what they count."""
    uuids = ["0b7a2f1e-1111-4222-8333-44445555666" + str(i) for i in range(4)]
    members = [f"consumer-g-0-{uuids[0]}", f"consumer-g-1-{uuids[1]}", f"consumer-g-2-{uuids[2]}",
               f"consumer-g-0-{uuids[3]}"]
    lines = [_broker(i * 5, f"Member {member} in group g has failed, removing it from the group")
             for i, member in enumerate(members)]
    events = list(parse_lines(lines, "g.log", syslog=TEST_SYSLOG))
    (finding,) = tell("default", "g", events)["findings"]
    assert (finding["failures"], finding["failed_clients"], finding["clustered_session_timeouts"]) == (4, 3, 3)
    told = {a.rule: a.finding for a in advise([finding])}
    assert told["session-timeouts"].startswith("4 member(s) removed by session timeout (3 different client(s))")
    assert told["clustered-timeouts"] == "3 different clients timed out within one minute"


@pytest.mark.parametrize("case", ["empty file", "/dev/null", "empty stdin", "blank stdin", "folder without logs"])
def test_empty_input_is_one_line_exit_2_and_nothing_written(tmp_path, case):
    out = tmp_path / "out"
    stdin = None
    match case:
        case "empty file":
            (tmp_path / "empty.log").write_text("")
            args, named = [str(tmp_path / "empty.log")], str(tmp_path / "empty.log")
        case "/dev/null":
            args, named = ["/dev/null"], "/dev/null"
        case "empty stdin":
            args, named, stdin = ["-"], "standard input", ""
        case "blank stdin":
            args, named, stdin = ["-"], "standard input", "\n  \n"
        case _:
            (tmp_path / "nothing").mkdir()
            args, named = [str(tmp_path / "nothing")], str(tmp_path / "nothing")
    result = run([*args, "--out", str(out)], stdin)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], result.stderr
    assert result.stdout == "" and not out.exists()


def test_an_empty_file_beside_a_log_is_read_with_it(tmp_path):
    (tmp_path / "empty.log").write_text("")
    result = run([str(tmp_path / "empty.log"), str(EDGES / "01-broker-2.8-starts-with-stabilized.log"),
                  "--out", str(tmp_path / "out"), "--quiet"])
    assert result.exit_code == 0, result.output


@pytest.mark.spark
def test_spark_tells_the_edge_excerpts_as_the_local_engine_does(spark, tmp_path):
    """One Spark run of the edge excerpts (the refused write's two lines cut by a byte scan, the
    coordinator's lines routed to every group): each excerpt's rows are the local engine's."""
    from kafka_rebalance.pipeline.logs import run_logs

    files = sorted(str(p) for p in EDGES.iterdir() if p.name != "expected.json")
    run_logs(spark, files, str(tmp_path / "out"), engine="spark", progress=False, syslog=TEST_SYSLOG)
    local = frames_of(analyse_local([(path, input_clusters([path])[path]) for path in files], syslog=TEST_SYSLOG))
    for table in STORY_TABLES:
        on_spark = pd.read_parquet(tmp_path / "out" / table)
        columns = [c for c in local[table].columns if c != "evidence_sources"]  # file:line: local only
        assert _rows(on_spark[columns]) == _rows(local[table][columns]), table


def _rows(frame: pd.DataFrame) -> list[str]:
    return sorted(json.dumps([_plain(v) for v in row], default=str) for row in frame.itertuples(index=False))


def _plain(value):
    if hasattr(value, "tolist") and not isinstance(value, str):
        value = value.tolist()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None if value is None or value is pd.NaT or value is pd.NA or (isinstance(value, float) and pd.isna(value)) \
        else value
