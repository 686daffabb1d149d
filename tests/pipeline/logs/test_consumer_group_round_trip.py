"""Round trip: the simulator writes a consumer group's broker log in Kafka 4.x's new
group-coordinator format (``simulate --log``), ``kafka-rebalance logs`` reads it back (local
engine), and the rebalances it finds are the ones the simulator reports: same group epochs and
generations, same ends, members, protocol, assignor and cause.

How the two views line up (both are Kafka's facts, not choices of ours):
- KIP-848 bumps the group epoch at every change (GroupMetadataManager.consumerGroupHeartbeat:
  "Bumped group epoch to {}"); changes that come before the group is stable again bump it again.
  The simulator counts such a burst as one rebalance (from the first bump to the group turning
  Stable, numbered by its last epoch); the log reader shows each bump, the earlier ones
  ``superseded``. So one simulated rebalance is a chain of logged ones: the chain starts at the
  simulated start with the simulated cause, and its last link ends at the simulated end.
- A topic-metadata change (partitions added, a subscription change) is logged by Kafka only at
  DEBUG ("Computed new subscription metadata"), so at INFO its rebalance has no named cause:
  the simulator says "the group changed", the reader "unknown".
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from kafka_rebalance.cli import cli, logs_cmd, simulate_cmd  # noqa: F401  (importing registers the commands)
from kafka_rebalance.model import GroupProtocol
from kafka_rebalance.protocol.logformat import DEFAULT_EPOCH, epoch_ms
from kafka_rebalance.sim.churn import Service, churn_scenario
from kafka_rebalance.sim.consumer_group import ConsumerGroupSide
from kafka_rebalance.sim.logwriter import log_lines
from kafka_rebalance.sim.result import RebalanceRecord, SimulationResult
from kafka_rebalance.sim.scenario import load_scenario
from tests.conftest import TEST_SYSLOG

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "scenarios" / "consumer-groups"
BASE_MS = epoch_ms(DEFAULT_EPOCH)

# A consumer group through every kind of change the 4.x log names: joins (dynamic and static), a
# crash (fenced at session expiry), a clean leave, partitions added, a static member's restart
# (replaced without a rebalance), a rejoin and a subscription change.
CHURN = """
name: kip848-churn
group: payments
group_protocol: consumer
assignor: range
topics: {pay: 6, audit: 2}
consumers:
  - {id: a, subscribe: [pay]}
  - {id: b, subscribe: [pay]}
  - {id: c, subscribe: [pay, audit]}
  - {id: d, subscribe: [pay], group_instance_id: d-static}
produce:
  - {topic: pay, records_per_s: 200, keys: 40}
events:
  - {at_ms: 0, join: a}
  - {at_ms: 0, join: b}
  - {at_ms: 2000, join: c}
  - {at_ms: 4000, join: d}
  - {at_ms: 30000, crash: b}
  - {at_ms: 90000, leave: c}
  - {at_ms: 100000, add_partitions: {topic: pay, count: 8}}
  - {at_ms: 120000, restart: d, after_ms: 5000}
  - {at_ms: 140000, join: b}
  - {at_ms: 160000, subscribe: {consumer: a, topics: [pay, audit]}}
