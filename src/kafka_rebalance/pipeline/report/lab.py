"""The lab report: what a sweep shows (its counts, the statements checked against the data, the
answers to "should we migrate to KIP-848?" and "does load-aware assignment pay off?"), built once (``lab_answer``) and rendered as HTML here
and for the terminal in ``report.terminal``; plus the figures."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib
import matplotlib.patches
import matplotlib.pyplot as plt
import matplotlib.ticker
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from kafka_rebalance.pipeline.load_answer import (
    LOAD_NAMES,
    LOAD_ORDER,
    NO_LOAD_ANSWER,
    LoadAnswer,
    load_answer,
)
from kafka_rebalance.pipeline.migration import (
    DEFAULT_HEARTBEAT_MS,
    HEARTBEAT_SETTING,
    MARGIN,
    MigrationAnswer,
    eager_sentence,
    migration_answer,
    upgrade_sentence,
)
from kafka_rebalance.pipeline.report.page import (
    Figure,
    cards,
    empty_figure,
    figure_section,
    format_value,
    generated_note,
    page,
    pyplot,
    render,
    section,
    strategy_colour,
    strategy_style,
    table,
)

pyplot()  # the reports' style and the off-screen backend, before this module draws anything

STRATEGY_ORDER = ["range", "roundrobin", "sticky", "cooperative-sticky"]
STOP_COLOUR = "#000000"  # a stop-the-world pause: black, no member's colour
EAGER_STRATEGIES = ("range", "roundrobin", "sticky")
# Columns that identify a configuration apart from the strategy (for picking comparable runs).
_CONFIG_COLUMNS = ["scenario", "seed", "group_size", "total_partitions", "session_timeout_ms",
                   "heartbeat_interval_ms", "max_poll_interval_ms", "max_poll_records", "produce_records_per_s"]


def _strategy_rank(strategy: str) -> tuple[int, str]:
    return (STRATEGY_ORDER.index(strategy) if strategy in STRATEGY_ORDER else len(STRATEGY_ORDER), strategy)


def pick_showcase(sims: pd.DataFrame) -> list[str]:
    """Run ids of one configuration under every strategy: the sweep's showcase run if it marks
    one, else the first scenario swept over more than one strategy."""
    ok = sims[sims["error"].isna()]
    if ok.empty:
        return []
    candidates = ok[ok["showcase"].fillna(False)]
    if candidates.empty:
        per_scenario = ok.groupby("scenario")["strategy"].nunique()
        multi = [s for s in ok["scenario"].unique() if per_scenario.get(s, 0) > 1]
        if not multi:
            return []
        candidates = ok[ok["scenario"] == multi[0]]
    swept_extra = [c for c in candidates.columns if c not in _CONFIG_COLUMNS and c not in _RESULT_COLUMNS]
    keys = [c for c in _CONFIG_COLUMNS + swept_extra if c in candidates.columns]
    reference = candidates.sort_values(["seed", "run_id"]).iloc[0]
    same = candidates
    for key in keys:
        value = reference[key]
        same = same[same[key].isna()] if pd.isna(value) else same[same[key] == value]
    same = same.drop_duplicates("strategy")
    by_strategy = sorted(zip(same["strategy"], same["run_id"], strict=True), key=lambda pair: _strategy_rank(pair[0]))
    return [run_id for _, run_id in by_strategy]


_RESULT_COLUMNS = {"run_id", "sweep", "label", "strategy", "rebalances", "partitions_moved",
                   "stop_the_world_partition_ms", "max_partition_unowned_ms", "records_processed_twice",
                   "records_lost", "min_partitions_moved", "final_balance", "final_members", "group_protocol",
                   "rebalance_protocol",
                   "chosen_strategy", "coordinator_partition", "extra_metrics", "showcase", "error"}


def _member_colours(members: Sequence[str]) -> dict[str, str]:
    # Okabe-Ito without black (it marks pauses), then Tol's muted
    # colours: told apart with the common colour-vision deficiencies.
    palette = ["#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#882255", "#44AA99",
               "#999933", "#DDCC77", "#332288"]
    return {m: palette[i % len(palette)] for i, m in enumerate(sorted(members, key=_natural_key))}


def _natural_key(text: str) -> tuple[int | str, ...]:
    import re

    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(text)))


def ownership_figure(sims: pd.DataFrame, ownership: pd.DataFrame | None, rebalances: pd.DataFrame | None,
                     run_ids: list[str]) -> Figure:
    title = "Partition ownership over time, per strategy"
    caption = ("The same scenario and seed under each strategy. Each row is a partition, coloured by the member "
               "consuming it; grey bands are rebalances. Black marks a stop-the-world pause: the partition was "
               "revoked and given back to the same member (often milliseconds, so drawn wider than it lasted); "
               "hatching marks a hand-off to another member, during which nobody consumes the partition. EAGER "
               "strategies revoke everything at every rebalance, so every row stops; cooperative-sticky only "
               "stops the partitions that move.")
    if not run_ids or ownership is None or ownership.empty:
        return Figure("ownership_timeline", title, caption, empty_figure("no scenario swept over strategies"),
                      pd.DataFrame())
    runs = sims.set_index("run_id").loc[run_ids]
    partitions = sorted(ownership["partition"].unique(), key=_natural_key)
    members = sorted(ownership["member"].unique(), key=_natural_key)
    colours = _member_colours(members)
    # Zoom on the rebalances after the group first settled, where strategies differ.
    later = rebalances[rebalances["generation"] > 1] if rebalances is not None and not rebalances.empty else None
    end_all = float(ownership["end_ms"].max())
    if later is not None and not later.empty:
        lo = float(later["start_ms"].min())
        hi = float(later["end_ms"].fillna(end_all).max())
        pad = max(1500.0, 0.25 * (hi - lo))
        x_lo, x_hi = max(0.0, lo - pad), min(end_all, hi + pad)
    else:
        x_lo, x_hi = 0.0, end_all
    min_gap_s = (x_hi - x_lo) / 1000 * 0.006
    rows = len(partitions)
    panel_height = max(1.1, 0.2 * rows + 0.7)
    fig, axes = plt.subplots(len(run_ids), 1, figsize=(11, panel_height * len(run_ids) + 0.8), sharex=True,
                             squeeze=False)
    elements = 0
    for ax, run_id in zip(axes[:, 0], run_ids, strict=True):
        run = runs.loc[run_id]
        mine = ownership[ownership["run_id"] == run_id]
        for y, partition in enumerate(partitions):
            intervals = mine[mine["partition"] == partition].sort_values("start_ms")
            for member, part in intervals.groupby("member"):
                bars = [(s / 1000, (e - s) / 1000) for s, e in zip(part["start_ms"], part["end_ms"], strict=True)]
                ax.broken_barh(bars, (y - 0.38, 0.76), facecolors=colours[member], linewidth=0)
                elements += len(bars)
            # A gap between two intervals of the same member is a stop-the-world pause (the
            # partition was revoked and given back); often milliseconds, so drawn widened.
            previous = None
            for interval in intervals.itertuples():
                if previous is not None and interval.start_ms > previous.end_ms:
                    gap_mid = (previous.end_ms + interval.start_ms) / 2000
                    gap = max((interval.start_ms - previous.end_ms) / 1000, min_gap_s)
                    if interval.member == previous.member:
                        ax.broken_barh([(gap_mid - gap / 2, gap)], (y - 0.45, 0.9), facecolors=STOP_COLOUR, linewidth=0)
                    else:
                        ax.broken_barh([(previous.end_ms / 1000, (interval.start_ms - previous.end_ms) / 1000)],
                                       (y - 0.38, 0.76), facecolors="none", edgecolor="#1d2733", hatch="///",
                                       linewidth=0.4)
                    elements += 1
                previous = interval
        if rebalances is not None:
            of_run = rebalances[rebalances["run_id"] == run_id]
            for start_ms, end_ms in zip(of_run["start_ms"], of_run["end_ms"], strict=True):
                end = end_ms if pd.notna(end_ms) else end_all
                ax.axvspan(start_ms / 1000, end / 1000, color="#9aa5b1", alpha=0.25, lw=0)
        stw = run["stop_the_world_partition_ms"]
        protocol = run["rebalance_protocol"] if isinstance(run["rebalance_protocol"], str) else run["group_protocol"]
        ax.set_title(f"{run['strategy']} ({protocol}): stop-the-world {format_value(int(stw))} partition-ms, "
                     f"{format_value(int(run['partitions_moved']))} partition(s) moved, {format_value(int(run['rebalances']))} "
                     "rebalances", loc="left", fontsize=10)
        ax.set_yticks(range(rows), partitions if rows <= 24 else [""] * rows)
        ax.set_ylim(-0.6, rows - 0.4)
        ax.invert_yaxis()
        ax.set_xlim(x_lo / 1000, x_hi / 1000)
    axes[-1, 0].set_xlabel("simulated time (s)")
    handles = [matplotlib.patches.Patch(color=colours[m], label=m) for m in members[:12]]
    handles.append(matplotlib.patches.Patch(color="#9aa5b1", alpha=0.4, label="rebalance"))
    handles.append(matplotlib.patches.Patch(color=STOP_COLOUR, label="stop-the-world (revoked, same owner; widened)"))
    handles.append(matplotlib.patches.Patch(facecolor="none", edgecolor="#1d2733", hatch="///",
                                            label="hand-off to a new owner"))
    fig.legend(handles=handles, loc="upper center", ncol=min(len(handles), 4), frameon=False,
               bbox_to_anchor=(0.5, 1.0 + 0.25 / max(len(run_ids), 1)))
    fig.tight_layout()
    scenario = runs.iloc[0]["scenario"]
    caption = f"Scenario <b>{html.escape(str(scenario))}</b>, seed {int(runs.iloc[0]['seed'])}. " + caption
    data = ownership.merge(runs[["strategy"]].reset_index(), on="run_id", suffixes=("_table", ""))
    data = data[["strategy", "partition", "member", "start_ms", "end_ms"]]
    return Figure("ownership_timeline", title, caption, render(fig, elements), data)


def _grouped_bars(summary: pd.DataFrame, value: str, ylabel: str, *, marker: str | None = None,
                  marker_label: str = "", log: bool = False) -> tuple[MplFigure, int]:
    scenarios = list(dict.fromkeys(summary["scenario"]))
    strategies = sorted(summary["strategy"].unique(), key=_strategy_rank)
    width = 0.8 / max(len(strategies), 1)
    fig, ax = plt.subplots(figsize=(11, 3.8))
    top = float(summary[value].max() or 0) if not summary.empty else 0
    for i, strategy in enumerate(strategies):
        part = summary[summary["strategy"] == strategy].set_index("scenario")
        xs = [k + (i - (len(strategies) - 1) / 2) * width for k in range(len(scenarios))]
        heights = [float(part[value].get(s, float("nan"))) if s in part.index else float("nan") for s in scenarios]
        ax.bar(xs, heights, width=width * 0.92, color=strategy_colour(strategy, i), label=strategy)
        for x, h in zip(xs, heights, strict=True):
            if h == 0:
                ax.text(x, 0, "0", ha="center", va="bottom", fontsize=8, color="#1d2733")
        if marker:
            marks = [float(part[marker].get(s, float("nan"))) if s in part.index else float("nan") for s in scenarios]
            ax.scatter(xs, marks, marker="_", s=160, color="#1d2733", zorder=3,
                       label=marker_label if i == 0 else None)
    ax.set_xticks(range(len(scenarios)), scenarios, rotation=20, ha="right")
    ax.set_ylabel(ylabel)
    if log and top > 0:
        ax.set_yscale("symlog", linthresh=max(1.0, top / 1000))
    ax.grid(axis="y", color="#e9ecef")
    ax.legend(frameon=False, ncol=5, loc="upper left", bbox_to_anchor=(0, 1.15))
    return fig, len(scenarios) * len(strategies)


def lab_figures(sims: pd.DataFrame, summary: pd.DataFrame, ownership: pd.DataFrame | None,
                rebalances: pd.DataFrame | None) -> list[Figure]:
    figures = [ownership_figure(sims, ownership, rebalances, pick_showcase(sims))]
    if summary.empty:
        return figures
    fig, n = _grouped_bars(summary, "stop_the_world_partition_ms", "partition-ms (mean over runs, symlog)",
                           log=True)
    figures.append(Figure(
        "stop_the_world", "Stop-the-world by strategy",
        "Partition-milliseconds during which a partition that kept its owner was nonetheless not consumed "
        "because of a rebalance (EAGER revokes everything first). Mean over the runs of each scenario.",
        render(fig, n), summary[["scenario", "strategy", "runs", "stop_the_world_partition_ms",
                                 "max_stop_the_world_partition_ms"]]))
    fig, n = _grouped_bars(summary, "partitions_moved", "partitions moved (mean over runs)",
                           marker="min_partitions_moved", marker_label="minimum needed for balance")
    figures.append(Figure(
        "partitions_moved", "Partitions moved by strategy",
        "Partitions that changed owner over the run; the black tick is the minimum any assignor must move to "
        "stay balanced after each membership change (shown where all members subscribe to the same topics).",
        render(fig, n), summary[["scenario", "strategy", "runs", "partitions_moved", "min_partitions_moved"]]))
    fig, n = _grouped_bars(summary, "final_balance", "max - min partitions per member (mean)")
    figures.append(Figure(
        "balance", "Balance by strategy",
        "Spread of the final assignment: the most partitions any member has minus the fewest (0 or 1 is "
        "balanced). Range balances each topic on its own and RoundRobin ignores who may take what, so both "
        "go uneven when topics or subscriptions differ.",
        render(fig, n), summary[["scenario", "strategy", "runs", "final_balance", "max_final_balance"]]))
    fig, n = _grouped_bars(summary, "max_partition_unowned_ms", "ms (mean over runs)")
    figures.append(Figure(
        "unowned", "Longest time a partition had no owner",
        "Includes the initial join (the group's first rebalance waits group.initial.rebalance.delay.ms).",
        render(fig, n), summary[["scenario", "strategy", "runs", "max_partition_unowned_ms"]]))
    return figures


def lab_checks(sims: pd.DataFrame) -> list[tuple[bool, str]]:
    """The statements the report makes about the sweep, each checked against the data."""
    ok = sims[sims["error"].isna()]
    checks: list[tuple[bool, str]] = []
    coop = ok[ok["strategy"] == "cooperative-sticky"]
    eager = ok[ok["strategy"].isin(EAGER_STRATEGIES)]
    if not coop.empty:
        worst = int(coop["stop_the_world_partition_ms"].max())
        checks.append((worst == 0, f"cooperative-sticky: stop-the-world is {worst} partition-ms at most over "
                                   f"{len(coop)} run(s)"))
    if not eager.empty:
        later = eager[eager["rebalances"] > 1]
        positive = int((later["stop_the_world_partition_ms"] > 0).sum())
        checks.append((positive > 0, f"eager strategies: stop-the-world above 0 in {positive} of {len(later)} "
                                     "run(s) with more than one rebalance (mean "
                                     f"{format_value(float(later['stop_the_world_partition_ms'].mean() or 0))} partition-ms)"))
    sticky = ok[(ok["strategy"] == "sticky") & ok["min_partitions_moved"].notna()]
    if not sticky.empty:
        over = sticky[sticky["partitions_moved"] > sticky["min_partitions_moved"]]
        checks.append((over.empty, f"sticky moves no more partitions than the minimum needed for balance in "
                                   f"{len(sticky) - len(over)} of {len(sticky)} comparable run(s)"))
    for strategy in ("range", "roundrobin"):
        mine = ok[ok["strategy"] == strategy]
        uneven = mine[mine["final_balance"] > 1]
        if not mine.empty:
            names = ", ".join(sorted(uneven["scenario"].unique())) or "none"
            checks.append((True, f"{strategy}: uneven (max - min > 1) in {uneven['scenario'].nunique()} "
                                 f"scenario(s): {names}"))
    lost = int(ok["records_lost"].fillna(0).sum()) if "records_lost" in ok else 0
    checks.append((lost == 0, f"records lost over all runs: {lost}"))
    return checks


@dataclass(frozen=True)
class LabAnswer:
    """What a sweep shows, the same in the terminal and in the report's first sections."""

    sweep: str
    totals: list[tuple[str, int]]
    checks: list[tuple[bool, str]]
    migration: MigrationAnswer  # "should we migrate?" (empty: not swept over protocols)
    failed_runs: list[str]  # "scenario / strategy / seed: error" of the first few failed runs
    tables: str
    report: str
    # "does load-aware assignment pay off?" (empty: no run has a load model)
    load_aware: LoadAnswer = NO_LOAD_ANSWER

    def as_dict(self) -> dict[str, Any]:
        return {"sweep": self.sweep, "totals": dict(self.totals),
                "checks": [{"passed": passed, "statement": text} for passed, text in self.checks],
                "migration": self.migration.as_dict(), "load_aware": self.load_aware.as_dict(), "failed_runs": self.failed_runs,
                "tables": self.tables, "report": self.report}


