"""The CLI contract: JSON out, table format, and bad input as one line on stderr with exit 2."""

from __future__ import annotations

import json

import pytest

from kafka_rebalance.cli import main
from tests.conftest import ROOT

EXAMPLE = str(ROOT / "examples" / "snapshots" / "sticky-c1-removed.json")


def run_cli(capsys, monkeypatch, args, stdin=None):
    if stdin is not None:
        import io

        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


def test_assign_prints_the_spec_object(capsys, monkeypatch):
    code, out, err = run_cli(capsys, monkeypatch, ["assign", EXAMPLE])
    assert code == 0 and err == ""
    assert json.loads(out) == {
        "strategy": "sticky",
        "protocol": "EAGER",
        "assignment": {"c0": ["t0-0", "t1-1", "t2-0", "t3-0"], "c2": ["t0-1", "t1-0", "t2-1", "t3-1"]},
    }


def test_assign_table_and_strategy_override(capsys, monkeypatch):
    code, out, _ = run_cli(capsys, monkeypatch, ["assign", EXAMPLE, "--strategy", "roundrobin", "--format", "table"])
    assert code == 0
    assert "roundrobin" in out and "t0-0, t1-0, t2-0, t3-0" in out


def test_assign_reads_stdin(capsys, monkeypatch):
    snapshot = {"topics": {"t": 2}, "members": [{"member_id": "a", "topics": ["t"]}]}
    code, out, _ = run_cli(capsys, monkeypatch, ["assign", "-", "--strategy", "range"], stdin=json.dumps(snapshot))
    assert code == 0 and json.loads(out)["assignment"] == {"a": ["t-0", "t-1"]}


@pytest.mark.parametrize(
    ("stdin", "args", "message"),
    [
        ("{not json", [], "invalid JSON at line 1 column 2"),
        ('{"topics": {"t": -3}, "members": []}', [], "topics.t: partition count must not be negative"),
        ('{"topics": {"t": 1}, "members": [{"member_id": "a", "topics": ["t"]}, {"member_id": "a", "topics": ["t"]}]}', [], "duplicate member_id"),
        ('{"topics": {"t": 1}, "members": [{"member_id": "a", "topics": ["t"], "owned": ["t-x"]}]}', [], "members[0].owned"),
        ('{"topics": {"t": 1}, "members": [{"member_id": "a", "topics": ["t"]}]}', ["--strategy", "bogus"], "strategy: unknown strategy 'bogus'"),
        ('{"topics": {"t": 1}, "members": [{"member_id": "a", "topics": ["t"], "strategies": ["range"]}, {"member_id": "b", "topics": ["t"], "strategies": ["sticky"]}]}', [], "no strategy is supported by every member"),
        ("\xff", [], ""),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_on_stdout(capsys, monkeypatch, stdin, args, message):
    code, out, err = run_cli(capsys, monkeypatch, ["assign", "-", *args], stdin=stdin)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("kafka-rebalance: ")
    assert message in err
    assert "Traceback" not in err


def test_missing_file_and_unknown_option(capsys, monkeypatch):
    code, out, err = run_cli(capsys, monkeypatch, ["assign", "/nonexistent/snapshot.json"])
    assert (code, out) == (2, "") and err == "kafka-rebalance: /nonexistent/snapshot.json: no such file\n"
    code, out, err = run_cli(capsys, monkeypatch, ["assign", EXAMPLE, "--bogus"])
    assert code == 2 and out == "" and err.count("\n") == 1


# load-aware (issue 22): partition_loads and strategy_options


@pytest.mark.parametrize(
    ("loads", "expected"),
    [
        ("[1, -2, 3]", "partition_loads.orders: load of partition 1 is negative"),
        ("[1, NaN, 3]", "partition_loads.orders: load of partition 1 is not a finite number"),
        ("[1, 2]", "partition_loads.orders: has 2 loads for 3 partitions"),
    ],
)
def test_assign_rejects_bad_loads_in_one_line_naming_the_topic(capsys, monkeypatch, tmp_path, loads, expected):
    path = tmp_path / "snapshot.json"
    path.write_text('{"topics": {"orders": 3}, "members": [{"member_id": "c0", "topics": ["orders"]}], '
                    f'"partition_loads": {{"orders": {loads}}}}}')
    code, out, err = run_cli(capsys, monkeypatch, ["assign", str(path), "--strategy", "load-aware"])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and expected in err


def test_assign_load_aware_puts_hot_partitions_apart(capsys, monkeypatch):
    # Sticky's round-robin puts partitions 0 and 2 (the hot ones) on c0.
    snapshot = {"topics": {"orders": 4}, "members": [{"member_id": "c0", "topics": ["orders"]}, {"member_id": "c1", "topics": ["orders"]}],
                "partition_loads": {"orders": [100, 1, 100, 1]}}
    code, out, _ = run_cli(capsys, monkeypatch, ["assign", "-", "--strategy", "sticky"], stdin=json.dumps(snapshot))
    assert json.loads(out)["assignment"]["c0"] == ["orders-0", "orders-2"]
    code, out, _ = run_cli(capsys, monkeypatch, ["assign", "-", "--strategy", "load-aware"], stdin=json.dumps(snapshot))
    assert code == 0
    result = json.loads(out)
    assert result["protocol"] == "COOPERATIVE"
    hot = [sum(p in ("orders-0", "orders-2") for p in parts) for parts in result["assignment"].values()]
    assert hot == [1, 1]
    snapshot["strategy_options"] = {"rebalance_protocol": "EAGER", "max_count_skew": 2}
    code, out, _ = run_cli(capsys, monkeypatch, ["assign", "-", "--strategy", "load-aware"], stdin=json.dumps(snapshot))
    assert json.loads(out)["protocol"] == "EAGER"
