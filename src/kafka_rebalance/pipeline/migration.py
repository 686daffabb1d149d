""""Should we migrate to KIP-848?": the lab's simulations -> a typed answer, keyed by how a group
runs its rebalances (``GroupSetup``: the group protocol, and the rebalance protocol of a classic
group or the server-side assignor of a consumer group), never by a display label.

A pure function of the ``simulations`` table (``migration_answer``); the terminal, ``--json`` and
the HTML report (``report.lab``) each render the same ``MigrationAnswer``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from enum import Enum
from typing import TYPE_CHECKING, Any, assert_never

from kafka_rebalance.model import GroupProtocol, RebalanceProtocol, ServerAssignorName

if TYPE_CHECKING:
    import pandas as pd

# The churn whose consumers come back on the consumer protocol (sim/churn.py), and the plain
# restarts it is compared with.
MIGRATION_CHURN = "migration"
PLAIN_RESTART_CHURN = "rolling-restart"
# The swept broker setting that explains the gap (Kafka's group.consumer.heartbeat.interval.ms,
# GroupCoordinatorConfig.CONSUMER_GROUP_HEARTBEAT_INTERVAL_MS_DEFAULT = 5000, the simulator's too).
HEARTBEAT_COLUMN = "consumer_heartbeat_interval_ms"
HEARTBEAT_SETTING = "group.consumer.heartbeat.interval.ms"
DEFAULT_HEARTBEAT_MS = 5000
# KIP-848 counts as no worse than cooperative-sticky when it leaves at most this much more
# partition-seconds unowned (simulated costs are estimates; a few percent is noise).
MARGIN = 0.10


def _change(new: float, old: float) -> str:
    """``new`` against ``old`` in words: "12% more", "40% fewer", "as many"."""
    if not old:
        return "more" if new else "as many"
    percent = round((new - old) / old * 100)
    if percent == 0:
        return "as many"
    return f"{abs(percent)}% {'more' if percent > 0 else 'fewer'}"


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
    partitions_moved: float = 0.0


@dataclass(frozen=True, slots=True)
class HeartbeatFigures:
    """One churn under KIP-848 uniform at one ``group.consumer.heartbeat.interval.ms``: means
    over its runs (the default interval's row is the churn's own KIP-848 uniform figures)."""

    churn: str
    interval_ms: int
    unowned_partition_s: float
    partitions_moved: float

    @property
    def unowned_per_move_s(self) -> float:
        """Partition-seconds unowned per partition moved (about what one hand-off costs)."""
        return self.unowned_partition_s / self.partitions_moved if self.partitions_moved else 0.0


class Verdict(Enum):
    MIGRATE = "migrate"
    WAIT = "wait"
    DEPENDS = "it depends"


@dataclass(frozen=True, slots=True)
class ChurnVerdict:
    """Should a cooperative-sticky group under ``churn`` migrate to KIP-848 uniform: judged on
    the partition-seconds each leaves unowned (``kip848_s`` at the default heartbeat interval,
    ``cooperative_s``), and the heartbeat interval that would change the verdict."""

    churn: str
    verdict: Verdict
    kip848_s: float
    cooperative_s: float
    kip848_moved: float
    cooperative_moved: float
    # DEPENDS: the longest interval measured at which KIP-848 is within MARGIN, and its figure;
    # WAIT: the shortest interval measured and its figure (still beyond MARGIN); None when not measured
    interval_ms: int | None = None
    at_interval_s: float | None = None

    def sentence(self) -> str:
        """The verdict and why, in one sentence."""
        compared = (f"KIP-848 uniform leaves {_change(self.kip848_s, self.cooperative_s)} partition-seconds "
                    f"unowned than cooperative-sticky ({self.kip848_s:,.1f} against {self.cooperative_s:,.1f}, "
                    f"moving {self.kip848_moved:,.0f} partitions against {self.cooperative_moved:,.0f})")
        default = f"{DEFAULT_HEARTBEAT_MS:,} ms"
        match self.verdict:
            case Verdict.MIGRATE:
                within = f", within the {MARGIN:.0%} margin," if self.kip848_s > self.cooperative_s else ""
                return f"{self.churn}: migrate; {compared}{within} at the default heartbeat interval of {default}."
            case Verdict.DEPENDS:
                assert self.interval_ms is not None and self.at_interval_s is not None
                return (f"{self.churn}: it depends on {HEARTBEAT_SETTING}; at the default {default} {compared}, at "
                        f"{self.interval_ms:,} ms it leaves {self.at_interval_s:,.1f} "
                        f"({_change(self.at_interval_s, self.cooperative_s)}): migrate with it at {self.interval_ms:,} ms.")
            case Verdict.WAIT:
                shortest = ("" if self.interval_ms is None or self.at_interval_s is None else
                            f", and still {self.at_interval_s:,.1f} with {HEARTBEAT_SETTING} at {self.interval_ms:,} ms")
                return f"{self.churn}: wait; {compared} at the default {default}{shortest}."
            case _:
                assert_never(self.verdict)

    def setting(self) -> str:
        """The setting that would change the verdict, as far as the runs measured it."""
        match self.verdict:
            case Verdict.MIGRATE:
                return (f"a longer {HEARTBEAT_SETTING} than {DEFAULT_HEARTBEAT_MS:,} ms lengthens every hand-off "
                        "(not measured)")
            case Verdict.DEPENDS:
                return f"{HEARTBEAT_SETTING} at {self.interval_ms:,} ms or less"
            case Verdict.WAIT:
                return ("none measured: no shorter heartbeat interval closes the gap" if self.interval_ms is not None
                        else f"{HEARTBEAT_SETTING} (not measured for this situation)")
            case _:
                assert_never(self.verdict)


@dataclass(frozen=True, slots=True)
class OverallVerdict:
    verdict: Verdict
    sentence: str


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
    """Every churn under every setup swept, KIP-848 uniform at the heartbeat intervals swept, and
    the rolling upgrades' costs; the verdicts are computed from these figures."""

    figures: tuple[ChurnFigures, ...]
    costs: tuple[UpgradeCost, ...]
    heartbeat: tuple[HeartbeatFigures, ...] = ()

    def verdicts(self) -> tuple[ChurnVerdict, ...]:
        return churn_verdicts(self.figures, self.heartbeat)

    def overall(self) -> OverallVerdict | None:
        return overall_verdict(self.verdicts())

    def sentences(self) -> list[str]:
        """The answer in sentences with numbers: the verdict per churn, overall, for an eager
        group, why KIP-848 leaves partitions unowned longer, then what each upgrade costs."""
        lines = [v.sentence() for v in self.verdicts()]
        overall = self.overall()
        if overall is not None:
            lines.append(f"Overall: {overall.sentence}")
        lines.extend(line for line in (eager_sentence(self.figures), self.explanation()) if line)
        lines.extend(upgrade_sentence(cost) for cost in self.costs)
        return lines

    def explanation(self) -> str:
        """What in the protocol makes KIP-848 leave partitions unowned longer, with the figures
        of the heartbeat intervals swept (empty without them)."""
        return heartbeat_explanation(self.figures, self.heartbeat)

    def as_dict(self) -> dict[str, Any]:
        def setup_fields(row: ChurnFigures | UpgradeCost) -> dict[str, Any]:
            values = ((f.name, getattr(row, f.name)) for f in fields(row))
            return {name: value.as_dict() if isinstance(value, GroupSetup) else value for name, value in values}

        overall = self.overall()
        return {
            "verdict": None if overall is None else {"verdict": overall.verdict.value, "sentence": overall.sentence},
            "situations": [{"churn": v.churn, "verdict": v.verdict.value, "sentence": v.sentence(),
                            "setting_that_would_change_it": v.setting(), "kip848_unowned_partition_s": v.kip848_s,
                            "cooperative_unowned_partition_s": v.cooperative_s, "heartbeat_interval_ms": v.interval_ms,
                            "at_heartbeat_interval_unowned_partition_s": v.at_interval_s} for v in self.verdicts()],
            "from_eager": eager_sentence(self.figures) or None,
            "why": self.explanation() or None,
            "sentences": self.sentences(),
            "figures": [setup_fields(r) for r in self.figures],
            "heartbeat": [{"churn": h.churn, "heartbeat_interval_ms": h.interval_ms,
                           "unowned_partition_s": h.unowned_partition_s, "partitions_moved": h.partitions_moved}
                          for h in self.heartbeat],
            "costs": [setup_fields(c) for c in self.costs],
        }


