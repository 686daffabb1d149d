""""Does load-aware assignment pay off?" as a pure function of the typed figures: change the
figures, the verdict changes (no Spark, no simulation)."""

from __future__ import annotations

from dataclasses import replace

from kafka_rebalance.pipeline.load_answer import (
    LoadAnswer,
    LoadFigures,
    LoadVerdictKind,
    load_verdicts,
    overall_load_verdict,
)
from kafka_rebalance.pipeline.report.lab import load_section, load_table


def _figures(scenario: str, strategy: str, *, end_lag: float, behind_s: float) -> LoadFigures:
    return LoadFigures(scenario=scenario, strategy=strategy, runs=1, max_lag=end_lag + 1000, end_lag=end_lag,
                       produce_per_s=1000, behind_s=behind_s, p99_delay_s=1.0, drain_p50_s=2.0, drain_max_s=9.0,
                       undrained=0, moved=10, moved_max=4, rebalances=5)


def _pair(scenario: str, load_aware: tuple[float, float], cooperative: tuple[float, float]) -> list[LoadFigures]:
    return [_figures(scenario, "cooperative-sticky", end_lag=cooperative[0], behind_s=cooperative[1]),
            _figures(scenario, "load-aware", end_lag=load_aware[0], behind_s=load_aware[1])]


def test_keeping_up_is_a_bounded_lag_at_the_end():
    figures = _figures("s", "load-aware", end_lag=1000, behind_s=0)
    assert figures.keeps_up and not replace(figures, end_lag=1001).keeps_up
    assert figures.title == "load-aware" and _figures("s", "eager", end_lag=0, behind_s=0).title == "range (eager)"


def test_the_verdict_follows_the_figures():
    pays = load_verdicts(_pair("hot", (0, 20), (140_000, 240)))[0]
    assert pays.kind is LoadVerdictKind.PAYS_OFF
    assert pays.sentence == ("hot: load-aware pays off; load-aware keeps up (0 records behind at the end, behind for "
                             "20 s), cooperative-sticky falls behind (140,000 records behind at the end, behind for "
                             "240 s).")
    # the same scenario with the figures swapped: it does not
    assert load_verdicts(_pair("hot", (140_000, 240), (0, 20)))[0].kind is LoadVerdictKind.DOES_NOT
    # both keep up: how long each was behind decides, beyond the margin
    slower = load_verdicts(_pair("moving", (500, 195), (500, 170)))[0]
    assert slower.kind is LoadVerdictKind.DOES_NOT
    assert "both keep up, but load-aware is behind (more than one second of production) for 195 s against 170 s" in (
        slower.sentence)
    assert load_verdicts(_pair("moving", (500, 120), (500, 170)))[0].kind is LoadVerdictKind.PAYS_OFF
    assert load_verdicts(_pair("moving", (500, 172), (500, 170)))[0].kind is LoadVerdictKind.NO_DIFFERENCE
    # nobody keeps up: no assignment fixes it
    stuck = load_verdicts(_pair("beyond", (124_144, 240), (374_040, 240)))[0]
    assert stuck.kind is LoadVerdictKind.DOES_NOT and "no strategy keeps up (load-aware ends 124,144" in stuck.sentence
    # another strategy keeping up is told
    others = load_verdicts([*_pair("x", (0, 0), (0, 0)), _figures("x", "consumer-uniform", end_lag=0, behind_s=0)])
    assert others[0].sentence.endswith("; KIP-848 uniform keeps up too.")
    assert load_verdicts([_figures("x", "load-aware", end_lag=0, behind_s=0)]) == ()  # nothing to compare with


def test_the_overall_verdict():
    same = load_verdicts(_pair("a", (0, 20), (9_000, 240)) + _pair("b", (0, 10), (9_000, 240)))
    overall = overall_load_verdict(same)
    assert overall is not None and overall.verdict == "pays off"
    assert overall.sentence == "load-aware pays off in all 2 situations measured."
    mixed = overall_load_verdict(load_verdicts(_pair("a", (0, 20), (9_000, 240)) + _pair("b", (9e5, 240), (9e5, 240))))
    assert mixed is not None and mixed.verdict == "it depends"
    assert mixed.sentence.startswith("it depends on the skew: it pays off in a; not in b.")
    assert overall_load_verdict(()) is None


def test_the_report_and_json_carry_the_verdicts():
    answer = LoadAnswer(tuple(_pair("hot", (0, 20), (140_000, 240))))
    assert answer.sentences() == [answer.verdicts()[0].sentence, "Overall: load-aware pays off in all 1 situations "
                                                                 "measured."]
    as_dict = answer.as_dict()
    assert as_dict["verdict"] == {"verdict": "pays off", "sentence": "load-aware pays off in all 1 situations measured."}
    assert as_dict["situations"][0]["verdict"] == "pays off" and as_dict["figures"][1]["keeps_up"] is True
    rows = load_table(answer)
    assert rows["keeps up"].tolist() == ["no", "yes"] and rows["lag at end (records)"].tolist() == [140_000, 0]
    html = load_section(answer, None)
    assert "<b>hot: load-aware pays off</b>;" in html and html.index("Overall:") < html.index("How to read this")
    assert load_section(LoadAnswer(()), None) == ""
