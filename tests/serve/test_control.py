"""Rebalances on command (issue 34, section 3) with real kafka-python consumers: each fault of
``serve/control.py`` forced through ``Broker``'s methods, a script and ``serve ctl``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("kio")
pytest.importorskip("kafka")

from click.testing import CliRunner  # noqa: E402
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor  # noqa: E402

from kafka_rebalance.cli.app import cli  # noqa: E402
from kafka_rebalance.serve import Broker  # noqa: E402
from kafka_rebalance.serve.control import ControlError  # noqa: E402
from kafka_rebalance.serve.script import load_script  # noqa: E402
from tests.serve.control_helpers import Member, classic_view, stable_with, wait_for  # noqa: E402

pytestmark = pytest.mark.broker
TOPIC = "orders"


def _broker(**options: object) -> Broker:
    # 500 ms, not 0: a kafka-python 3.0.12 leader that assigns before it has the topic's metadata can stall for
    # good (tests/serve/test_kafka_python.py); a short initial delay lets the metadata arrive first.
    return Broker(group_initial_rebalance_delay_ms=500, **options)  # type: ignore[arg-type]


def _topic(broker: Broker, partitions: int = 6) -> None:
    broker.create_topic(TOPIC, partitions)


def _members(broker: Broker, group: str, names: list[str], **config: object) -> list[Member]:
    return [Member(broker.bootstrap, group, TOPIC, name, **config) for name in names]


def _stop(members: list[Member]) -> None:
    for member in members:
        member.stop()


def test_expire_a_member_by_client_id():
    with _broker() as broker:
        _topic(broker)
        members = _members(broker, "g", ["a", "b"])
        try:
            _, generation, ids = stable_with(broker, "g", members)
            assert broker.expire_member("g", client_id="b") == f"expired {ids['b']} of g"
            _, _, after = stable_with(broker, "g", members, after_generation=generation)
            assert after["a"] == ids["a"] and after["b"] != ids["b"]  # b rejoined as a new member
        finally:
            _stop(members)


def test_expire_names_no_member_it_cannot_find():
    with _broker() as broker, pytest.raises(ControlError, match="no group nobody"):
        broker.expire_member("nobody", client_id="x")


def test_force_rebalance_keeps_a_cooperative_members_partitions():
    """The README's test: under a forced cooperative rebalance no partition is revoked."""
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor

    with _broker() as broker:
        _topic(broker)
        members = _members(broker, "g", ["a", "b"], assignor=CooperativeStickyAssignor)
        try:
            _, generation, ids = stable_with(broker, "g", members)
            wait_for(lambda: sorted(members[0].owned | members[1].owned) == list(range(6)), what="6 owned")
            owned = [set(m.owned) for m in members]
            revoked_before = [len(m.revoked) for m in members]
            broker.force_rebalance("g")
            _, _, after = stable_with(broker, "g", members, after_generation=generation)
            assert after == ids
            assert [set(m.owned) for m in members] == owned
            assert all(not part for m, n in zip(members, revoked_before, strict=True) for part in m.revoked[n:])
        finally:
            _stop(members)


def test_force_rebalance_revokes_everything_from_an_eager_member():
    with _broker() as broker:
        _topic(broker)
        members = _members(broker, "g", ["a"], assignor=StickyPartitionAssignor)
        try:
            _, generation, _ = stable_with(broker, "g", members)
            revoked_before = len(members[0].revoked)
            broker.force_rebalance("g")
            stable_with(broker, "g", members, after_generation=generation)
            wait_for(lambda: len(members[0].revoked) > revoked_before, what="a revocation")
            assert members[0].revoked[revoked_before] == set(range(6))
        finally:
            _stop(members)


def test_delayed_join_group_responses_slow_the_join():
    with _broker() as broker:
        _topic(broker)
        broker.delay_responses("join_group", 1500, 20_000)
        started = time.monotonic()
        members = _members(broker, "g", ["a"])
        try:
            stable_with(broker, "g", members)
            assert time.monotonic() - started >= 1.5
        finally:
            _stop(members)


def test_dropped_sync_group_responses_end_in_a_retry():
    """The SyncGroup's answer never comes: the client's request timeout ends the connection,
    it rejoins once the fault is over and gets its partitions."""
    with _broker() as broker:
        _topic(broker)
        broker.drop_responses("sync_group", 2000)
        started = time.monotonic()
        members = _members(broker, "g", ["a"], request_timeout_ms=7000)
        try:
            stable_with(broker, "g", members)
            wait_for(lambda: members[0].owned == set(range(6)), what="all partitions owned")
            assert time.monotonic() - started >= 2
        finally:
            _stop(members)


