""""Should we migrate?" as a pure function of the simulations table, keyed by the setups' enums
(group protocol, rebalance protocol, server-side assignor), rendered alike by every output."""

from __future__ import annotations

import pandas as pd

from kafka_rebalance.model import GroupProtocol, RebalanceProtocol, ServerAssignorName
from kafka_rebalance.pipeline.migration import (
    CONSUMER_RANGE,
    CONSUMER_UNIFORM,
    COOPERATIVE,
    DEFAULT_HEARTBEAT_MS,
    EAGER,
    HEARTBEAT_COLUMN,
    SETUPS,
    ChurnFigures,
    GroupSetup,
    HeartbeatFigures,
    OverallVerdict,
    UpgradeCost,
    Verdict,
    churn_verdicts,
    group_setup,
    migration_answer,
    migration_path,
    overall_verdict,
)
from kafka_rebalance.pipeline.report.lab import cost_table, heartbeat_table, migration_section
from kafka_rebalance.sim.churn import PROTOCOLS
from kafka_rebalance.sim.scenario import SimConfig


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
            "rebalances": rebalances, "stop_the_world_partition_ms": stw_ms, "partitions_moved": 10,
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
    # a churn under one setup alone compares nothing: left out
    assert [(f.churn, f.setup) for f in answer.figures] == [
        ("crashes", EAGER), ("crashes", COOPERATIVE), ("crashes", CONSUMER_UNIFORM)]
    uniform = answer.figures[2]
    assert (uniform.unowned_partition_s, uniform.rebalances, uniform.longest_unstable_s) == (12.5, 9.0, 1.2)
    assert answer.costs == (UpgradeCost(
        source=EAGER, target=CONSUMER_UNIFORM, unowned_partition_s=400.0, plain_restart_unowned_partition_s=300.0,
        records_twice=7.0, rebalances=44.0, unstable_s=60.0, longest_unstable_s=30.0,
        stop_the_world_partition_s=100.0),)
    assert answer.sentences() == [
        "crashes: migrate; KIP-848 uniform leaves 84% fewer partition-seconds unowned than cooperative-sticky "
        "(12.5 against 80.0, moving 10 partitions against 10) at the default heartbeat interval of 5,000 ms.",
        "Overall: migrate: in all 1 situations KIP-848 uniform leaves no more partition-seconds unowned than "
        "cooperative-sticky (within 10%).",
        "A group on eager (range): migrate; over 1 situations eager leaves 200.0 partition-seconds unowned and "
        "stops the world for 150.0, KIP-848 uniform 12.5 and never stops the world.",
        "Upgrading eager (range) to KIP-848 uniform one member at a time leaves partitions unowned for 400.0 "
        "partition-seconds (more than the 300.0 of the same restarts without upgrading); it takes 44 rebalances, "
        "keeps the group unstable for 60.0 s (30.0 s at most at once), processes 7 records twice, and stops the "
        "world for 100.0 partition-seconds."]
    # The report renders the same answer: its verdict, and each row under the setup's title.
    html = migration_section(answer)
    assert "<b>crashes: migrate</b>; KIP-848 uniform leaves 84% fewer" in html and "<b>Overall: migrate" in html
    assert html.index("Overall: migrate") < html.index("How to read this")  # the answer first
    assert cost_table(answer)["rolling upgrade"].tolist() == ["eager (range) -> KIP-848 uniform"]
    assert cost_table(answer)["same restarts, no upgrade"].tolist() == [300.0]


def test_no_protocol_sweep_no_answer():
    answer = migration_answer(SIMS[SIMS["strategy"] == "sticky"])
    assert answer.figures == () and answer.costs == () and answer.sentences() == []
    assert migration_section(answer) == ""
    assert answer.as_dict()["verdict"] is None and answer.as_dict()["situations"] == []


def _figures(churn: str, kip848_s: float, cooperative_s: float, *, moved: float = 10) -> list[ChurnFigures]:
    def row(setup: GroupSetup, unowned: float) -> ChurnFigures:
        return ChurnFigures(churn, setup, unowned_partition_s=unowned, pause_p50_s=0, pause_max_s=0, records_twice=0,
                            rebalances=1, longest_unstable_s=0, stop_the_world_partition_s=0,
                            partitions_moved=moved)
    return [row(COOPERATIVE, cooperative_s), row(CONSUMER_UNIFORM, kip848_s)]


