"""``kafka-rebalance logs``: rebalances, their causes, member events, client-side rebalances,
storms and advice from Kafka broker and client logs (any layout; files, directories, .gz, or
``-`` for a paste on stdin)."""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING

import click

from kafka_rebalance.cli.app import cli
from kafka_rebalance.cli.errors import bad_input_exits

if TYPE_CHECKING:
    from kafka_rebalance.pipeline.logparse.layout import SyslogReference


def _cluster_labels(values: tuple[str, ...], files: tuple[str, ...]) -> dict[str, str]:
    """``--cluster NAME`` labels every input; ``--cluster NAME=PATH`` labels the inputs under PATH."""
    from kafka_rebalance.model import InvalidInput

    labels: dict[str, str] = {}
    for value in values:
        name, _, path = value.partition("=")
        if not name:
            raise InvalidInput("--cluster", f"{value!r}: give NAME or NAME=PATH")
        for target in ([path] if path else list(files)):
            labels[target] = name
    return labels


def _syslog_reference(year: str | None) -> SyslogReference:
    """Where year-less syslog times go, decided once for the run: no later than the end of
    ``--year``, or else than the run's start (a log read within a year of being written gets
    its real year). Nothing below reads the clock for it."""
    from kafka_rebalance.model import InvalidInput
    from kafka_rebalance.pipeline.logparse.layout import SyslogReference

    if year is None:
        return SyslogReference(int(time.time() * 1000))
    try:
        return SyslogReference.from_year_option(year)
    except ValueError as exc:
        raise InvalidInput("--year", str(exc)) from None


def _refuse_empty(expanded: list[str], stdin_text: str | None) -> None:
    """Inputs with no line to read (an empty file, /dev/null, an empty paste) are bad input:
    one line naming them, before anything is written."""
    from kafka_rebalance.model import InvalidInput
    from kafka_rebalance.pipeline.logparse.inputs import STDIN, holds_text

    if any(holds_text(source, stdin_text) for source in expanded):
        return
    named = ", ".join("standard input" if source == STDIN else source for source in expanded)
    raise InvalidInput(named, "empty input: no lines to read")


@cli.command("logs")
@click.argument("files", nargs=-1, required=True)
@click.option("--out", "out_dir", default="rebalance-logs", show_default=True,
              help="Directory (or a store's URL, e.g. s3://bucket/prefix) for the Parquet tables, summary.json "
                   "and report.html.")
@click.option("--cluster", "clusters", multiple=True, metavar="NAME[=PATH]",
              help="Label inputs with the cluster they come from: inputs of one cluster complete each other's "
                   "story (a broker's log and its consumers' logs). Unlabelled, each input is read on its own (with "
                   "the files rotated from it), so its answer does not depend on what else is given. Repeat for "
                   "several clusters.")
@click.option("--engine", type=click.Choice(["auto", "local", "spark"]), default="auto", show_default=True,
              help="local: in this process (fast start, for pastes and small logs); spark: PySpark; auto: local "
                   "below 64 MB of input unless --master is given.")
@click.option("--master", default=None, help="Spark master URL (default local[*]); any URL Spark accepts.")
@click.option("--storm-gap", "storm_gap_s", type=click.FloatRange(min=0), default=600, show_default=True,
              help="Seconds: rebalances starting within this of the previous one belong to the same storm.")
@click.option("--storm-min", type=click.IntRange(min=2), default=3, show_default=True,
              help="Rebalances that make a storm.")
@click.option("--year", "year", default=None, metavar="YYYY|YYYY-MM-DD",
              help="Syslog/journald times carry no year: each gets the latest year that puts it no later than the "
                   "end of this year or day (give the log's last day for a log that crosses New Year). "
                   "Default: the time the run starts.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the answer as one JSON document (summary.json's counts, then the groups told with their "
                   "rebalances, causes and findings).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--verbose-spark", is_flag=True, help="Show Spark's own logging on the terminal (else in a log file).")
def logs_command(files: tuple[str, ...], out_dir: str, clusters: tuple[str, ...], engine: str, master: str | None,
                 storm_gap_s: float, storm_min: int, year: str | None, as_json: bool, quiet: bool,
                 verbose_spark: bool) -> None:
    """Analyse Kafka logs FILE... (broker server.log, consumer application logs, rotated, .gz,
    directories of them, URLs of a store such as s3://bucket/prefix/ (credentials from the
    store's usual environment variables), or - to read a paste from stdin)."""
    from kafka_rebalance.pipeline.logparse.inputs import STDIN, expand_inputs
    from kafka_rebalance.pipeline.without_pandas import without_pandas

    # Nothing the command runs needs pandas, which pyarrow would import (0.23 s of a paste's 1 s).
    with without_pandas():
        with bad_input_exits():
            expanded, _ = expand_inputs(list(files))  # bad paths fail before anything starts
            labels = _cluster_labels(clusters, files)
            syslog = _syslog_reference(year)
            stdin_text = None
            if STDIN in files:
                raw = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
                stdin_text = raw.decode("utf-8", errors="replace")
            _refuse_empty(expanded, stdin_text)
            from kafka_rebalance.pipeline.logs import StormRule, run_logs

            # Spark starts inside, once --out is known to be writable.
            result = run_logs(None, list(files), out_dir, engine=engine, master=master, clusters=labels,
                              stdin_text=stdin_text, syslog=syslog, quiet_spark=not verbose_spark,
                              progress=False if quiet else None,
                              storm_rule=StormRule(gap_ms=int(storm_gap_s * 1000), min_rebalances=storm_min))
        from kafka_rebalance.pipeline.report.terminal import console_for, print_logs_answer

        if as_json:
            click.echo(json.dumps(result.answer.as_dict(), indent=2, default=str))
            return
        print_logs_answer(result.answer, console_for())
