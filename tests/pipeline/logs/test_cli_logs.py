"""``kafka-rebalance logs`` end to end on the local engine (no Spark): pastes on stdin, the test
logs under tests/data/logs, clusters, skipped inputs, and no traceback on any input."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.cli import cli, logs_cmd  # noqa: F401  (importing logs_cmd registers the command)

DATA = Path(__file__).resolve().parents[2] / "data" / "logs"


def run(args: list[str], stdin: str | bytes | None = None):
    result = CliRunner().invoke(cli, ["logs", *args], input=stdin, catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def test_a_paste_on_stdin_gets_tables_and_a_report(tmp_path):
    paste = (DATA / "paste-docker-compose.md").read_text()
    result = run(["-", "--out", str(tmp_path / "out"), "--json"], paste)
    assert result.exit_code == 0, result.output
    facts = json.loads(result.output)
    assert facts["engine"] == "local" and facts["rebalances"] == 1 and facts["lines_unrecognised"] == 1
    rebalances = pd.read_parquet(tmp_path / "out" / "rebalances")
    row = rebalances.iloc[0]
    # the "has failed" line was wrapped by the terminal; it is read joined again
    assert (row["old_generation"], row["generation"], row["duration_ms"], row["cause"]) == (211, 212, 3018,
                                                                                           "session_timeout")
    assert list(row["failed_members"]) == ["notifier-1-a1a1a1a1-b2b2-4c3c-8d4d-e5e5e5e5e5e5"]
    html = (tmp_path / "out" / "report.html").read_text()
    assert "notifier" in html and "Not understood" in html and "taking ages" in html


def test_zero_recognised_lines_is_an_answer(tmp_path):
    result = run([str(DATA / "nothing-about-groups.log"), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0
    assert "none is a Kafka group-membership message" in result.output and "Rolled new log segment" in result.output
    for table in ("rebalances", "member_events", "storms", "empty_periods", "client_rebalances", "causes",
                  "unrecognised"):
        assert len(pd.read_parquet(tmp_path / "out" / table)) == 0
    assert "Nothing recognised" in (tmp_path / "out" / "report.html").read_text()


def test_every_test_log_together(tmp_path):
    # one cluster's broker and client logs: labelled so, they complete each other's story
    result = run([str(DATA), "--cluster", "shop", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    rebalances = pd.read_parquet(out / "rebalances").set_index(["group", "generation"])
    assert rebalances.loc[("billing", 19), "cause"] == "poll_timeout"
    assert rebalances.loc[("reports", 4), "outcome"] == "empty"
    assert rebalances.loc[("reports", 5), "cause"] == "static_joined"
    assert rebalances.loc[("ledger", 12), "protocol"] == "consumer"
    assert rebalances.loc[("ledger", 13), "cause"] == "session_timeout"
    assert rebalances.loc[("legacy-etl", 7), "cause"] == "metadata_changed"
    assert rebalances.loc[("search", 6), "cause"] == "leader_rejoined"
    assert rebalances.loc[("catalog", 10), "members"] == 2
    clients = pd.read_parquet(out / "client_rebalances")
    billing = clients[(clients["group"] == "billing") & (clients["generation"] == 18)].iloc[0]
    assert list(billing["assigned"]) == ["invoices-2", "invoices-3"] and billing["client_library"] == "java"
    assert set(clients["client_library"]) == {"java", "kafka-python", "librdkafka", "streams"}
    causes = pd.read_parquet(out / "causes")
    poll = causes[(causes["group"] == "billing") & (causes["generation"] == 19)]
    evidence = [line for lines in poll["evidence"] for line in lines]
    assert any("consumer poll timeout has expired" in line and "WARN" in line for line in evidence)  # client line
    assert any("GroupCoordinator" in line for line in evidence)                                      # broker line
    facts = summary(out)
    assert {c["source"].rsplit("/", 1)[-1] for c in facts["coverage"]} >= {"broker-3.9.log", "datadog.jsonl"}


def test_clusters_keep_same_named_groups_apart(tmp_path):
    first = tmp_path / "east.log"
    second = tmp_path / "west.log"
    shutil.copy(DATA / "broker-3.9.log", first)
    shutil.copy(DATA / "broker-3.9.log", second)
    result = run([str(first), str(second), "--cluster", f"east={first}", "--cluster", f"west={second}",
                  "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    rebalances = pd.read_parquet(tmp_path / "out" / "rebalances")
    assert sorted(set(rebalances["cluster"])) == ["east", "west"]
    per_cluster = rebalances.groupby("cluster").size()
    assert per_cluster["east"] == per_cluster["west"] == 4


def test_directories_gzip_and_skipped_binaries(tmp_path):
    logs = tmp_path / "logs"
    (logs / "old").mkdir(parents=True)
    shutil.copy(DATA / "broker-3.9.log", logs / "server.log")
    with gzip.open(logs / "old" / "server.log.2024-06-02.gz", "wt") as fh:
        fh.write((DATA / "broker-4.0-kip848.log").read_text())
    (logs / "core.bin").write_bytes(b"\x7fELF\x00\x00\x01")
    (logs / "broken.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    result = run([str(logs), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    facts = summary(tmp_path / "out")
    skipped = {Path(s["path"]).name for s in facts["skipped_inputs"]}
    assert {"core.bin", "broken.gz"} <= skipped
    assert facts["groups"] == 4


@pytest.mark.parametrize("args", [["/no/such/file.log"], ["--cluster", "=x", "-"]])
def test_bad_input_is_one_line_and_exit_2(args, tmp_path):
    result = run([*args, "--out", str(tmp_path / "out")], "")
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_a_binary_file_given_by_name_is_bad_input(tmp_path):
    binary = tmp_path / "dump.bin"
    binary.write_bytes(os.urandom(64) + b"\x00")
    result = run([str(binary), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2


@settings(max_examples=25, deadline=None)
@given(st.binary(max_size=2000))
def test_any_bytes_on_stdin_never_crash(tmp_path_factory, data):
    out = tmp_path_factory.mktemp("fuzz") / "out"
    result = run(["-", "--out", str(out)], data)
    if not data.decode("utf-8", errors="replace").strip():
        # nothing but blanks: bad input, one line naming it, nothing written
        assert result.exit_code == 2 and "standard input: empty input" in result.stderr, result.output
        assert not out.exists()
        return
    assert result.exit_code == 0, result.output