def test_the_verdict_follows_the_figures():
    """A pure function of the figures: change them and the verdict changes."""
    even = churn_verdicts(_figures("restarts", 105, 100), ())
    assert [v.verdict for v in even] == [Verdict.MIGRATE]  # within the 10% margin
    worse = churn_verdicts(_figures("restarts", 150, 100), ())
    assert [v.verdict for v in worse] == [Verdict.WAIT] and worse[0].interval_ms is None
    assert worse[0].sentence() == ("restarts: wait; KIP-848 uniform leaves 50% more partition-seconds unowned than "
                                   "cooperative-sticky (150.0 against 100.0, moving 10 partitions against 10) at the default 5,000 ms.")
    # a shorter heartbeat interval that closes the gap: it depends on that setting (the longest such)
    heartbeat = (HeartbeatFigures("restarts", 5000, 150, 10), HeartbeatFigures("restarts", 2500, 120, 10),
                 HeartbeatFigures("restarts", 1000, 90, 12), HeartbeatFigures("restarts", 500, 80, 12))
    depends = churn_verdicts(_figures("restarts", 150, 100), heartbeat)[0]
    assert (depends.verdict, depends.interval_ms, depends.at_interval_s) == (Verdict.DEPENDS, 1000, 90)
    assert depends.sentence() == (
        "restarts: it depends on group.consumer.heartbeat.interval.ms; at the default 5,000 ms KIP-848 uniform "
        "leaves 50% more partition-seconds unowned than cooperative-sticky (150.0 against 100.0, moving 10 "
        "partitions against 10), at 1,000 ms it leaves 90.0 (10% fewer): migrate with it at 1,000 ms.")
    within = churn_verdicts(_figures("restarts", 105, 100), ())[0].sentence()
    assert "(105.0 against 100.0, moving 10 partitions against 10), within the 10% margin, at the default" in within
    assert depends.setting() == "group.consumer.heartbeat.interval.ms at 1,000 ms or less"
    # none closes it: wait, told with the shortest measured
    stuck = churn_verdicts(_figures("restarts", 150, 50), heartbeat)[0]
    assert (stuck.verdict, stuck.interval_ms, stuck.at_interval_s) == (Verdict.WAIT, 500, 80)
    assert stuck.setting().startswith("none measured")


def test_the_overall_verdict_follows_the_situations():
    heartbeat = (HeartbeatFigures("a", 1000, 90, 10),)
    migrate = churn_verdicts(_figures("a", 100, 100) + _figures("b", 50, 100), ())
    assert overall_verdict(migrate) == OverallVerdict(Verdict.MIGRATE, (
        "migrate: in all 2 situations KIP-848 uniform leaves no more partition-seconds unowned than "
        "cooperative-sticky (within 10%)."))
    setting = overall_verdict(churn_verdicts(_figures("a", 150, 100) + _figures("b", 50, 100), heartbeat))
    assert setting is not None and setting.verdict is Verdict.DEPENDS
    assert setting.sentence.startswith("it depends on group.consumer.heartbeat.interval.ms: at the default 5,000 ms "
                                       "KIP-848 uniform leaves more partitions unowned in 1 of 2 situations (a); "
                                       "at 1,000 ms it is no worse in all 2, for 5 times the heartbeats")
    churn = overall_verdict(churn_verdicts(_figures("a", 150, 100) + _figures("b", 50, 100) + _figures("c", 300, 100),
                                           heartbeat))
    assert churn is not None and churn.verdict is Verdict.DEPENDS
    assert churn.sentence == ("it depends on your group's churn: migrate if it mostly sees b, or a with "
                              "group.consumer.heartbeat.interval.ms at 1,000 ms; wait if it sees c, where KIP-848 "
                              "uniform leaves more partitions unowned at every heartbeat interval measured.")
    wait = overall_verdict(churn_verdicts(_figures("c", 300, 100), ()))
    assert wait is not None and wait.verdict is Verdict.WAIT
    assert overall_verdict(()) is None


def test_heartbeat_runs_are_told_apart_and_explain_the_gap():
    """Runs swept over the consumer heartbeat interval feed the heartbeat figures only; the
    default interval's row is the churn's own; the explanation says what each hand-off costs."""
    heartbeat_runs = pd.DataFrame([
        _run("crashes", "consumer-uniform", 6_000) | {HEARTBEAT_COLUMN: 1000, "partitions_moved": 12},
        _run("crashes", "consumer-uniform", 4_000) | {HEARTBEAT_COLUMN: 500, "partitions_moved": 12}])
    sims = pd.concat([SIMS.assign(**{HEARTBEAT_COLUMN: None}), heartbeat_runs],
                     ignore_index=True)
    answer = migration_answer(sims)
    assert [(f.churn, f.setup) for f in answer.figures] == [
        ("crashes", EAGER), ("crashes", COOPERATIVE), ("crashes", CONSUMER_UNIFORM)]
    assert answer.figures[2].unowned_partition_s == 12.5  # the swept runs stay out of the means
    assert [(h.interval_ms, h.unowned_partition_s) for h in answer.heartbeat] == [(5000, 12.5), (1000, 6.0),
                                                                                 (500, 4.0)]
    assert SimConfig().consumer_heartbeat_interval_ms == DEFAULT_HEARTBEAT_MS
    why = answer.explanation()
    assert why.startswith("Why: a KIP-848 member learns its assignment only from a heartbeat response")
    assert ("Over crashes, KIP-848 uniform moved 10 partitions (1.2 partition-seconds unowned each) against 10 "
            "(8.0 each) for cooperative-sticky; at 500 ms heartbeats 12 (0.3 each), 4.0 partition-seconds unowned in "
            "all against 12.5 at 5,000 ms and 80.0 for cooperative-sticky.") in why
    assert "{" not in why
    table = heartbeat_table(answer)
    assert table.columns.tolist() == ["churn", "cooperative-sticky", "KIP-848 5,000 ms (default)", "KIP-848 1,000 ms",
                                      "KIP-848 500 ms"]
    assert table.iloc[0].tolist() == ["crashes", 80.0, 12.5, 6.0, 4.0]
    as_dict = answer.as_dict()
    assert as_dict["why"] == why and as_dict["situations"][0]["verdict"] == "migrate"
    assert as_dict["heartbeat"][1] == {"churn": "crashes", "heartbeat_interval_ms": 1000, "unowned_partition_s": 6.0,
                                       "partitions_moved": 12.0}
