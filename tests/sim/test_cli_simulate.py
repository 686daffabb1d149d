from __future__ import annotations

import json
import subprocess
import sys

from tests.sim.helpers import SCENARIOS

CLI = [sys.executable, "-m", "kafka_rebalance.cli"]


def run(*args):
    code = "import sys; from kafka_rebalance.cli import main; main(sys.argv[1:])"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)


def test_json_and_log(tmp_path):
    log = tmp_path / "server.log"
    done = run("simulate", str(SCENARIOS / "cooperative-join.yaml"), "--json", "--log", str(log))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["metrics"]["rebalances"] == 3
    # the rebalances the log tells: tests/pipeline/logs/test_coordinator_lines.py
    assert "Stabilized group" in log.read_text()


def test_the_answer_first_the_timeline_on_request(tmp_path):
    done = run("simulate", str(SCENARIOS / "eager-join.yaml"))
    assert done.returncode == 0
    first = done.stdout.splitlines()[0]
    assert first.startswith("eager-join: 2 rebalance(s) in ") and "generation" not in done.stdout.split("what it cost")[1]
    assert "stop_the_world_partition_ms" in done.stdout and "final assignment" in done.stdout
    assert "revoked" not in done.stdout and done.stdout.rstrip().endswith("add --timeline for the 2 rebalance(s) one by one")
    log = tmp_path / "server.log"
    timeline = run("simulate", str(SCENARIOS / "eager-join.yaml"), "--timeline", "--log", str(log))
    assert timeline.stdout.startswith(done.stdout.split("add --timeline")[0])  # the same answer, first
    assert "generation 2" in timeline.stdout and "revoked" in timeline.stdout
    assert timeline.stdout.rstrip().endswith(f"wrote the coordinator's log to {log}")


def test_a_load_scenario_tells_its_load_table_early():
    done = run("simulate", str(SCENARIOS / "skewed-load.yaml"))
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert len(lines) < 60  # 698 with the timeline
    load = next(i for i, line in enumerate(lines) if line.startswith("load"))
    assert load < next(i for i, line in enumerate(lines) if line.startswith("final assignment"))
    assert any("group lag at the end (records)" in line and "(falls behind)" in line for line in lines)


def test_bad_scenario_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("topics: {t0: 1}\nconsumers: [{id: a, subscribe: [t0]}]\nevents: [{at_ms: 0, crash: zed}]\n")
    log = tmp_path / "out.log"
    done = run("simulate", str(bad), "--log", str(log))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().count("\n") == 0 and "events[0].crash" in done.stderr
    assert not log.exists()


def test_an_empty_group_instance_id_is_refused_up_front(tmp_path):
    """Kafka refuses an empty group.instance.id (JoinGroupRequest.validateGroupInstanceId);
    found by the fuzz test as an internal error raised mid-simulation."""
    bad = tmp_path / "static.yaml"
    bad.write_text("topics: {t0: 2}\nconsumers: [{id: c1, subscribe: [t0], group_instance_id: ''}]\n"
                   "events: [{at_ms: 0, join: c1}]\n")
    done = run("simulate", str(bad))
    assert done.returncode == 2 and done.stdout == ""
    assert "consumers[0].group_instance_id" in done.stderr and done.stderr.strip().count("\n") == 0