def churn_verdicts(figures: Sequence[ChurnFigures], heartbeat: Sequence[HeartbeatFigures]) -> tuple[ChurnVerdict, ...]:
    """Per churn with both KIP-848 uniform and cooperative-sticky figures: migrate when KIP-848
    leaves at most ``MARGIN`` more partition-seconds unowned at the default heartbeat interval;
    else it depends on the heartbeat interval when a shorter one measured brings it within
    ``MARGIN`` (the longest such); else wait."""
    out: list[ChurnVerdict] = []
    for churn, by in _by_churn(figures).items():
        new, old = by.get(CONSUMER_UNIFORM), by.get(COOPERATIVE)
        if new is None or old is None:
            continue
        limit = old.unowned_partition_s * (1 + MARGIN)
        measured = (new.unowned_partition_s, old.unowned_partition_s, new.partitions_moved, old.partitions_moved)
        if new.unowned_partition_s <= limit:
            out.append(ChurnVerdict(churn, Verdict.MIGRATE, *measured))
            continue
        shorter = sorted((h for h in heartbeat if h.churn == churn and h.interval_ms < DEFAULT_HEARTBEAT_MS),
                         key=lambda h: -h.interval_ms)
        enough = next((h for h in shorter if h.unowned_partition_s <= limit), None)
        if enough is not None:
            out.append(ChurnVerdict(churn, Verdict.DEPENDS, *measured, enough.interval_ms, enough.unowned_partition_s))
        else:
            shortest = shorter[-1] if shorter else None
            out.append(ChurnVerdict(churn, Verdict.WAIT, *measured, None if shortest is None else shortest.interval_ms,
                                    None if shortest is None else shortest.unowned_partition_s))
    return tuple(out)