end_ms: 200000
seed: 3
"""

SMALL = Service(members=6, partitions=12)


def _scenarios() -> dict[str, str]:
    docs = {"churn": CHURN}
    for name in ("rolling-restart", "rolling-upgrade", "rolling-downgrade", "static-restart"):
        docs[name] = (EXAMPLES / f"{name}.yaml").read_text()
    for churn in ("scale-out-in", "crashes"):
        docs[f"{churn}-range"] = yaml.safe_dump(churn_scenario(churn, "consumer-range", SMALL))
    docs["migration-eager"] = yaml.safe_dump(churn_scenario("migration", "eager", SMALL))
    there_and_back = churn_scenario("migration", "cooperative-sticky", SMALL)
    last = max(e["at_ms"] for e in there_and_back["events"])
    names = [c["id"] for c in there_and_back["consumers"]]
    there_and_back["events"] += [{"at_ms": last + 30000 * (i + 1), "downgrade": n, "after_ms": 5000}
                                 for i, n in enumerate(names)]
    there_and_back["end_ms"] = last + 30000 * (len(names) + 2)
    docs["upgrade-and-downgrade"] = yaml.safe_dump(there_and_back)
    # coordinator failovers before, during and after the conversion ("Loaded consumer group" lines)
    moved = yaml.safe_load(docs["rolling-upgrade"])
    moved["events"] += [{"at_ms": at, "coordinator_failover": {}} for at in (30000, 100000, 150000)]
    docs["rolling-upgrade-failovers"] = yaml.safe_dump(moved)
    return docs


SCENARIOS = _scenarios()


def invoke(args: list[str]) -> str:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def simulate_and_read_back(tmp_path: Path, text: str) -> tuple[ConsumerGroupSide, SimulationResult,
                                                                pd.DataFrame, dict]:
    scenario_file = tmp_path / "scenario.yaml"
    scenario_file.write_text(text)
    broker_log = tmp_path / "server.log"
    invoke(["simulate", str(scenario_file), "--log", str(broker_log)])
    summary = json.loads(invoke(["logs", str(broker_log), "--out", str(tmp_path / "out"), "--engine", "local",
                                 "--json"]))
    simulation = ConsumerGroupSide(load_scenario(text))
    run = simulation.run()
    # the CLI's log is this run's log: the simulator is deterministic
    assert broker_log.read_text().splitlines() == log_lines(run)
    rows = pd.read_parquet(tmp_path / "out" / "rebalances").sort_values("start", kind="stable")
    return simulation, run, rows.reset_index(drop=True), summary


def millis(value: object) -> int | None:
    if value is None or pd.isna(value):
        return None
    return int(pd.Timestamp(value).value // 1_000_000) - BASE_MS


CONSUMER_REASON = re.compile(r"^(?:member (?P<member>\S+) (?P<what>joined|left|fenced)|"
                             r"static member (?P<instance>\S+) rejoined|the group changed)")


def expected_cause(rebalance: RebalanceRecord) -> tuple[set[str], str | None]:
    """The causes the log reader may name for a simulated reason, and the member (by name)."""
    if rebalance.group_protocol is not GroupProtocol.CONSUMER:
        return set(), None  # a classic rebalance: the log carries the coordinator's reason verbatim
    match = CONSUMER_REASON.match(rebalance.reason or "")
    assert match is not None, rebalance.reason
    what = match.group("what")
    if what == "joined":
        return {"joined", "static_joined", "restarted"}, match.group("member")
    if what == "left":
        return {"left"}, match.group("member")
    if what == "fenced":
        return {"session_timeout", "rebalance_timeout"}, match.group("member")
    if match.group("instance"):
        return {"static_joined"}, None
    return {"unknown"}, None


def check_round_trip(simulation: ConsumerGroupSide, run: SimulationResult, rows: pd.DataFrame) -> None:
    names = simulation.member_names

    def name(member: object) -> object:
        return names.get(str(member), member) if member is not None and not pd.isna(member) else None

    completed = [r for r in run.rebalances if r.end_ms is not None]
    assert completed, "the scenario has no completed rebalance"
    claimed: list[int] = []
    previous_generation = 0
    for rebalance in completed:
        assert rebalance.generation is not None
        chain = rows[(rows.generation > previous_generation) & (rows.generation <= rebalance.generation)]
        assert not chain.empty, f"generation {rebalance.generation} is not in the log"
        first, last = chain.iloc[0], chain.iloc[-1]
        where = f"generation {rebalance.generation} ({rebalance.reason})"
        assert int(last.generation) == rebalance.generation, where
        assert last.outcome in ("stable", "empty"), where
        assert (chain.iloc[:-1].outcome == "superseded").all(), where
        assert millis(first.start) == rebalance.start_ms, where
        assert millis(last.end) == rebalance.end_ms, where
        assert int(last.members) == len(rebalance.members), where
        assert last.protocol == rebalance.group_protocol.value, where
        if rebalance.group_protocol is GroupProtocol.CONSUMER:
            assert last.assignor == rebalance.strategy, where
            causes, member = expected_cause(rebalance)
            assert first.cause in causes, (where, first.cause)
            assert name(first.cause_member) == member or member is None, (where, first.cause_member)
            if first.cause in ("session_timeout", "rebalance_timeout"):
                assert [name(m) for m in first.failed_members] == [member], where
            if first.cause == "left":
                assert [name(m) for m in first.left_members] == [member], where
        else:
            assert first.reason == rebalance.reason, where
        claimed.extend(int(g) for g in chain.generation)
        previous_generation = rebalance.generation
    # nothing invented: every logged rebalance belongs to a simulated one (or to one still open at the end)
    still_open = [r for r in run.rebalances if r.end_ms is None]
    extra = rows[~rows.generation.isin(claimed)]
    assert len(extra) <= len(still_open), extra[["generation", "outcome", "cause"]]
    assert (extra.outcome.isin(("open", "superseded"))).all()


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_broker_log_reads_back_to_the_simulated_rebalances(tmp_path, scenario):
    simulation, run, rows, summary = simulate_and_read_back(tmp_path, SCENARIOS[scenario])
    assert summary["lines_unrecognised"] == 0 and summary["lines_read"] == summary["lines_matched"]
    assert summary["groups"] == 1
    check_round_trip(simulation, run, rows)


def test_a_rolling_upgrade_reads_back_classic_then_consumer(tmp_path):
    """Kafka's convertToConsumerGroup: the consumer group's epoch starts from the classic
    generation (ConsumerGroup.fromClassicGroup), so the first KIP-848 rebalance of a rolling
    upgrade is generation + 1 and the epochs go on from there; the conversion line is read."""
    simulation, run, rows, _ = simulate_and_read_back(tmp_path, SCENARIOS["rolling-upgrade"])
    protocols = list(rows.protocol)
    switch = protocols.index("consumer")
    assert set(protocols[:switch]) == {"classic"} and set(protocols[switch:]) == {"consumer"}
    assert int(rows.generation[switch]) == int(rows.generation[switch - 1]) + 1
    events = pd.read_parquet(tmp_path / "out" / "member_events")
    converted = events[events.kind == "converted"]
    assert list(converted.reason) == ["to consumer"]
    assert millis(converted.time.iloc[0]) == millis(rows.start[switch])


@pytest.mark.spark
def test_spark_reads_the_migration_log_as_the_local_engine_does(spark, tmp_path):
    """The same round trip on the Spark engine (the JVM gate keeps the conversion lines)."""
    from kafka_rebalance.pipeline.logs import run_logs

    simulation, run, local_rows, _ = simulate_and_read_back(tmp_path, SCENARIOS["rolling-upgrade"])
    run_logs(spark, [str(tmp_path / "server.log")], str(tmp_path / "spark"), engine="spark", progress=False, syslog=TEST_SYSLOG)
    spark_rows = pd.read_parquet(tmp_path / "spark" / "rebalances").sort_values("start", kind="stable")
    spark_rows = spark_rows.reset_index(drop=True)
    columns = ["generation", "old_generation", "outcome", "members", "protocol", "cause", "cause_member", "assignor"]
    assert spark_rows[columns].astype(str).values.tolist() == local_rows[columns].astype(str).values.tolist()
    check_round_trip(simulation, run, spark_rows)
    events = pd.read_parquet(tmp_path / "spark" / "member_events")
    assert list(events[events.kind == "converted"].reason) == ["to consumer"]


def test_a_downgrade_reads_back_consumer_then_classic(tmp_path):
    """Kafka's convertToClassicGroup: the classic group's generation is the group epoch
    (ClassicGroup.fromConsumerGroup) and its first rebalance (reason "Downgrade group ...") gives
    generation epoch + 1; the log reader sees the conversion and the last consumer-protocol
    member's leaving as its cause."""
    simulation, run, rows, _ = simulate_and_read_back(tmp_path, SCENARIOS["rolling-downgrade"])
    protocols = list(rows.protocol)
    switch = protocols.index("classic")
    assert set(protocols[:switch]) == {"consumer"} and set(protocols[switch:]) == {"classic"}
    first_classic = rows.iloc[switch]
    assert int(first_classic.generation) == int(rows.generation[switch - 1]) + 1
    assert first_classic.reason.startswith("Downgrade group orders-service from consumer to classic")
    assert first_classic.cause == "left" and simulation.member_names[first_classic.cause_member] == "c3"
    events = pd.read_parquet(tmp_path / "out" / "member_events")
    assert list(events[events.kind == "converted"].reason) == ["to classic"]