FAILED_RUNS_TOLD = 5


def lab_answer(sweep_name: str, sims: pd.DataFrame, tables: str = "", report: str = "") -> LabAnswer:
    failed = sims[sims["error"].notna()]
    return LabAnswer(
        sweep=sweep_name,
        totals=[("simulations", len(sims)), ("scenarios", int(sims["scenario"].nunique())),
                ("strategies", int(sims["strategy"].nunique())), ("failed runs", len(failed)),
                ("rebalances simulated", int(sims["rebalances"].fillna(0).sum()))],
        checks=lab_checks(sims), migration=migration_answer(sims), load_aware=load_answer(sims),
        failed_runs=[f"{r.scenario} / {r.strategy} / seed {r.seed}: {r.error}"
                     for r in failed.head(FAILED_RUNS_TOLD).itertuples()],
        tables=tables, report=report)


def render_lab_report(answer: LabAnswer, sims: pd.DataFrame, summary: pd.DataFrame, figures: Sequence[Figure],
                      lag: Figure | None = None) -> str:
    failed = sims[sims["error"].notna()]
    sections = [cards(answer.totals)]
    items = "".join(
        f'<li><span class="{"ok" if passed else "bad"}">{"&#10003;" if passed else "&#10007;"}</span> '
        f"{html.escape(text)}</li>" for passed, text in answer.checks)
    sections.append(section("What the sweep shows", f'<ul class="verdict">{items}</ul>'))
    migrate = migration_section(answer.migration)
    if migrate:
        sections.append(migrate)
    load = load_section(answer.load_aware, lag)
    if load:
        sections.append(load)
    sections.extend(figure_section(f) for f in figures)
    if not summary.empty:
        sections.append(section("Per scenario and strategy", table(summary, limit=200),
                                "Means over the runs (seeds and swept parameters) of each scenario."))
    if not failed.empty:
        sections.append(section("Failed runs", table(failed[["scenario", "strategy", "seed", "error"]])))
    subtitle = f"sweep {answer.sweep}: {len(sims)} simulations; {generated_note()}"
    return page("Kafka rebalance lab", subtitle, sections)