def overall_verdict(verdicts: Sequence[ChurnVerdict]) -> OverallVerdict | None:
    """One verdict over the churns: the same verdict everywhere is that verdict; migrate or
    migrate-with-a-shorter-heartbeat everywhere depends on the heartbeat interval (the shortest
    any churn needs); a mix with wait depends on the group's churn."""
    if not verdicts:
        return None
    kinds = {v.verdict for v in verdicts}
    count = len(verdicts)
    names = {kind: [v.churn for v in verdicts if v.verdict is kind] for kind in Verdict}
    if kinds == {Verdict.MIGRATE}:
        return OverallVerdict(Verdict.MIGRATE, f"migrate: in all {count} situations KIP-848 uniform leaves no more "
                                               "partition-seconds unowned than cooperative-sticky (within "
                                               f"{MARGIN:.0%}).")
    if kinds == {Verdict.WAIT}:
        return OverallVerdict(Verdict.WAIT, f"wait: in all {count} situations KIP-848 uniform leaves more than "
                                            f"{MARGIN:.0%} more partition-seconds unowned than cooperative-sticky, "
                                            "at every heartbeat interval measured.")
    if Verdict.WAIT not in kinds:
        needed = min(v.interval_ms for v in verdicts if v.interval_ms is not None)
        losing = names[Verdict.DEPENDS]
        return OverallVerdict(Verdict.DEPENDS, (
            f"it depends on {HEARTBEAT_SETTING}: at the default {DEFAULT_HEARTBEAT_MS:,} ms KIP-848 uniform leaves more "
            f"partitions unowned in {len(losing)} of {count} situations ({', '.join(losing)}); at {needed:,} ms it is "
            f"no worse in all {count}, for {DEFAULT_HEARTBEAT_MS / needed:g} times the heartbeats to the "
            "coordinator."))
    by_interval: dict[int, list[str]] = {}
    for v in verdicts:
        if v.verdict is Verdict.DEPENDS and v.interval_ms is not None:
            by_interval.setdefault(v.interval_ms, []).append(v.churn)
    good = [", ".join(names[Verdict.MIGRATE])] if names[Verdict.MIGRATE] else []
    good += [f"{' and '.join(churns)} with {HEARTBEAT_SETTING} at {interval:,} ms"
             for interval, churns in sorted(by_interval.items(), reverse=True)]
    return OverallVerdict(Verdict.DEPENDS, (
        f"it depends on your group's churn: migrate if it mostly sees {', or '.join(good)}; wait if it sees "
        f"{', '.join(names[Verdict.WAIT])}, where KIP-848 uniform leaves more partitions unowned at every heartbeat "
        "interval measured."))


