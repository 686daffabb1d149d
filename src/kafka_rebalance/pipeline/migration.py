""""Should we migrate to KIP-848?": the lab's simulations -> a typed answer, keyed by how a group
runs its rebalances (``GroupSetup``: the group protocol, and the rebalance protocol of a classic
group or the server-side assignor of a consumer group), never by a display label.

A pure function of the ``simulations`` table (``migration_answer``); the terminal, ``--json`` and
the HTML report (``report.lab``) each render the same ``MigrationAnswer``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from kafka_rebalance.model import GroupProtocol, RebalanceProtocol, ServerAssignorName

if TYPE_CHECKING:
    import pandas as pd

# The churn whose consumers come back on the consumer protocol (sim/churn.py), and the plain
# restarts it is compared with.
MIGRATION_CHURN = "migration"
PLAIN_RESTART_CHURN = "rolling-restart"


@dataclass(frozen=True, slots=True)
class GroupSetup:
    """How a group runs its rebalances: a classic group by its rebalance protocol and its
    members' strategy (an assignor name, open to plug-ins: a name, not an enum), a consumer
    group by its server-side assignor."""

    group_protocol: GroupProtocol
    rebalance_protocol: RebalanceProtocol | None = None  # classic groups
    strategy: str | None = None  # classic groups
    assignor: ServerAssignorName | None = None  # consumer groups

    @property
    def title(self) -> str:
        """The setup in words (what the report's tables and sentences show)."""
        return _TITLES[self]

    def as_dict(self) -> dict[str, str | None]:
        return {"group_protocol": self.group_protocol.value,
                "rebalance_protocol": None if self.rebalance_protocol is None else self.rebalance_protocol.value,
                "strategy": self.strategy, "assignor": None if self.assignor is None else self.assignor.value}


EAGER = GroupSetup(GroupProtocol.CLASSIC, rebalance_protocol=RebalanceProtocol.EAGER, strategy="range")
COOPERATIVE = GroupSetup(GroupProtocol.CLASSIC, rebalance_protocol=RebalanceProtocol.COOPERATIVE,
                         strategy="cooperative-sticky")
CONSUMER_UNIFORM = GroupSetup(GroupProtocol.CONSUMER, assignor=ServerAssignorName.UNIFORM)
CONSUMER_RANGE = GroupSetup(GroupProtocol.CONSUMER, assignor=ServerAssignorName.RANGE)
# In the order the report lists them; the lab sweeps eager as range, cooperative as
# cooperative-sticky (sim/churn.PROTOCOLS).
SETUPS: tuple[GroupSetup, ...] = (EAGER, COOPERATIVE, CONSUMER_UNIFORM, CONSUMER_RANGE)
_TITLES = {EAGER: "eager (range)", COOPERATIVE: "cooperative-sticky", CONSUMER_UNIFORM: "KIP-848 uniform",
           CONSUMER_RANGE: "KIP-848 range"}


def group_setup(label: str) -> GroupSetup | None:
    """The setup of a lab run swept over ``protocol`` (its ``strategy`` column: a key of
    ``sim.churn.PROTOCOLS``), read from the scenario fields that label stands for; None for a
    run not swept over protocols, or under a setup the question does not compare (load-aware)."""
    from kafka_rebalance.assignors.registry import get_assignor
    from kafka_rebalance.sim.churn import PROTOCOLS

    fields = PROTOCOLS.get(label)
    if fields is None:
        return None
    group_protocol = GroupProtocol(fields["group_protocol"])
    match group_protocol:
        case GroupProtocol.CONSUMER:
            setup = GroupSetup(group_protocol, assignor=ServerAssignorName(fields["assignor"]))
        case GroupProtocol.CLASSIC:
            # the protocol every member's strategy supports (Kafka: the lowest of the members')
            protocols = [get_assignor(name).protocol for name in fields["strategies"]]
            setup = GroupSetup(group_protocol, rebalance_protocol=min(protocols, key=lambda p: p.rank),
                               strategy=",".join(fields["strategies"]))
    return setup if setup in _TITLES else None


def migration_path(label: str) -> tuple[GroupSetup, GroupSetup] | None:
    """The ``migration`` churn under ``label``: (the classic group it starts from, the consumer
    group it becomes). A classic label upgrades to KIP-848 uniform; a consumer label is reached
    from cooperative-sticky (sim/churn.churn_scenario)."""
    setup = group_setup(label)
    if setup is None:
        return None
    if setup.group_protocol is GroupProtocol.CONSUMER:
        return COOPERATIVE, setup
    return setup, CONSUMER_UNIFORM


@dataclass(frozen=True, slots=True)
class ChurnFigures:
    """One churn under one setup: means over its runs (seeds), in seconds."""

    churn: str
    setup: GroupSetup
    unowned_partition_s: float
    pause_p50_s: float
    pause_max_s: float
    records_twice: float
    rebalances: float
    longest_unstable_s: float
    stop_the_world_partition_s: float


@dataclass(frozen=True, slots=True)
class UpgradeCost:
    """What a rolling upgrade from ``source`` to ``target`` costs (the ``migration`` churn), with
    the plain rolling restart of the source group beside it (the same restarts, no upgrade)."""

    source: GroupSetup
    target: GroupSetup
    unowned_partition_s: float
    plain_restart_unowned_partition_s: float | None
    records_twice: float
    rebalances: float
    unstable_s: float
    longest_unstable_s: float
    stop_the_world_partition_s: float


@dataclass(frozen=True, slots=True)
class MigrationAnswer:
    """Every churn under every setup swept, and the rolling upgrades' costs."""

    figures: tuple[ChurnFigures, ...]
    costs: tuple[UpgradeCost, ...]

    def sentences(self) -> list[str]:
        """The answer in sentences with numbers: what KIP-848 buys over cooperative-sticky (and
        eager), per churn, then what each upgrade costs."""
        lines: list[str] = []
        by_churn: dict[str, dict[GroupSetup, ChurnFigures]] = {}
        for row in self.figures:
            by_churn.setdefault(row.churn, {})[row.setup] = row
        for churn, by in by_churn.items():
            new, old = by.get(CONSUMER_UNIFORM), by.get(COOPERATIVE)
            if new is None or old is None:
                continue
            a, b = round(new.unowned_partition_s, 1), round(old.unowned_partition_s, 1)
            change = f"{(a - b) / b * 100:+.0f}%" if b else "n/a"
            line = (f"{churn}: KIP-848 (uniform) leaves {a:,.1f} partition-seconds unowned against {b:,.1f} for "
                    f"cooperative-sticky ({change}); {round(new.rebalances)} rebalances against "
                    f"{round(old.rebalances)}; {round(new.records_twice)} records processed twice against "
                    f"{round(old.records_twice)}; longest unstable stretch {round(new.longest_unstable_s, 1):.1f} s "
                    f"against {round(old.longest_unstable_s, 1):.1f} s.")
            eager = by.get(EAGER)
            if eager is not None:
                line += (f" Eager stops the world for {round(eager.stop_the_world_partition_s, 1):,.1f} partition-seconds; "
                         "neither cooperative-sticky nor KIP-848 does.")
            lines.append(line)
        for cost in self.costs:
            plain = ("" if cost.plain_restart_unowned_partition_s is None
                     else f" ({cost.plain_restart_unowned_partition_s:,.1f})")
            lines.append(
                f"Rolling upgrade {cost.source.title} -> {cost.target.title}: {cost.unowned_partition_s:,.1f}{plain} "
                f"partition-seconds unowned (in brackets: a plain rolling restart of the same group), "
                f"{round(cost.rebalances)} rebalances, {round(cost.records_twice)} records processed twice, "
                f"unstable for {cost.unstable_s:,.1f} / {cost.longest_unstable_s:,.1f} s (total / longest stretch), "
                f"{round(cost.stop_the_world_partition_s, 1):,.1f} stop-the-world partition-seconds.")
        return lines

    def as_dict(self) -> dict[str, Any]:
        def setup_fields(row: ChurnFigures | UpgradeCost) -> dict[str, Any]:
            values = ((f.name, getattr(row, f.name)) for f in fields(row))
            return {name: value.as_dict() if isinstance(value, GroupSetup) else value for name, value in values}

        return {"verdict": self.sentences(), "figures": [setup_fields(r) for r in self.figures],
                "costs": [setup_fields(c) for c in self.costs]}


NO_MIGRATION_ANSWER = MigrationAnswer((), ())


def extra_metric(sims: pd.DataFrame, key: str) -> pd.Series:
    """One figure of each run's ``extra_metrics`` (None where the run has none)."""
    return sims["extra_metrics"].map(lambda m: (m or {}).get(key) if isinstance(m, dict) else None)


def has_load(sims: pd.DataFrame) -> pd.Series:
    """Which runs had a load model (their ``extra_metrics`` carry its figures)."""
    return extra_metric(sims, "max_lag_records").notna()


def _runs(sims: pd.DataFrame, churns: set[str] | None, *, exclude: str | None = None) -> pd.DataFrame:
    """The runs without error swept over a protocol (of ``churns``, or all but ``exclude``), with
    their ``setup``."""
    ok = sims[sims["error"].isna()].copy()
    if churns is not None:
        ok = ok[ok["scenario"].isin(churns)]
    if exclude is not None:
        ok = ok[ok["scenario"] != exclude]
    ok["setup"] = ok["strategy"].map(lambda label: group_setup(str(label)))
    return ok[ok["setup"].notna()]


def setup_of(value: Any) -> GroupSetup:
    """A ``setup`` cell (``_runs`` keeps only rows that have one)."""
    assert isinstance(value, GroupSetup)
    return value


def _number(value: Any) -> float:
    return float(value)


def _mean_seconds(value: Any) -> float:
    return float(value) / 1000


def churn_figures(sims: pd.DataFrame) -> tuple[ChurnFigures, ...]:
    """Per churn and setup (runs swept over ``protocol``), the figures that answer "should we
    migrate?" (means over seeds); the ``migration`` churn is costed apart (``upgrade_costs``)."""
    import pandas as pd

    ok = _runs(sims[~has_load(sims)], None, exclude=MIGRATION_CHURN)  # skewed-load runs are costed apart
    if ok.empty:
        return ()
    for key in ("unowned_partition_ms", "member_pause_p50_ms", "member_pause_max_ms", "longest_unstable_ms"):
        ok[key] = pd.to_numeric(extra_metric(ok, key), errors="coerce")
    grouped = ok.groupby(["scenario", "setup"], sort=False).agg(
        unowned=("unowned_partition_ms", "mean"), pause_p50=("member_pause_p50_ms", "mean"),
        pause_max=("member_pause_max_ms", "mean"), duplicates=("records_processed_twice", "mean"),
        rebalances=("rebalances", "mean"), unstable=("longest_unstable_ms", "mean"),
        stw=("stop_the_world_partition_ms", "mean")).reset_index()
    grouped["order"] = grouped["setup"].map(SETUPS.index)
    grouped = grouped.sort_values(["scenario", "order"])
    return tuple(
        ChurnFigures(churn=str(r.scenario), setup=setup_of(r.setup), unowned_partition_s=_mean_seconds(r.unowned),
                     pause_p50_s=_mean_seconds(r.pause_p50), pause_max_s=_mean_seconds(r.pause_max),
                     records_twice=_number(r.duplicates), rebalances=_number(r.rebalances),
                     longest_unstable_s=_mean_seconds(r.unstable), stop_the_world_partition_s=_mean_seconds(r.stw))
        for r in grouped.itertuples())


def upgrade_costs(sims: pd.DataFrame) -> tuple[UpgradeCost, ...]:
    """What each rolling upgrade costs (the ``migration`` churn), beside a plain rolling restart
    of the group it starts from (the same events, consumers coming back on the same protocol)."""
    import pandas as pd

    ok = _runs(sims, {MIGRATION_CHURN, PLAIN_RESTART_CHURN})
    if ok.empty or not (ok["scenario"] == MIGRATION_CHURN).any():
        return ()
    for key in ("unowned_partition_ms", "unstable_ms", "longest_unstable_ms"):
        ok[key] = pd.to_numeric(extra_metric(ok, key), errors="coerce")
    grouped = ok.groupby(["scenario", "strategy", "setup"], sort=False).agg(
        unowned=("unowned_partition_ms", "mean"), duplicates=("records_processed_twice", "mean"),
        rebalances=("rebalances", "mean"), unstable=("unstable_ms", "mean"), longest=("longest_unstable_ms", "mean"),
        stw=("stop_the_world_partition_ms", "mean")).reset_index()
    restarts: dict[GroupSetup, Any] = {setup_of(r.setup): r for r in grouped[grouped["scenario"] == PLAIN_RESTART_CHURN].itertuples()}
    costs: list[tuple[int, UpgradeCost]] = []
    for r in grouped[grouped["scenario"] == MIGRATION_CHURN].itertuples():
        path = migration_path(str(r.strategy))
        if path is None:
            continue
        source, target = path
        plain = restarts.get(source)
        costs.append((SETUPS.index(setup_of(r.setup)), UpgradeCost(
            source=source, target=target, unowned_partition_s=_mean_seconds(r.unowned),
            plain_restart_unowned_partition_s=None if plain is None else _mean_seconds(plain.unowned),
            records_twice=_number(r.duplicates), rebalances=_number(r.rebalances), unstable_s=_mean_seconds(r.unstable),
            longest_unstable_s=_mean_seconds(r.longest), stop_the_world_partition_s=_mean_seconds(r.stw))))
    # in the order of the setups the runs were swept under
    return tuple(cost for _, cost in sorted(costs, key=lambda pair: pair[0]))


def migration_answer(sims: pd.DataFrame) -> MigrationAnswer:
    """"Should we migrate?" from the ``simulations`` table (empty when no run was swept over
    protocols)."""
    return MigrationAnswer(churn_figures(sims), upgrade_costs(sims))