# --------------------------------------------------------------------------- should we migrate?

# The analysis is ``pipeline.migration`` (typed, keyed by the setups' enums); these are its tables.


def comparison_table(answer: MigrationAnswer) -> pd.DataFrame:
    """Per churn and setup, the figures behind the verdict (seconds, means over seeds)."""
    return pd.DataFrame([{
        "churn": row.churn,
        "protocol": row.setup.title,
        "unowned partition-s": round(row.unowned_partition_s, 1),
        "pause per member p50 / max s": f"{row.pause_p50_s:.1f} / {row.pause_max_s:.1f}",
        "records twice": round(row.records_twice),
        "rebalances": round(row.rebalances),
        "longest unstable s": round(row.longest_unstable_s, 1),
        "stop-the-world partition-s": round(row.stop_the_world_partition_s, 1),
        "partitions moved": round(row.partitions_moved),
    } for row in answer.figures])


def cost_table(answer: MigrationAnswer) -> pd.DataFrame:
    """What each rolling upgrade costs, beside the same restarts without upgrading."""
    return pd.DataFrame([{
        "rolling upgrade": f"{cost.source.title} -> {cost.target.title}",
        "unowned partition-s": round(cost.unowned_partition_s, 1),
        "same restarts, no upgrade": ("-" if cost.plain_restart_unowned_partition_s is None
                                      else round(cost.plain_restart_unowned_partition_s, 1)),
        "rebalances": round(cost.rebalances),
        "unstable s (longest)": f"{cost.unstable_s:,.1f} ({cost.longest_unstable_s:,.1f})",
        "records twice": round(cost.records_twice),
        "stop-the-world partition-s": round(cost.stop_the_world_partition_s, 1),
    } for cost in answer.costs])


