"""``kafka-rebalance logs``: rebalances, member failures, empty periods and storms from Kafka
broker logs, on Spark."""

from __future__ import annotations

import json

import click

from kafka_rebalance.cli.app import cli
from kafka_rebalance.cli.errors import bad_input_exits


@cli.command("logs")
@click.argument("files", nargs=-1, required=True)
@click.option("--out", "out_dir", default="rebalance-logs", show_default=True,
              help="Directory for the Parquet tables, summary.json and report.html.")
@click.option("--master", default=None, help="Spark master URL (default local[*]); any URL Spark accepts.")
@click.option("--storm-gap", "storm_gap_s", type=click.FloatRange(min=0), default=600, show_default=True,
              help="Seconds: rebalances starting within this of the previous one belong to the same storm.")
@click.option("--storm-min", type=click.IntRange(min=2), default=3, show_default=True,
              help="Rebalances that make a storm.")
@click.option("--json", "as_json", is_flag=True, help="Print summary.json instead of a readable summary.")
@click.option("--verbose-spark", is_flag=True, help="Keep Spark's own logging.")
def logs_command(files: tuple[str, ...], out_dir: str, master: str | None, storm_gap_s: float, storm_min: int,
                 as_json: bool, verbose_spark: bool) -> None:
    """Analyse Kafka broker logs FILE... (server.log, rotated, .gz, or directories of them)."""
    from kafka_rebalance.pipeline.io import expand_log_paths

    with bad_input_exits():
        expand_log_paths(files)  # bad paths fail before Spark starts
        from kafka_rebalance.pipeline.logs import StormRule, run_logs
        from kafka_rebalance.pipeline.spark import build_session

        spark = build_session(master, "kafka-rebalance logs", quiet=not verbose_spark)
        result = run_logs(spark, list(files), out_dir,
                          storm_rule=StormRule(gap_ms=int(storm_gap_s * 1000), min_rebalances=storm_min))
    if as_json:
        click.echo(json.dumps(result.summary, indent=2))
        return
    summary = result.summary
    click.echo(f"read {summary['lines_read']:,} lines from {summary['files']} file(s): "
               f"{summary['lines_matched']:,} GroupCoordinator lines parsed, {summary['lines_skipped']:,} skipped")
    click.echo(f"{summary['groups']} group(s), {summary['rebalances']} rebalance(s), "
               f"{summary['member_failures']} member failure(s), {summary['storms']} storm(s)")
    from kafka_rebalance.pipeline.advice import RULE_TITLES, Advice, by_rule

    for rule, items in by_rule([Advice(**item) for item in summary["advice"]]):
        groups = [i.group for i in items]
        named = ", ".join(groups[:4]) + (f" and {len(groups) - 4} more" if len(groups) > 4 else "")
        click.echo(f"  {items[0].severity}: {RULE_TITLES.get(rule, rule)} ({named})")
    click.echo(f"tables in {result.out_dir}/")
    click.echo(f"report: {result.report}")
