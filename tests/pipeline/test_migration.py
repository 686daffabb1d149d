""""Should we migrate?" as a pure function of the simulations table, keyed by the setups' enums
(group protocol, rebalance protocol, server-side assignor), rendered alike by every output."""

from __future__ import annotations

import pandas as pd

from kafka_rebalance.model import GroupProtocol, RebalanceProtocol, ServerAssignorName
from kafka_rebalance.pipeline.migration import (
    CONSUMER_RANGE,
    CONSUMER_UNIFORM,
    COOPERATIVE,
    EAGER,
    SETUPS,
    GroupSetup,
    UpgradeCost,
    group_setup,
    migration_answer,
    migration_path,
)
from kafka_rebalance.pipeline.report.lab import cost_table, migration_section
from kafka_rebalance.sim.churn import PROTOCOLS


def test_every_swept_protocol_is_one_setup_read_from_its_scenario_fields():
    setups = {label: group_setup(label) for label in PROTOCOLS}
    assert setups == {"eager": EAGER, "cooperative-sticky": COOPERATIVE, "consumer-uniform": CONSUMER_UNIFORM,
                      "consumer-range": CONSUMER_RANGE, "load-aware": None}
    assert GroupSetup(GroupProtocol.CLASSIC, rebalance_protocol=RebalanceProtocol.EAGER, strategy="range") == EAGER
    assert GroupSetup(GroupProtocol.CONSUMER, assignor=ServerAssignorName.RANGE) == CONSUMER_RANGE
    assert len(set(SETUPS)) == len(SETUPS) and all(s.title for s in SETUPS)
    assert group_setup("sticky") is None and migration_path("range") is None
    assert migration_path("eager") == (EAGER, CONSUMER_UNIFORM)
    assert migration_path("consumer-range") == (COOPERATIVE, CONSUMER_RANGE)


def _run(scenario: str, label: str, unowned_ms: float, *, twice: int = 0, rebalances: int = 1, stw_ms: int = 0,
         longest_ms: float = 0, error: str | None = None) -> dict[str, object]:
    return {"scenario": scenario, "strategy": label, "seed": 1, "error": error, "records_processed_twice": twice,
            "rebalances": rebalances, "stop_the_world_partition_ms": stw_ms,
            "extra_metrics": {"unowned_partition_ms": unowned_ms, "member_pause_p50_ms": 100.0,
                              "member_pause_max_ms": 900.0, "longest_unstable_ms": longest_ms,
                              "unstable_ms": 2 * longest_ms}}


SIMS = pd.DataFrame([
    _run("crashes", "cooperative-sticky", 80_000, twice=120, rebalances=18, longest_ms=9_800),
    _run("crashes", "consumer-uniform", 12_000, rebalances=8, longest_ms=1_000),
    _run("crashes", "consumer-uniform", 13_000, rebalances=10, longest_ms=1_400),  # a second seed: means
    _run("crashes", "eager", 200_000, rebalances=20, stw_ms=150_000),
    _run("crashes", "consumer-range", 0, error="Boom: a failed run counts nowhere"),
    _run("crashes", "sticky", 1),  # not swept over protocols: not in the answer
    _run("crashes", "load-aware", 1),  # classic and cooperative too, but not the question's
    _run("crashes", "cooperative-sticky", 10**9) | {"extra_metrics": {"max_lag_records": 5.0}},  # skewed load
    _run("rolling-restart", "eager", 300_000, rebalances=40, stw_ms=250_000),
    _run("migration", "eager", 400_000, twice=7, rebalances=44, stw_ms=100_000, longest_ms=30_000),
])


def test_the_answer_is_keyed_by_setup_and_told_with_its_numbers():
    answer = migration_answer(SIMS)
    assert [(f.churn, f.setup) for f in answer.figures] == [
        ("crashes", EAGER), ("crashes", COOPERATIVE), ("crashes", CONSUMER_UNIFORM), ("rolling-restart", EAGER)]
    uniform = answer.figures[2]
    assert (uniform.unowned_partition_s, uniform.rebalances, uniform.longest_unstable_s) == (12.5, 9.0, 1.2)
    assert answer.costs == (UpgradeCost(
        source=EAGER, target=CONSUMER_UNIFORM, unowned_partition_s=400.0, plain_restart_unowned_partition_s=300.0,
        records_twice=7.0, rebalances=44.0, unstable_s=60.0, longest_unstable_s=30.0,
        stop_the_world_partition_s=100.0),)
    assert answer.sentences() == [
        "crashes: KIP-848 (uniform) leaves 12.5 partition-seconds unowned against 80.0 for cooperative-sticky "
        "(-84%); 9 rebalances against 18; 0 records processed twice against 120; longest unstable stretch 1.2 s "
        "against 9.8 s. Eager stops the world for 150.0 partition-seconds; neither cooperative-sticky nor KIP-848 "
        "does.",
        "Rolling upgrade eager (range) -> KIP-848 uniform: 400.0 (300.0) partition-seconds unowned (in brackets: a "
        "plain rolling restart of the same group), 44 rebalances, 7 records processed twice, unstable for "
        "60.0 / 30.0 s (total / longest stretch), 100.0 stop-the-world partition-seconds."]
    # The report renders the same answer: its verdict, and each row under the setup's title.
    html = migration_section(answer)
    assert "KIP-848 (uniform) leaves 12.5 partition-seconds" in html and "cooperative-sticky" in html
    assert cost_table(answer)["rolling upgrade"].tolist() == ["eager (range) -> KIP-848 uniform"]


def test_no_protocol_sweep_no_answer():
    answer = migration_answer(SIMS[SIMS["strategy"] == "sticky"])
    assert answer.figures == () and answer.costs == () and answer.sentences() == []
    assert migration_section(answer) == ""
    assert answer.as_dict() == {"verdict": [], "figures": [], "costs": []}