def heartbeat_table(answer: MigrationAnswer) -> pd.DataFrame:
    """Partition-seconds unowned per churn: cooperative-sticky, then KIP-848 uniform at each
    heartbeat interval measured (longest first)."""
    if not answer.heartbeat:
        return pd.DataFrame()
    cooperative = {row.churn: row.unowned_partition_s for row in answer.figures if row.setup.title == "cooperative-sticky"}
    intervals = sorted({h.interval_ms for h in answer.heartbeat}, reverse=True)
    rows = []
    for churn in dict.fromkeys(h.churn for h in answer.heartbeat):
        row: dict[str, object] = {"churn": churn, "cooperative-sticky": round(cooperative[churn], 1)
                                  if churn in cooperative else "-"}
        measured = {h.interval_ms: h for h in answer.heartbeat if h.churn == churn}
        for interval in intervals:
            name = f"KIP-848 {interval:,} ms" + (" (default)" if interval == DEFAULT_HEARTBEAT_MS else "")
            row[name] = round(measured[interval].unowned_partition_s, 1) if interval in measured else "-"
        rows.append(row)
    return pd.DataFrame(rows)


def verdict_list(lines: Sequence[str], *, strong: Sequence[str] = (), heads: bool = True) -> str:
    """An answer's sentences as the report's verdict list: with ``heads``, each verdict's head
    (the words before its first ";": the situation and the verdict) in bold; the ``strong``
    lines all in bold."""
    def item(line: str) -> str:
        if line in strong:
            return f"<li><b>{html.escape(line)}</b></li>"
        head, sep, rest = line.partition("; ")
        if heads and sep:
            return f"<li><b>{html.escape(head)}</b>; {html.escape(rest)}</li>"
        return f"<li>{html.escape(line)}</li>"
    return '<ul class="verdict">' + "".join(item(line) for line in lines) + "</ul>"


