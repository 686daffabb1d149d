"""``kafka-rebalance lab``: run a sweep of scenarios x strategies x parameters through the
simulator on Spark, write Parquet tables and an HTML report."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kafka_rebalance.cli import inputs
from kafka_rebalance.cli.app import cli
from kafka_rebalance.cli.errors import bad_input_exits
from kafka_rebalance.cli.limits import check_scenario_limits, check_sweep_size
from kafka_rebalance.model import InvalidInput


@cli.command("lab")
@click.argument("sweep_file", required=False)
@click.option("--out", "out_dir", default="rebalance-lab", show_default=True,
              help="Directory (or a store's URL, e.g. s3://bucket/prefix) for the Parquet tables "
                   "(simulations/, rebalances/, moves/, ownership/, lag/) and report.html.")
@click.option("--master", default=None, help="Spark master URL (default local[*]); any URL Spark accepts.")
@click.option("--tasks", type=click.IntRange(min=1, max=1_000_000), default=None,
              help="Spark tasks to split the runs into (default: 4 per core).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON document.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--verbose-spark", is_flag=True, help="Show Spark's own logging on the terminal (else in a log file).")
def lab_command(sweep_file: str | None, out_dir: str, master: str | None, tasks: int | None, as_json: bool,
                quiet: bool, verbose_spark: bool) -> None:
    """Run every combination of a sweep SWEEP_FILE (YAML) through the simulator on Spark.

    Without SWEEP_FILE, runs the built-in sweep of the seed situations under every strategy.
    """
    from kafka_rebalance.pipeline.sweep import load_sweep, parse_sweep
    from kafka_rebalance.sim import load_scenario

    with bad_input_exits():
        inputs.check_output_dir(out_dir)
        inputs.check_master(master)
    with bad_input_exits(sweep_file):
        if sweep_file is None:
            sweep = load_sweep(None)
        else:
            data = inputs.load_document(sweep_file, "a sweep (YAML)")
            check_sweep_size(data)
            try:
                sweep = parse_sweep(data, base_dir=Path(sweep_file).parent, origin=sweep_file)
            except (TypeError, ValueError, KeyError, AttributeError) as exc:
                if isinstance(exc, InvalidInput):
                    raise
                # A value of the wrong type deep in a grid: the sweep parser has no field for it.
                raise InvalidInput("sweep", f"a value has the wrong type ({exc})") from None
        for run in sweep.runs:
            try:
                check_scenario_limits(load_scenario(run.scenario))
            except InvalidInput as exc:
                raise InvalidInput(f"runs[{run.run_index}].scenario.{exc.field}", exc.problem) from None
    from kafka_rebalance.pipeline.lab import run_lab
    from kafka_rebalance.pipeline.report.terminal import console_for, print_lab_answer
    from kafka_rebalance.pipeline.sim_daemon import SIM_WORKER_DAEMON
    from kafka_rebalance.pipeline.spark import build_session, import_meanwhile

    import_meanwhile("kafka_rebalance.pipeline.report.lab")
    if not quiet:
        click.echo(f"sweep {sweep.name}: {len(sweep.runs)} simulations "
                   f"({len({r.scenario_name for r in sweep.runs})} scenarios)", err=True)
    spark = build_session(master, "kafka-rebalance lab", quiet=not verbose_spark, worker_daemon=SIM_WORKER_DAEMON)
    with bad_input_exits():
        result = run_lab(spark, sweep, out_dir, tasks=tasks, progress=False if quiet else None)
    if as_json:
        click.echo(json.dumps(result.answer.as_dict(), indent=2))
    else:
        print_lab_answer(result.answer, console_for())
