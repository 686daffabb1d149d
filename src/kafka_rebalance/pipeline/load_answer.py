""""Does load-aware assignment pay off?": the lab's runs with a load model (sim/load.py) -> a
typed answer per scenario and strategy: whether the group keeps up (its lag at the end within one
second of production), how long it was behind, how long it took to drain after each rebalance,
its lag at the end; and the verdicts, a pure function of those figures (``load_verdicts``).

The terminal, ``--json`` and the HTML report (``report.lab``) each render the same ``LoadAnswer``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, assert_never

from kafka_rebalance.pipeline.migration import extra_metric, has_load

if TYPE_CHECKING:
    import pandas as pd

# The strategies the question compares (a key of sim.churn.PROTOCOLS, or a swept strategy), in
# the order the report lists them, and their names there.
LOAD_ORDER = ("eager", "range", "cooperative-sticky", "consumer-uniform", "load-aware")
LOAD_NAMES = {"eager": "range (eager)", "range": "range (eager)", "cooperative-sticky": "cooperative-sticky",
              "consumer-uniform": "KIP-848 uniform", "load-aware": "load-aware"}
LOAD_AWARE = "load-aware"
BASELINE = "cooperative-sticky"  # what load-aware is without loads: the comparison that isolates them
# Time behind counts as different when it differs by more than this share, and more than
# BEHIND_SLACK_S (one or two lag samples of 5 s are noise).
MARGIN = 0.10
BEHIND_SLACK_S = 10.0


@dataclass(frozen=True, slots=True)
class LoadFigures:
    """One scenario under one strategy: means over its runs (seeds)."""

    scenario: str
    strategy: str
    runs: int
    max_lag: float  # records: the highest lag of any consumer at any time
    end_lag: float  # records: the group's lag at the end of the run
    produce_per_s: float  # records/s produced, on average
    behind_s: float  # time the group's lag exceeded one second of production
    p99_delay_s: float
    drain_p50_s: float  # after each rebalance, until the lag is back on its pre-rebalance trajectory
    drain_max_s: float
    undrained: float  # rebalances after which it never was
    moved: float
    moved_max: float  # the most partitions one rebalance moved (max over runs)
    rebalances: float

    @property
    def keeps_up(self) -> bool:
        """Lag bounded: at the end of the run, the group is at most one second of production behind."""
        return self.end_lag <= self.produce_per_s

    @property
    def title(self) -> str:
        return LOAD_NAMES.get(self.strategy, self.strategy)


class LoadVerdictKind(Enum):
    PAYS_OFF = "pays off"
    DOES_NOT = "does not pay off"
    NO_DIFFERENCE = "makes no difference"


@dataclass(frozen=True, slots=True)
class LoadVerdict:
    """Load-aware against cooperative-sticky (load-aware without loads) in one scenario."""

    scenario: str
    kind: LoadVerdictKind
    sentence: str


def _behind(figures: LoadFigures) -> str:
    return (f"keeps up ({figures.end_lag:,.0f} records behind at the end, behind for {figures.behind_s:,.0f} s)"
            if figures.keeps_up else
            f"falls behind ({figures.end_lag:,.0f} records behind at the end, behind for {figures.behind_s:,.0f} s)")


def load_verdicts(figures: Sequence[LoadFigures]) -> tuple[LoadVerdict, ...]:
    """Per scenario with load-aware and cooperative-sticky figures: load-aware pays off when it
    keeps up and cooperative-sticky does not, or when both keep up and it is behind for less
    time (beyond ``MARGIN`` and ``BEHIND_SLACK_S``); it does not when the reverse holds, or when
    no strategy keeps up (no assignment of whole partitions can: more partitions or consumers
    are the fix); otherwise it makes no difference."""
    by_scenario: dict[str, dict[str, LoadFigures]] = {}
    for row in figures:
        by_scenario.setdefault(row.scenario, {})[row.strategy] = row
    out: list[LoadVerdict] = []
    for scenario, by in by_scenario.items():
        new, old = by.get(LOAD_AWARE), by.get(BASELINE)
        if new is None or old is None:
            continue
        keeping_up = [f.title for f in by.values() if f.keeps_up]
        difference = new.behind_s - old.behind_s
        notable = abs(difference) > max(BEHIND_SLACK_S, MARGIN * max(new.behind_s, old.behind_s))
        if not keeping_up:
            kind = LoadVerdictKind.DOES_NOT
            why = (f"no strategy keeps up (load-aware ends {new.end_lag:,.0f} records behind, cooperative-sticky "
                   f"{old.end_lag:,.0f}): a partition needs more than one consumer or the group more consumers, "
                   "which no assignment fixes")
        elif new.keeps_up != old.keeps_up:
            kind = LoadVerdictKind.PAYS_OFF if new.keeps_up else LoadVerdictKind.DOES_NOT
            why = f"load-aware {_behind(new)}, cooperative-sticky {_behind(old)}"
        elif notable:
            kind = LoadVerdictKind.PAYS_OFF if difference < 0 else LoadVerdictKind.DOES_NOT
            state = "both keep up" if new.keeps_up else "both fall behind"
            why = (f"{state}, but load-aware is behind (more than one second of production) for "
                   f"{new.behind_s:,.0f} s against {old.behind_s:,.0f} s")
        else:
            kind = LoadVerdictKind.NO_DIFFERENCE
            state = "both keep up" if new.keeps_up else "both fall behind"
            why = (f"{state} and are behind for about as long ({new.behind_s:,.0f} s against "
                   f"{old.behind_s:,.0f} s)")
        others = [f.title for f in by.values() if f.keeps_up and f.strategy not in (LOAD_AWARE, BASELINE)]
        tail = f"; {', '.join(others)} keep{'s' if len(others) == 1 else ''} up too" if others else ""
        out.append(LoadVerdict(scenario, kind, f"{scenario}: load-aware {kind.value}; {why}{tail}."))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class OverallLoadVerdict:
    """Over the scenarios: one kind's value when every scenario has it, else "it depends"."""

    verdict: str
    sentence: str