def how_to_read(caption: str) -> str:
    """A section's notes on its figures, after the answer."""
    return f'<p class="caption"><b>How to read this:</b> {caption}</p>'


def migration_section(answer: MigrationAnswer) -> str:
    """The verdicts per churn and overall, why, the figures behind them (per churn and setup, per
    heartbeat interval), and what the migration costs."""
    if not answer.figures:
        return ""
    caption = ("The same churn under each protocol (sim/churn.py: a typical service's costs, see "
               "docs/scenarios.md). Unowned partition-seconds: time partitions had no consumer. Pause: per "
               "member, the longest time it owned nothing between two periods of owning something (includes "
               "a restarted member's own downtime). Longest unstable: the longest stretch of back-to-back "
               "rebalances (a cooperative follow-up belongs to the rebalance before it). Both simulators "
               "charge the listener work (revocation_ms, assignment_ms) to the application thread. "
               f"The verdict: migrate when KIP-848 uniform leaves at most {MARGIN:.0%} more partition-seconds "
               "unowned than cooperative-sticky at the default heartbeat interval; it depends on the heartbeat "
               "interval when a shorter one measured brings it there; wait otherwise.")
    verdicts = [v.sentence() for v in answer.verdicts()]
    overall = answer.overall()
    lines = [*verdicts, *([f"Overall: {overall.sentence}"] if overall is not None else [])]
    eager = eager_sentence(answer.figures)
    body = verdict_list([*lines, *([eager] if eager else [])], strong=lines[-1:] if overall is not None else ())
    why = answer.explanation()
    heartbeat = heartbeat_table(answer)
    if why:
        body += (f"<h3>Why KIP-848 leaves partitions unowned longer</h3>"
                 f'<p class="verdict">{html.escape(why.removeprefix("Why: "))}</p>')
    if not heartbeat.empty:
        body += (f"<p class=\"caption\">Partition-seconds unowned: cooperative-sticky, and KIP-848 uniform at each "
                 f"{HEARTBEAT_SETTING} measured.</p>" + table(heartbeat, limit=50))
    body += "<h3>Every protocol, per churn</h3>" + table(comparison_table(answer), limit=200)
    if answer.costs:
        body += ("<h3>What the migration costs</h3>" + verdict_list([upgrade_sentence(c) for c in answer.costs], heads=False)
                 + table(cost_table(answer), limit=50)
                 + "<p class=\"caption\">The 'migration' churn restarts every member once, one at a time, with "
                   "group.protocol=consumer (the first ConsumerGroupHeartbeat converts the group; members not yet "
                   "upgraded stay in it as classic members); 'same restarts, no upgrade' is the rolling-restart "
                   "churn of the group it starts from. Unstable: time with a rebalance open, in total and the "
                   "longest stretch.</p>")
    return section("Should we migrate to KIP-848?", body + how_to_read(caption))