def eager_sentence(figures: Sequence[ChurnFigures]) -> str:
    """For a group on eager assignment: KIP-848 uniform against eager over every churn that has
    both (empty when none has)."""
    pairs = [(by[EAGER], by[CONSUMER_UNIFORM]) for by in _by_churn(figures).values()
             if EAGER in by and CONSUMER_UNIFORM in by]
    if not pairs:
        return ""
    eager = sum(e.unowned_partition_s for e, _ in pairs)
    stopped = sum(e.stop_the_world_partition_s for e, _ in pairs)
    new = sum(n.unowned_partition_s for _, n in pairs)
    verdict = "migrate" if new <= eager * (1 + MARGIN) else "wait"
    return (f"A group on eager (range): {verdict}; over {len(pairs)} situations eager leaves "
            f"{eager:,.1f} partition-seconds unowned and stops the world for {stopped:,.1f}, KIP-848 uniform "
            f"{new:,.1f} and never stops the world.")


def _by_churn(figures: Sequence[ChurnFigures]) -> dict[str, dict[GroupSetup, ChurnFigures]]:
    by_churn: dict[str, dict[GroupSetup, ChurnFigures]] = {}
    for row in figures:
        by_churn.setdefault(row.churn, {})[row.setup] = row
    return by_churn


def heartbeat_explanation(figures: Sequence[ChurnFigures], heartbeat: Sequence[HeartbeatFigures]) -> str:
    """Why KIP-848 uniform leaves partitions unowned longer, with the figures of the churns run at
    shorter heartbeat intervals: partitions moved and partition-seconds unowned per move under
    cooperative-sticky, KIP-848 at the default interval and at the shortest measured."""
    by_churn = _by_churn(figures)
    churns = sorted({h.churn for h in heartbeat if h.interval_ms < DEFAULT_HEARTBEAT_MS
                     and COOPERATIVE in by_churn.get(h.churn, {}) and CONSUMER_UNIFORM in by_churn.get(h.churn, {})})
    if not churns:
        return ""
    shortest = min(h.interval_ms for h in heartbeat if h.churn in churns)
    at_shortest = [h for h in heartbeat if h.churn in churns and h.interval_ms == shortest]
    if len(at_shortest) != len(churns):
        return ""

    def per_move(rows: Sequence[ChurnFigures | HeartbeatFigures]) -> tuple[float, float, float]:
        unowned = sum(r.unowned_partition_s for r in rows)
        moved = sum(r.partitions_moved for r in rows)
        return unowned, moved, unowned / moved if moved else 0.0

    old_total, old_moved, old_each = per_move([by_churn[c][COOPERATIVE] for c in churns])
    new_total, new_moved, new_each = per_move([by_churn[c][CONSUMER_UNIFORM] for c in churns])
    short_total, short_moved, short_each = per_move(at_shortest)
    return (
        "Why: a KIP-848 member learns its assignment only from a heartbeat response, so a partition that moves is "
        "released at its old owner's next heartbeat and taken at its new owner's next one, each hand-off waiting on "
        f"{HEARTBEAT_SETTING} ({DEFAULT_HEARTBEAT_MS:,} ms by default), where a classic group hands out every "
        "assignment in the SyncGroup response that ends the rebalance; and a new KIP-848 group has no initial "
        "rebalance delay (group.initial.rebalance.delay.ms is the classic protocol's): its first member takes every "
        "partition and hands them on, heartbeat by heartbeat, as the others join. "
        f"Over {', '.join(churns)}, KIP-848 uniform moved {new_moved:,.0f} partitions ({new_each:,.1f} "
        f"partition-seconds unowned each) against {old_moved:,.0f} ({old_each:,.1f} each) for cooperative-sticky; "
        f"at {shortest:,} ms heartbeats {short_moved:,.0f} ({short_each:,.1f} each), {short_total:,.1f} "
        f"partition-seconds unowned in all against {new_total:,.1f} at {DEFAULT_HEARTBEAT_MS:,} ms and "
        f"{old_total:,.1f} for cooperative-sticky.")


