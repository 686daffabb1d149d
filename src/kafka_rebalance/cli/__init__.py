"""The ``kafka-rebalance`` command line. Each command lives in its own module and registers on
``app``; bad input exits 2 with one line on stderr (see ``errors.run_guarded``)."""

from __future__ import annotations

from kafka_rebalance.cli.app import cli, main

__all__ = ["cli", "main"]
