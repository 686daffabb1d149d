"""Fuzz every command's input: whatever a user hands over, the answer is a result (exit 0) or one
line on stderr naming the file or option and the problem (exit 2): never a traceback, never a
hang, never a temporary file's name, and earlier results in --out survive."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.fuzzing import (
    assert_one_line_bad_input,
    assert_success_or_bad_input,
    encodings,
    mutated,
    run_cli,
    write,
)

SNAPSHOT = {
    "topics": {"t0": 3, "t1": {"partitions": 2, "racks": [["r1"], ["r2"]]}},
    "members": [
        {"member_id": "a", "topics": ["t0", "t1"], "owned": ["t0-0"], "generation": 1, "strategies": ["sticky"]},
        {"member_id": "b", "topics": ["t0"], "rack": "r1", "group_instance_id": "i-b", "strategies": ["sticky"]},
    ],
}
SCENARIO = {
    "name": "fuzz",
    "group": "g",
    "config": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 2000, "max_poll_interval_ms": 20000,
               "group_initial_rebalance_delay_ms": 0},
    "topics": {"t0": 2, "t1": 1},
    "consumers": [{"id": "c1", "strategies": ["cooperative-sticky"], "subscribe": ["t0", "t1"]},
                  {"id": "c2", "strategies": ["cooperative-sticky"], "pattern": "t.*", "group_instance_id": "s2",
                   "processing_ms_per_record": 1}],
    "produce": [{"topic": "t0", "records_per_s": 20, "keys": 5}],
    "events": [{"at_ms": 0, "join": "c1"}, {"at_ms": 100, "join": "c2"}, {"at_ms": 5000, "pause": "c1", "for_ms": 100},
               {"at_ms": 6000, "create_topic": {"name": "t2", "partitions": 1}},
               {"at_ms": 7000, "add_partitions": {"topic": "t0", "count": 3}},
               {"at_ms": 8000, "restart": "c2", "after_ms": 10}, {"at_ms": 9000, "coordinator_failover": {}}],
    "end_ms": 20000,
}
SWEEP = {"name": "fuzz", "seeds": [1], "runs": [{"scenario": SCENARIO, "grid": {"strategy": ["range"]}}]}

FUZZ = settings(max_examples=int(__import__("os").environ.get("FUZZ_EXAMPLES", "100")), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture
def scratch():
    with tempfile.TemporaryDirectory(prefix="fuzz-") as folder:
        yield Path(folder)


# ---------------------------------------------------------------------------------------- assign

@FUZZ
@given(st.data())
def test_assign_fuzzed_snapshot(capsys, scratch, data):
    document = data.draw(mutated(SNAPSHOT))
    path = write(scratch, "snapshot.json", data.draw(encodings(document)))
    answer = run_cli(capsys, ["assign", path])
    assert_success_or_bad_input(answer, "snapshot.json")
    if answer.code == 0 and "no members" not in answer.err:
        assert set(json.loads(answer.out)) == {"strategy", "protocol", "assignment"}


@FUZZ
@given(st.binary(max_size=300))
def test_assign_arbitrary_bytes(capsys, scratch, raw):
    answer = run_cli(capsys, ["assign", write(scratch, "junk.json", raw)])
    assert_success_or_bad_input(answer, "junk.json")


# -------------------------------------------------------------------------------------- simulate

@FUZZ
@given(st.data())
def test_simulate_fuzzed_scenario(capsys, scratch, data):
    document = data.draw(mutated(SCENARIO))
    path = write(scratch, "scenario.yaml", data.draw(encodings(document)))
    log = scratch / "server.log"
    log.write_text("earlier log\n")
    answer = run_cli(capsys, ["simulate", path, "--json", "--log", str(log)])
    assert_success_or_bad_input(answer, "scenario.yaml")
    if answer.code != 0:
        assert log.read_text() == "earlier log\n"
    assert [p.name for p in scratch.iterdir() if p.name.startswith(".")] == []


@FUZZ
@given(st.text(max_size=200))
def test_simulate_arbitrary_text(capsys, scratch, text):
    answer = run_cli(capsys, ["simulate", write(scratch, "text.yaml", text.encode("utf-8", "surrogatepass"))])
    assert_success_or_bad_input(answer, "text.yaml")


# ------------------------------------------------------------------------------------------- lab

class _LabStub:
    """Stands in for Spark: the fuzz is about the checks made before any task starts."""

    def __init__(self):
        self.calls = 0

    def run_lab(self, spark, sweep, out_dir, tasks=None, progress=None):
        from kafka_rebalance.pipeline.lab import LabRun
        from kafka_rebalance.pipeline.migration import MigrationAnswer
        from kafka_rebalance.pipeline.report.lab import LabAnswer

        self.calls += 1
        answer = LabAnswer(sweep.name, [("simulations", len(sweep.runs))], [], MigrationAnswer((), ()), [], out_dir, f"{out_dir}/report.html")
        return LabRun(out_dir=out_dir, report=f"{out_dir}/report.html", runs=len(sweep.runs), failed=0, summary=None,
                      answer=answer)


@pytest.fixture
def lab_stub(monkeypatch):
    stub = _LabStub()
    monkeypatch.setattr("kafka_rebalance.pipeline.lab.run_lab", stub.run_lab)
    monkeypatch.setattr("kafka_rebalance.pipeline.spark.build_session", lambda *a, **k: None)
    return stub


@FUZZ
@given(st.data())
def test_lab_fuzzed_sweep(capsys, scratch, lab_stub, data):
    document = data.draw(mutated(SWEEP))
    path = write(scratch, "sweep.yaml", data.draw(encodings(document)))
    calls = lab_stub.calls
    answer = run_cli(capsys, ["lab", path, "--out", str(scratch / "out")])
    assert_success_or_bad_input(answer, "sweep.yaml")
    assert lab_stub.calls == calls + (answer.code == 0)


@FUZZ
@given(master=st.one_of(st.text(max_size=12), st.sampled_from(["local[0]", "local[-1]", "spark://", "local[*]x"])),
       tasks=st.one_of(st.integers(-3, 3).map(str), st.sampled_from(["10**9", "1e3", "x", "99999999999999999999"])))
def test_lab_fuzzed_options(capsys, scratch, lab_stub, master, tasks):
    answer = run_cli(capsys, ["lab", "--master", master, "--tasks", tasks, "--out", str(scratch / "o")])
    assert_success_or_bad_input(answer, "--")


# ---------------------------------------------------------------------------- path-level problems

@pytest.mark.parametrize("command", [["assign"], ["simulate"], ["lab"]])
def test_path_problems_name_the_path(capsys, tmp_path, command, lab_stub):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    good = json.dumps(SNAPSHOT if command == ["assign"] else SCENARIO if command == ["simulate"] else SWEEP).encode()
    cases = {
        str(tmp_path / "missing.yaml"): "no such file",
        str(folder): "is a directory",
        write(tmp_path, "empty.yaml", b""): "empty file",
        write(tmp_path, "blank.yaml", b"  \n\n"): "empty file",
        write(tmp_path, "corrupt.gz", b"\x1f\x8b\x08\x00" + b"\x00" * 20): "corrupt gzip",
        write(tmp_path, "truncated.yaml.gz", __import__("gzip").compress(good)[:30]): "corrupt gzip",
        write(tmp_path, "binary.yaml", bytes(range(256)) * 4): "binary data",
        write(tmp_path, "latin1.yaml", "caf\xe9: 1".encode("latin-1")): "not UTF-8",
        str(tmp_path / "missing" / "deeper.yaml"): "no such file",
    }
    for path, problem in cases.items():
        answer = run_cli(capsys, [*command, path])
        assert_one_line_bad_input(answer, path, problem)


def test_yaml_bombs_and_recursion_are_refused(capsys, tmp_path):
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    bomb = write(tmp_path, "bomb.yaml", "\n".join(lines).encode())
    assert_one_line_bad_input(run_cli(capsys, ["simulate", bomb]), "bomb.yaml", "alias bomb")
    recursive = write(tmp_path, "loop.yaml", b"&a [*a]")
    assert_one_line_bad_input(run_cli(capsys, ["simulate", recursive]), "loop.yaml", "refers to itself")
    deep = write(tmp_path, "deep.json", b"[" * 50_000 + b"]" * 50_000)
    assert_one_line_bad_input(run_cli(capsys, ["simulate", deep]), "deep.json", "nested")
    assert_one_line_bad_input(run_cli(capsys, ["assign", deep]), "deep.json", "nested")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"end_ms": 10**17}, "end_ms"),
        ({"end_ms": None, "events": [{"at_ms": 10**15, "join": "c1"}]}, "events"),
        ({"topics": {"t0": 10**12, "t1": 1}}, "topics.t0"),
        ({"topics": {"t0": 90_000, "t1": 20_000}}, "topics"),
        ({"produce": [{"topic": "t0", "records_per_s": 10, "keys": 10**9}]}, "produce[0].keys"),
        ({"produce": [{"topic": "t0", "records_per_s": 1e300}]}, "produce[0].records_per_s"),
        ({"config": {"heartbeat_interval_ms": 1, "session_timeout_ms": 6000}, "end_ms": 6 * 86_400_000}, "config"),
    ],
)
def test_sizes_no_run_can_hold_are_refused_before_running(capsys, tmp_path, change, field):
    scenario = {**SCENARIO, **change}
    if scenario.get("end_ms") is None:
        scenario.pop("end_ms")
    path = write(tmp_path, "big.yaml", json.dumps(scenario).encode())
    assert_one_line_bad_input(run_cli(capsys, ["simulate", path]), "big.yaml", f"{field}:")


@pytest.mark.parametrize(
    ("snapshot", "field"),
    [
        ({"topics": {"t": 10**12}, "members": [{"member_id": "a", "topics": ["t"]}]}, "topics.t"),
        ({"topics": {"t": 6_000_000, "u": 6_000_000}, "members": []}, "topics"),
        ({"topics": {"t": 1}, "members": [{"member_id": "a", "topics": ["t"], "generation": 2**40}]},
         "members[0].generation"),
        ({"topics": {"t": 1e400}, "members": []}, "topics.t"),
    ],
)
def test_snapshot_sizes_no_machine_holds(capsys, tmp_path, snapshot, field):
    path = write(tmp_path, "huge.json", json.dumps(snapshot).encode())
    assert_one_line_bad_input(run_cli(capsys, ["assign", path]), "huge.json", field)


def test_valid_but_empty_inputs_exit_0_with_a_message(capsys, tmp_path):
    empty_group = write(tmp_path, "nobody.json", b'{"topics": {"t": 2}, "members": []}')
    answer = run_cli(capsys, ["assign", empty_group])
    assert answer.code == 0 and answer.out == "" and "no members" in answer.err
    quiet = write(tmp_path, "quiet.yaml", json.dumps({**SCENARIO, "events": []}).encode())
    answer = run_cli(capsys, ["simulate", quiet])
    assert answer.code == 0 and answer.out == "" and "no events" in answer.err


def test_output_paths_are_checked_before_any_work(capsys, tmp_path, lab_stub):
    scenario = write(tmp_path, "s.yaml", json.dumps(SCENARIO).encode())
    (tmp_path / "a-folder").mkdir()
    assert_one_line_bad_input(run_cli(capsys, ["simulate", scenario, "--log", str(tmp_path / "a-folder")]),
                              "--log", "is a directory")
    assert_one_line_bad_input(run_cli(capsys, ["simulate", scenario, "--log", str(tmp_path / "no" / "x.log")]),
                              "--log", "no such directory")
    (tmp_path / "a-file").write_text("keep me")
    assert_one_line_bad_input(run_cli(capsys, ["lab", "--out", str(tmp_path / "a-file")]), "--out",
                              "not a directory")
    assert_one_line_bad_input(run_cli(capsys, ["lab", "--out", str(tmp_path / "a-file" / "sub")]), "--out")
    assert (tmp_path / "a-file").read_text() == "keep me"
    assert lab_stub.calls == 0


def test_stdin_that_is_a_terminal_is_refused_not_waited_on(capsys, monkeypatch):
    class Terminal:
        def isatty(self):
            return True

    monkeypatch.setattr("sys.stdin", Terminal())
    assert_one_line_bad_input(run_cli(capsys, ["assign", "-"]), "standard input", "terminal")


def test_an_unexpected_error_is_one_line_not_a_traceback(capsys, monkeypatch, tmp_path):
    def broken(*args, **kwargs):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr("kafka_rebalance.cli.simulate_cmd.run_simulation", broken)
    answer = run_cli(capsys, ["simulate", write(tmp_path, "s.yaml", json.dumps(SCENARIO).encode())])
    assert answer.code == 1 and answer.err == (
        "kafka-rebalance: internal error: RuntimeError: boom (set KAFKA_REBALANCE_DEBUG=1 for the traceback)\n")