def overall_load_verdict(verdicts: Sequence[LoadVerdict]) -> OverallLoadVerdict | None:
    """One verdict over the scenarios: the same everywhere is that verdict; else it depends on the
    skew, told per kind."""
    if not verdicts:
        return None
    kinds = {v.kind for v in verdicts}
    if len(kinds) == 1:
        kind = next(iter(kinds))
        return OverallLoadVerdict(kind.value, f"load-aware {kind.value} in all {len(verdicts)} situations measured.")
    parts = []
    for kind in LoadVerdictKind:
        names = [v.scenario for v in verdicts if v.kind is kind]
        if names:
            match kind:
                case LoadVerdictKind.PAYS_OFF:
                    parts.append(f"it pays off in {', '.join(names)}")
                case LoadVerdictKind.DOES_NOT:
                    parts.append(f"not in {', '.join(names)}")
                case LoadVerdictKind.NO_DIFFERENCE:
                    parts.append(f"it makes no difference in {', '.join(names)}")
                case _:
                    assert_never(kind)
    return OverallLoadVerdict("it depends",
                              "it depends on the skew: " + "; ".join(parts) + ". It pays off where every partition fits "
                       "in one consumer but a count-balanced assignment piles hot ones together.")


@dataclass(frozen=True, slots=True)
class LoadAnswer:
    """Every load scenario under every strategy compared, and the verdicts from them."""

    figures: tuple[LoadFigures, ...]

    def verdicts(self) -> tuple[LoadVerdict, ...]:
        return load_verdicts(self.figures)

    def overall(self) -> OverallLoadVerdict | None:
        return overall_load_verdict(self.verdicts())

    def sentences(self) -> list[str]:
        lines = [v.sentence for v in self.verdicts()]
        overall = self.overall()
        if overall is not None:
            lines.append(f"Overall: {overall.sentence}")
        return lines

    def as_dict(self) -> dict[str, Any]:
        overall = self.overall()
        return {"verdict": None if overall is None else {"verdict": overall.verdict, "sentence": overall.sentence},
                "situations": [{"scenario": v.scenario, "verdict": v.kind.value, "sentence": v.sentence}
                               for v in self.verdicts()],
                "figures": [asdict(f) | {"keeps_up": f.keeps_up} for f in self.figures]}


NO_LOAD_ANSWER = LoadAnswer(())


def load_answer(sims: pd.DataFrame) -> LoadAnswer:
    """The figures per load scenario and strategy (means over seeds) from the ``simulations``
    table; empty when no run had a load model."""
    import pandas as pd

    ok = sims[sims["error"].isna() & has_load(sims) & sims["strategy"].isin(LOAD_ORDER)].copy()
    if ok.empty:
        return NO_LOAD_ANSWER
    keys = ("max_lag_records", "end_lag_records", "produce_records_per_s", "behind_ms", "p99_delay_ms",
            "drain_p50_ms", "drain_max_ms", "undrained_rebalances", "max_moved_per_rebalance")
    for key in keys:
        ok[key] = pd.to_numeric(extra_metric(ok, key), errors="coerce")
    grouped = ok.groupby(["scenario", "strategy"], sort=False).agg(
        runs=("run_id", "count"), max_lag=("max_lag_records", "mean"), end_lag=("end_lag_records", "mean"),
        rate=("produce_records_per_s", "mean"), behind=("behind_ms", "mean"), p99=("p99_delay_ms", "mean"),
        drain_p50=("drain_p50_ms", "mean"), drain_max=("drain_max_ms", "mean"),
        undrained=("undrained_rebalances", "mean"), moved=("partitions_moved", "mean"),
        moved_max=("max_moved_per_rebalance", "max"), rebalances=("rebalances", "mean")).reset_index()
    grouped["order"] = grouped["strategy"].map(LOAD_ORDER.index)
    grouped = grouped.sort_values(["scenario", "order"], kind="stable")
    return LoadAnswer(tuple(
        LoadFigures(scenario=str(r["scenario"]), strategy=str(r["strategy"]), runs=int(r["runs"]),
                    max_lag=float(r["max_lag"]), end_lag=float(r["end_lag"]), produce_per_s=float(r["rate"]),
                    behind_s=float(r["behind"]) / 1000, p99_delay_s=float(r["p99"]) / 1000,
                    drain_p50_s=float(r["drain_p50"]) / 1000, drain_max_s=float(r["drain_max"]) / 1000,
                    undrained=float(r["undrained"]), moved=float(r["moved"]), moved_max=float(r["moved_max"]),
                    rebalances=float(r["rebalances"]))
        for r in grouped.to_dict("records")))