def upgrade_sentence(cost: UpgradeCost) -> str:
    """What one rolling upgrade costs, against the same restarts without it, in one sentence."""
    plain = cost.plain_restart_unowned_partition_s
    against = ("" if plain is None else
               f" ({'more' if cost.unowned_partition_s > plain else 'less'} than the {plain:,.1f} of the same restarts "
               "without upgrading)")
    stopped = (f", and stops the world for {cost.stop_the_world_partition_s:,.1f} partition-seconds"
               if round(cost.stop_the_world_partition_s, 1) else "")
    return (f"Upgrading {cost.source.title} to {cost.target.title} one member at a time leaves partitions unowned "
            f"for {cost.unowned_partition_s:,.1f} partition-seconds{against}; it takes {round(cost.rebalances)} "
            f"rebalances, keeps the group unstable for {cost.unstable_s:,.1f} s ({cost.longest_unstable_s:,.1f} s at "
            f"most at once), processes {round(cost.records_twice):,} records twice{stopped}.")


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

    ok = _runs(default_heartbeat(sims[~has_load(sims)]), None, exclude=MIGRATION_CHURN)  # load: costed apart
    if ok.empty:
        return ()
    for key in ("unowned_partition_ms", "member_pause_p50_ms", "member_pause_max_ms", "longest_unstable_ms"):
        ok[key] = pd.to_numeric(extra_metric(ok, key), errors="coerce")
    grouped = ok.groupby(["scenario", "setup"], sort=False).agg(
        unowned=("unowned_partition_ms", "mean"), pause_p50=("member_pause_p50_ms", "mean"),
        pause_max=("member_pause_max_ms", "mean"), duplicates=("records_processed_twice", "mean"),
        rebalances=("rebalances", "mean"), unstable=("longest_unstable_ms", "mean"),
        stw=("stop_the_world_partition_ms", "mean"), moved=("partitions_moved", "mean")).reset_index()
    grouped = grouped[grouped.groupby("scenario")["setup"].transform("nunique") > 1]  # nothing to compare
    grouped["order"] = grouped["setup"].map(SETUPS.index)
    grouped = grouped.sort_values(["scenario", "order"])
    return tuple(
        ChurnFigures(churn=str(r.scenario), setup=setup_of(r.setup), unowned_partition_s=_mean_seconds(r.unowned),
                     pause_p50_s=_mean_seconds(r.pause_p50), pause_max_s=_mean_seconds(r.pause_max),
                     records_twice=_number(r.duplicates), rebalances=_number(r.rebalances),
                     longest_unstable_s=_mean_seconds(r.unstable), stop_the_world_partition_s=_mean_seconds(r.stw),
                     partitions_moved=_number(r.moved))
        for r in grouped.itertuples())


def default_heartbeat(sims: pd.DataFrame) -> pd.DataFrame:
    """The runs at the default heartbeat interval (not swept over ``HEARTBEAT_COLUMN``)."""
    return sims[sims[HEARTBEAT_COLUMN].isna()] if HEARTBEAT_COLUMN in sims else sims


def heartbeat_figures(sims: pd.DataFrame) -> tuple[HeartbeatFigures, ...]:
    """KIP-848 uniform per churn and heartbeat interval (runs not swept over it: the default),
    for the churns run at more than one interval."""
    import pandas as pd

    if HEARTBEAT_COLUMN not in sims:
        return ()
    ok = _runs(sims[~has_load(sims)], None, exclude=MIGRATION_CHURN)
    ok = ok[ok["setup"] == CONSUMER_UNIFORM].copy()
    if ok.empty:
        return ()
    ok["interval"] = pd.to_numeric(ok[HEARTBEAT_COLUMN], errors="coerce").fillna(DEFAULT_HEARTBEAT_MS).astype(int)
    ok["unowned"] = pd.to_numeric(extra_metric(ok, "unowned_partition_ms"), errors="coerce")
    grouped = ok.groupby(["scenario", "interval"], sort=False).agg(
        unowned=("unowned", "mean"), moved=("partitions_moved", "mean")).reset_index()
    swept = grouped.groupby("scenario")["interval"].transform("nunique") > 1
    grouped = grouped[swept].sort_values(["scenario", "interval"], ascending=[True, False])
    return tuple(HeartbeatFigures(churn=str(r.scenario), interval_ms=int(_number(r.interval)),
                                  unowned_partition_s=_mean_seconds(r.unowned), partitions_moved=_number(r.moved))
                 for r in grouped.itertuples())


def upgrade_costs(sims: pd.DataFrame) -> tuple[UpgradeCost, ...]:
    """What each rolling upgrade costs (the ``migration`` churn), beside a plain rolling restart
    of the group it starts from (the same events, consumers coming back on the same protocol)."""
    import pandas as pd

    ok = _runs(default_heartbeat(sims), {MIGRATION_CHURN, PLAIN_RESTART_CHURN})
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
    return MigrationAnswer(churn_figures(sims), upgrade_costs(sims), heartbeat_figures(sims))
