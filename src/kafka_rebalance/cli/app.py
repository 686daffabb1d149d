"""The click application; each command lives in its own module and registers on ``cli``."""

from __future__ import annotations

import importlib
import os
import sys

import click

# Each command's module, which adds it to ``cli`` when imported.
COMMAND_MODULES = {name: f"kafka_rebalance.cli.{name}_cmd"
                   for name in ("assign", "describe", "lab", "logs", "serve", "simulate", "soak")}


class _CommandsOnDemand(click.Group):
    """Imports a command's module only when that command runs (or help lists them all): a paste
    to ``logs`` does not load the simulator and the assignors that ``assign``'s module needs
    (measured: 1.1 -> 0.4 CPU-s of imports)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        _register_commands()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            importlib.import_module(COMMAND_MODULES[cmd_name])
        return super().get_command(ctx, cmd_name)


@click.group(name="kafka-rebalance", cls=_CommandsOnDemand, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafka-rebalance")
def cli() -> None:
    """Kafka consumer-group rebalancing: assignors, protocol simulator and Spark pipeline."""


def _register_commands() -> None:
    for module in COMMAND_MODULES.values():
        importlib.import_module(module)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        args = ["--help"]
    try:
        code = cli.main(args=args, prog_name="kafka-rebalance", standalone_mode=False)
    except click.UsageError as exc:
        # One line, like every other bad input, instead of click's usage block.
        from kafka_rebalance.cli.errors import one_line

        sys.stderr.write(f"kafka-rebalance: {one_line(exc.format_message())}\n")
        code = 2
    except click.exceptions.Abort:
        sys.stderr.write("kafka-rebalance: aborted\n")
        code = 130
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("kafka-rebalance: interrupted\n")
        code = 130
    except ImportError as exc:  # a command whose optional extra is not installed
        from kafka_rebalance.clients.extras import missing_extra_message

        message = missing_extra_message(exc)
        if message is None:
            code = _internal_error(exc)
        else:
            sys.stderr.write(f"kafka-rebalance: {message}\n")
            code = 2
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, never a traceback
        code = _internal_error(exc)
    sys.exit(code if isinstance(code, int) else 0)


def _internal_error(exc: Exception) -> int:
    """A bug, not bad input: one line naming it (the traceback on request), exit 1. An error
    from Spark names the file with Spark's own output instead."""
    if os.environ.get("KAFKA_REBALANCE_DEBUG"):
        raise exc
    from kafka_rebalance.cli.errors import one_line

    first = one_line(str(exc))
    if getattr(exc, "where", None):  # the logs reader's last guard names the input and the line
        sys.stderr.write(f"kafka-rebalance: internal error reading {first} "
                         "(set KAFKA_REBALANCE_DEBUG=1 for the traceback)\n")
        return 1
    if type(exc).__module__.split(".")[0] in ("pyspark", "py4j"):
        spark = sys.modules.get("kafka_rebalance.pipeline.spark")
        log = spark.session_log() if spark is not None else None
        where = f"; Spark's output is in {log}" if log is not None else ""
        sys.stderr.write(f"kafka-rebalance: Spark failed: {type(exc).__name__}{': ' + first if first else ''}"
                         f"{where}\n")
        return 1
    sys.stderr.write(f"kafka-rebalance: internal error: {type(exc).__name__}{': ' + first if first else ''} "
                     "(set KAFKA_REBALANCE_DEBUG=1 for the traceback)\n")
    return 1
