"""The click application; each command lives in its own module and registers on ``cli``."""

from __future__ import annotations

import sys

import click


@click.group(name="kafka-rebalance", context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafka-rebalance")
def cli() -> None:
    """Kafka consumer-group rebalancing: assignors, protocol simulator and Spark pipeline."""


def _register_commands() -> None:
    # Imported for their side effect of adding a command to ``cli``.
    from kafka_rebalance.cli import (
        assign_cmd,  # noqa: F401
        describe_cmd,  # noqa: F401
        lab_cmd,  # noqa: F401
        logs_cmd,  # noqa: F401
        simulate_cmd,  # noqa: F401
    )


def main(argv: list[str] | None = None) -> None:
    _register_commands()
    args = sys.argv[1:] if argv is None else argv
    if not args:
        args = ["--help"]
    try:
        code = cli.main(args=args, prog_name="kafka-rebalance", standalone_mode=False)
    except click.UsageError as exc:
        # One line, like every other bad input, instead of click's usage block.
        sys.stderr.write(f"kafka-rebalance: {exc.format_message()}\n")
        code = 2
    except click.exceptions.Abort:
        sys.stderr.write("kafka-rebalance: aborted\n")
        code = 130
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except ImportError as exc:  # a command whose optional extra is not installed
        from kafka_rebalance.clients.extras import missing_extra_message

        message = missing_extra_message(exc)
        if message is None:
            raise
        sys.stderr.write(f"kafka-rebalance: {message}\n")
        code = 2
    sys.exit(code if isinstance(code, int) else 0)
