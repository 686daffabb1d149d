"""``kafka-rebalance soak``: random schedules through the simulator on Spark, every invariant
checked, each failing schedule shrunk to a minimal one."""

from __future__ import annotations

import json

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
              help="Directory (or a store's URL, e.g. s3://bucket/prefix) for the Parquet tables "
                   "schedules/ and violations/, and summary.json.")
@click.option("--master", default=None, help="Spark master URL (default local[*]); any URL Spark accepts.")
@click.option("--tasks", type=click.IntRange(min=1, max=1_000_000), default=None,
              help="Spark tasks to split the schedules into (default: 4 per core, at least one per 1000).")
@click.option("--shrink-budget", type=click.IntRange(min=0, max=100_000), default=300, show_default=True,
              help="Simulations a failing schedule may spend on shrinking.")
@click.option("--group-protocol", type=click.Choice([p.value for p in GroupProtocol]),
              default=GroupProtocol.CLASSIC.value, show_default=True,
              help="The groups' protocol: classic (JoinGroup/SyncGroup, eager or cooperative strategies) "
                   "or consumer (KIP-848, a server-side assignor); the same invariants for both.")
@click.option("--migrate", is_flag=True,
              help="The groups migrate during the churn: each consumer restarted in turn with the other "
                   "protocol (a rolling upgrade from classic, a rolling downgrade from consumer), "
                   "3 in 10 rolled back part-way.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON document.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--verbose-spark", is_flag=True, help="Show Spark's own logging on the terminal (else in a log file).")
def soak_command(schedules: int, seed: int, first: int, out_dir: str, master: str | None, tasks: int | None,
                 shrink_budget: int, group_protocol: str, migrate: bool, as_json: bool, quiet: bool,
                 verbose_spark: bool) -> None:
    """Run random schedules (joins, leaves, crashes, GC pauses, slow processing, static bounces,
    new pattern topics, partition increases, coordinator failovers, network delays, lost requests
    and responses) and check that no two group members own a partition at once (each judged from
    its own view), only owners consume, commits never go backwards, no record is lost and the group
    settles. Exit status 1 when any schedule broke an invariant."""
    with bad_input_exits():
        inputs.check_output_dir(out_dir)
        inputs.check_master(master)
    from kafka_rebalance.pipeline.report.terminal import console_for, print_soak_answer
    from kafka_rebalance.pipeline.sim_daemon import SIM_WORKER_DAEMON
    from kafka_rebalance.pipeline.soak import run_soak
    from kafka_rebalance.pipeline.spark import build_session

    spark = build_session(master, "kafka-rebalance soak", quiet=not verbose_spark, worker_daemon=SIM_WORKER_DAEMON)
    with bad_input_exits():
        result = run_soak(spark, schedules, out_dir, seed=seed, first=first, tasks=tasks,
                          shrink_budget=shrink_budget, progress=False if quiet else None,
                          group_protocol=GroupProtocol(group_protocol), migrating=migrate)
    if as_json:
        click.echo(json.dumps(result.answer.as_dict(), indent=2))
    else:
        print_soak_answer(result.answer, console_for())
    if result.failing:
        raise click.exceptions.Exit(1)
