"""``kafka-rebalance simulate``: run a scenario on the simulator and say what happened: the
answer first (the rebalances in a line, the costs, the load model's figures of a ``load:``
scenario, the final assignment), the event-by-event timeline only with ``--timeline``."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from kafka_rebalance.cli import inputs
from kafka_rebalance.cli.app import cli
from kafka_rebalance.cli.errors import bad_input_exits, fail
from kafka_rebalance.cli.limits import check_scenario_limits
from kafka_rebalance.sim import load_scenario, run_simulation, write_log


@cli.command("simulate")
@click.argument("file")
@click.option("--json", "as_json", is_flag=True, help="Print the result JSON of docs/scenario.md.")
@click.option("--log", "log_path", default=None, metavar="FILE",
              help="Also write the coordinator's log in Kafka's GroupCoordinator format.")
@click.option("--seed", type=int, default=None, help="Override the scenario's seed.")
@click.option("--timeline", is_flag=True, help="Also print every rebalance: who owned, lost and gained what.")
def simulate_command(file: str, as_json: bool, log_path: str | None, seed: int | None, timeline: bool) -> None:
    """Simulate the consumer-group scenario FILE (YAML or JSON, or - for stdin)."""
    if log_path is not None:
        with bad_input_exits():
            inputs.check_output_file(log_path, "--log")
    with bad_input_exits(file):
        scenario = load_scenario(inputs.load_document(file, "a scenario (YAML or JSON)"))
        check_scenario_limits(scenario)
    if not scenario.events:
        click.echo(f"{inputs.display_name(file)}: the scenario has no events, so no consumer ever joins; "
                   "nothing happens", err=True)
        if not as_json:
            return
    run = run_simulation(scenario, seed)
    if log_path:
        try:
            write_log(run, log_path)
        except OSError as exc:
            raise fail(f"{log_path}: cannot write the log: {exc.strerror or type(exc).__name__}") from None
    result = run.to_json()
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    console = Console(highlight=False)
    print_answer(result, scenario.effective_end_ms, console)
    if timeline:
        console.print()
        print_timeline(result, console)
    else:
        console.print(f"add --timeline for the {len(result['rebalances'])} rebalance(s) one by one")
    if log_path:
        console.print(f"wrote the coordinator's log to {log_path}", soft_wrap=True)


def _partitions(parts: list[str]) -> str:
    return ", ".join(parts) if parts else "-"


def headline(result: dict[str, Any], end_ms: int) -> str:
    """What happened, in a sentence: the rebalances, how long they took, how the group ended."""
    rebalances = result["rebalances"]
    if not rebalances:
        return f"{result['scenario']}: no rebalance in {end_ms / 1000:,.1f} s of simulated time."
    done = [r for r in rebalances if r["end_ms"] is not None]
    longest = max(done, key=lambda r: r["end_ms"] - r["start_ms"], default=None)
    open_at_end = len(rebalances) - len(done)
    members = len(result["final_assignment"])
    text = (f"{result['scenario']}: {len(rebalances)} rebalance(s) in {end_ms / 1000:,.1f} s of simulated time, "
            f"in {sum(r['end_ms'] - r['start_ms'] for r in done) / 1000:,.1f} s in all")
    if longest is not None:
        text += (f" (the longest {(longest['end_ms'] - longest['start_ms']) / 1000:,.1f} s, generation "
                 f"{longest['generation']})")
    text += f"; {members} member(s) at the end"
    if open_at_end:
        text += f", {open_at_end} rebalance(s) still running"
    strategies = sorted({f"{r['strategy']} / {r['protocol']}" for r in done if r["strategy"]})
    if strategies:
        text += f"; {', '.join(strategies)}"
    return text + f"; coordinator __consumer_offsets-{result['coordinator_partition']}."


def print_answer(result: dict[str, Any], end_ms: int, console: Console) -> None:
    """The answer: what happened, what it cost, the load model's figures, who owns what."""
    console.print(f"[bold]{headline(result, end_ms)}[/bold]")
    metrics = Table(title="what it cost", title_justify="left")
    metrics.add_column("metric")
    metrics.add_column("value", justify="right")
    for name, value in result["metrics"].items():
        metrics.add_row(name, f"{value:,}" if isinstance(value, int) else str(value))
    console.print(metrics)
    load = result.get("load")
    if load is not None:
        console.print(load_table(load))
    final = Table(title="final assignment", title_justify="left")
    final.add_column("member")
    final.add_column("partitions", overflow="fold")
    for member, parts in result["final_assignment"].items():
        final.add_row(member, _partitions(parts))
    console.print(final)


def print_timeline(result: dict[str, Any], console: Console) -> None:
    """Every rebalance: when, why, who owned, lost and gained what."""
    console.print(f"[bold]timeline[/bold]  coordinator: __consumer_offsets-{result['coordinator_partition']}")
    console.print()
    for r in result["rebalances"]:
        end = "still running at the end" if r["end_ms"] is None else f"{r['end_ms']} ms ({r['end_ms'] - r['start_ms']} ms)"
        head = f"[bold]generation {r['generation']}[/bold]  {r['start_ms']} ms -> {end}"
        if r["strategy"]:
            head += f"  {r['strategy']} / {r['protocol']}  leader {r['leader']}"
        console.print(head)
        console.print(f"    reason: {r['reason'] or '-'}")
        pause = r.get("stop_the_world_partition_ms", 0)
        console.print(f"    stop-the-world: {pause} partition-ms" + ("  [red](kept partitions paused)[/red]" if pause else ""))
        if not r["members"] and r["end_ms"] is not None:
            console.print("    the group is now empty")
        for member in r["members"]:
            lost, gained = r["revoked"].get(member, []), r["added"].get(member, [])
            keeps = r["assignment"].get(member, [])
            console.print(f"    {member}: owns {_partitions(keeps)}"
                          + (f"  [red]revoked {_partitions(lost)}[/red]" if lost else "")
                          + (f"  [green]added {_partitions(gained)}[/green]" if gained else ""))
        console.print()


def load_table(load: dict[str, Any]) -> Table:
    """The load model's figures (docs/scenario.md, "Load"): lag, drain times, record delay."""
    table = Table(title="load", title_justify="left")
    table.add_column("figure")
    table.add_column("value", justify="right")
    where = f" ({load['max_lag_member']} at {load['max_lag_at_ms']} ms)" if load["max_lag_member"] else ""
    table.add_row("max_lag (records)", f"{load['max_lag']:,}{where}")
    table.add_row("max_total_lag (records)", f"{load['max_total_lag']:,}")
    lag = load.get("lag") or {}
    if lag.get("time_ms"):
        end = sum(series[-1] for series in lag["members"].values()) + lag["unowned"][-1]
        per_second = load["records_produced"] / max(lag["time_ms"][-1] / 1000, 1e-3)
        state = "keeps up" if end <= per_second else "falls behind"  # within one second of production or not
        table.add_row("group lag at the end (records)", f"{end:,} ({state})")
    table.add_row("p99_delay_ms", f"{load['p99_delay_ms']:,}")
    drained = sorted(d for d in load["drain_ms"] if d is not None)
    if drained:
        table.add_row("drain_ms after rebalances (p50 / max)", f"{drained[len(drained) // 2]:,} / {drained[-1]:,}")
    table.add_row("rebalances not drained by the end", str(sum(1 for d in load["drain_ms"] if d is None)))
    table.add_row("records produced / consumed", f"{load['records_produced']:,} / {load['records_consumed']:,}")
    return table