@pytest.mark.parametrize("error", ["NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS"])
def test_a_coordinator_move_reloads_the_group_from_its_records(error):
    """Kafka's group after a move: loaded Stable at its generation, members kept (onGroupLoaded),
    their sessions running again."""
    with _broker() as broker:
        _topic(broker)
        members = _members(broker, "g", ["a", "b"])
        try:
            _, generation, ids = stable_with(broker, "g", members)
            owned = [set(m.owned) for m in members]
            broker.move_coordinator(error, 1500)
            assert classic_view(broker, "g") is None  # the old coordinator's groups are gone
            view = wait_for(lambda: classic_view(broker, "g"), what="the group reloaded")
            assert view == ("Stable", generation, ids)
            time.sleep(3)  # heartbeats reach the new coordinator; sessions do not end
            # The same members, whole again; a kafka-python member may rejoin after the errors
            # (its leader's rejoin rebalances, as on Kafka), so the generation may have moved on.
            _, _, after = stable_with(broker, "g", members, after_generation=generation - 1)
            assert after == ids
            assert sorted(p for m in members for p in m.owned) == sorted(p for o in owned for p in o)
        finally:
            _stop(members)


def test_added_partitions_reach_the_member():
    with _broker() as broker:
        _topic(broker, 2)
        members = _members(broker, "g", ["a"], metadata_max_age_ms=500)
        try:
            stable_with(broker, "g", members)
            assert broker.add_partitions(TOPIC, 4) == f"{TOPIC} has 4 partitions"
            wait_for(lambda: members[0].owned == {0, 1, 2, 3}, what="4 partitions owned")
        finally:
            _stop(members)


def test_the_server_assignor_of_consumer_groups():
    with _broker() as broker:
        assert broker.set_server_assignor("range") == "server assignor range"
        assert broker.call(lambda state: state.groups.shard.consumer_config.assignors) == ("range", "uniform")
        with pytest.raises(ControlError, match="not one of"):
            broker.set_server_assignor("sticky")


def test_a_script_forces_a_rebalance_when_the_group_is_stable(tmp_path: Path):
    script = tmp_path / "faults.yaml"
    script.write_text("events:\n"
                      "  - {when: {group: g, stable: true}, force_rebalance: {group: g}}\n"
                      "  - {when: {group: g, members: 1}, delay: {api: heartbeat, ms: 10, for_ms: 100}}\n")
    with _broker(script=load_script(script)) as broker:
        _topic(broker)
        members = _members(broker, "g", ["a"])
        try:
            _, generation, ids = stable_with(broker, "g", members, after_generation=1)
            assert generation == 2 and list(ids) == ["a"]
        finally:
            _stop(members)


def test_serve_ctl_acts_on_a_running_broker(tmp_path: Path):
    control = str(tmp_path / "ctl.sock")
    with _broker(control_path=control) as broker:
        _topic(broker, 2)
        runner = CliRunner()
        done = runner.invoke(cli, ["serve", "ctl", "--control", control, f"add_partitions: {{topic: {TOPIC}, count: 3}}",
                                   "delay: {api: heartbeat, ms: 5, for_ms: 10}"])
        assert done.exit_code == 0, done.output
        assert done.output == f"{TOPIC} has 3 partitions\nheartbeat responses delayed 5 ms for 10 ms\n"
        refused = runner.invoke(cli, ["serve", "ctl", "--control", control, "force_rebalance: {group: nobody}"])
        assert refused.exit_code == 2 and refused.output == "kafka-rebalance: no group nobody\n"
        bad = runner.invoke(cli, ["serve", "ctl", "--control", control, "expire: {group: g}"])
        assert bad.exit_code == 2
        assert bad.output.startswith("kafka-rebalance: expire: ") and bad.output.count("\n") == 1
        moving = "coordinator_failover: {for_ms: 60000}"
        assert runner.invoke(cli, ["serve", "ctl", "--control", control, moving]).exit_code == 0
        again = runner.invoke(cli, ["serve", "ctl", "--control", control, moving])
        assert again.output == "kafka-rebalance: the coordinator is moving already\n"
    assert not Path(control).exists()  # the socket goes with the broker


def test_a_bad_script_is_one_line_and_exit_2(tmp_path: Path):
    script = tmp_path / "bad.yaml"
    script.write_text("events:\n  - {at_ms: 5, drop: {api: produce, for_ms: 5}}\n")
    done = CliRunner().invoke(cli, ["serve", "--port", "0", "--script", str(script)])
    assert done.exit_code == 2 and done.output.count("\n") == 1 and "api" in done.output


def test_serve_with_a_script_and_a_control_socket_in_its_own_process(tmp_path: Path):
    import os
    import signal
    import subprocess
    import sys

    script, control = tmp_path / "s.yaml", str(tmp_path / "ctl.sock")
    script.write_text("events:\n  - {at_ms: 0, delay: {api: heartbeat, ms: 1, for_ms: 1}}\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "kafka_rebalance.cli", "serve", "--port", "0", "--script",
                             str(script), "--control", control], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith("bootstrap 127.0.0.1:")
        done = CliRunner().invoke(cli, ["serve", "ctl", "--control", control, "server_assignor: range"])
        assert (done.exit_code, done.output) == (0, "server assignor range\n")
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(5)
    assert proc.returncode == 0 and err == ""
    assert not Path(control).exists()
