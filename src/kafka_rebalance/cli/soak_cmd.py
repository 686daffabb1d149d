"""``kafka-rebalance soak``: random schedules through the simulator on Spark, every invariant
checked, each failing schedule shrunk to a minimal one."""

from __future__ import annotations

import click

from kafka_rebalance.cli import inputs
from kafka_rebalance.cli.app import cli
from kafka_rebalance.cli.errors import bad_input_exits
from kafka_rebalance.model import GroupProtocol

MAX_SCHEDULES = 100_000_000


@cli.command("soak")
@click.option("--schedules", type=click.IntRange(min=1, max=MAX_SCHEDULES), default=1000, show_default=True,
              help="How many random schedules to run.")
@click.option("--seed", type=click.IntRange(min=0, max=2**63 - 1), default=0, show_default=True,
              help="Master seed: the same seed draws the same schedules.")
@click.option("--first", type=click.IntRange(min=0, max=2**62), default=0, show_default=True,
              help="Number of the first schedule (run a long soak in slices: schedule i is the same in every run).")
@click.option("--out", "out_dir", default="rebalance-soak", show_default=True,
              help="Directory for the Parquet tables schedules/ and violations/, and summary.json.")
@click.option("--master", default=None, help="Spark master URL (default local[*]); any URL Spark accepts.")
@click.option("--tasks", type=click.IntRange(min=1, max=1_000_000), default=None,
              help="Spark tasks to split the schedules into (default: 4 per core, at least one per 1000).")
@click.option("--shrink-budget", type=click.IntRange(min=0, max=100_000), default=300, show_default=True,
              help="Simulations a failing schedule may spend on shrinking.")
@click.option("--group-protocol", type=click.Choice([p.value for p in GroupProtocol]), default=GroupProtocol.CLASSIC.value,
              show_default=True, help="The groups' protocol: classic (JoinGroup/SyncGroup, eager or cooperative "
                                      "strategies) or consumer (KIP-848, a server-side assignor).")
@click.option("--verbose-spark", is_flag=True, help="Keep Spark's own logging.")
def soak_command(schedules: int, seed: int, first: int, out_dir: str, master: str | None, tasks: int | None,
                 shrink_budget: int, group_protocol: str, verbose_spark: bool) -> None:
    """Run random schedules (joins, leaves, crashes, GC pauses, slow processing, static bounces,
    new pattern topics, partition increases, coordinator failovers, network delays, lost requests
    and responses) and check that no two group members own a partition at once (each judged from
    its own view), only owners consume, commits never go backwards, no record is lost and the group
    settles. Exit status 1 when any schedule broke an invariant."""
    with bad_input_exits():
        inputs.check_output_dir(out_dir)
        inputs.check_master(master)
    from kafka_rebalance.pipeline.soak import run_soak
    from kafka_rebalance.pipeline.spark import build_session

    spark = build_session(master, "kafka-rebalance soak", quiet=not verbose_spark)
    with bad_input_exits():
        result = run_soak(spark, schedules, out_dir, seed=seed, first=first, tasks=tasks,
                          shrink_budget=shrink_budget, group_protocol=GroupProtocol(group_protocol))
    broken = ", ".join(f"{name} {count}" for name, count in sorted(result.by_invariant.items()))
    numbers = f"{group_protocol} groups, seed {seed}" + (f", schedules {first:,}-{first + schedules - 1:,}" if first else "")
    click.echo(f"soak: {result.schedules:,} schedules ({numbers}), {result.failing:,} failing"
               f"{f' ({broken})' if broken else ''}, {result.wall_s:,.0f} s on {result.summary['master']}; "
               f"tables in {result.out_dir}/")
    if result.failing:
        raise click.exceptions.Exit(1)