# --------------------------------------------------------------------------- does load-aware pay off?

def load_table(answer: LoadAnswer) -> pd.DataFrame:
    """Per load scenario and strategy: whether it keeps up, how long it was behind, its drains
    after rebalances, its lag at the end and at worst, the partitions it moved."""
    return pd.DataFrame([{
        "scenario": f.scenario,
        "strategy": f.title,
        "keeps up": "yes" if f.keeps_up else "no",
        "lag at end (records)": round(f.end_lag),
        "behind s": round(f.behind_s),
        "drain p50 / max s": f"{f.drain_p50_s:.1f} / {f.drain_max_s:.1f}",
        "not drained": round(f.undrained, 1),
        "max lag (records)": round(f.max_lag),
        "p99 delay s": round(f.p99_delay_s, 1),
        "moved (most in one)": f"{f.moved:,.0f} ({f.moved_max:,.0f})",
    } for f in answer.figures])


def lag_figure(sims: pd.DataFrame, lag: pd.DataFrame) -> Figure | None:
    """The highest consumer lag over time: small multiples, one row per load scenario (the first
    seed of each), one panel per strategy, the other strategies faint behind it (so no line hides
    another); None when no run had a load model."""
    if lag.empty:
        return None
    first_seed = lag.groupby("scenario")["seed"].transform("min")
    data = lag[(lag["seed"] == first_seed) & lag["strategy"].isin(LOAD_ORDER)]
    scenarios = list(dict.fromkeys(data["scenario"]))
    if not scenarios:
        return None
    strategies = sorted(data["strategy"].unique(), key=LOAD_ORDER.index)
    fig, axes = plt.subplots(len(scenarios), len(strategies), figsize=(11, 2.2 * len(scenarios) + 0.4),
                             squeeze=False, sharex=True, sharey="row")
    elements = 0
    for row, scenario in enumerate(scenarios):
        mine = data[data["scenario"] == scenario]
        for column, strategy in enumerate(strategies):
            ax = axes[row, column]
            for other in strategies:
                line = mine[mine["strategy"] == other].sort_values("time_ms")
                if other != strategy and not line.empty:
                    ax.plot(line["time_ms"] / 1000, line["max_lag"], color="#c8ced6", linewidth=0.8)
                    elements += len(line)
            line = mine[mine["strategy"] == strategy].sort_values("time_ms")
            style, marker = strategy_style(strategy)
            ax.plot(line["time_ms"] / 1000, line["max_lag"], color=strategy_colour(strategy, column),
                    linestyle=style, marker=marker, markevery=max(1, len(line) // 8), markersize=4, linewidth=1.8)
            elements += len(line)
            if row == 0:
                ax.set_title(LOAD_NAMES[strategy], loc="left", fontsize=10, color=strategy_colour(strategy, column))
            if column == 0:
                ax.set_ylabel(f"{scenario}\nmax lag (records)", fontsize=9)
            ax.grid(color="#e9ecef")
            ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    for ax in axes[-1, :]:
        ax.set_xlabel("simulated time (s)")
    fig.tight_layout()
    caption = ("At each sample, the highest lag of any consumer (records produced and not yet consumed on the "
               "partitions it owns), from the load model: per-partition produce rates, each consumer's capacity "
               "shared among its partitions, no consumption while a partition is unowned or its owner paused. "
               "One row per scenario, one panel per strategy (the same vertical scale along a row); the other "
               "strategies are drawn in light grey behind each panel.")
    return Figure("max_lag_over_time", "Maximum consumer lag over time, per strategy", caption,
                  render(fig, elements), data[["scenario", "strategy", "seed", "time_ms", "max_lag", "total_lag"]])


def load_section(answer: LoadAnswer, lag: Figure | None) -> str:
    """The verdicts per load scenario and overall, the figures behind them, the lag plot."""
    if not answer.figures:
        return ""
    caption = ("Skewed produce rates (sim/load.py) under each strategy, on the same events. Keeps up: the group's "
               "lag at the end is within one second of production (its lag stays bounded). Behind: the time the "
               "group's lag exceeded one second of production. Drain: after each rebalance, the time until the "
               "group's lag is back on its pre-rebalance trajectory; 'not drained': rebalances after which it "
               "never was. Max lag: the highest lag of any consumer at any time. p99 delay: the 99th percentile "
               "of the time from a record's production to its consumption (first in, first out per partition; a "
               "record still waiting at the end counts the time until the end). Moved: changes of owner, in all "
               "and the most in one rebalance. The verdict compares load-aware with cooperative-sticky, which "
               "is load-aware without the loads.")
    lines = answer.sentences()
    overall = answer.overall()
    body = (verdict_list(lines, strong=lines[-1:] if overall is not None else ()) + table(load_table(answer), limit=200)
            + how_to_read(caption))
    if lag is not None:
        body += (f"<h3>{html.escape(lag.title)}</h3><p class=\"caption\">{lag.caption}</p>"
                 f'<div class="figure">{lag.image}</div>'
                 f'<p class="csv">Data: <a href="figures/{lag.name}.csv">figures/{lag.name}.csv</a></p>')
    return section("Does load-aware assignment pay off?", body)
