"""``kafka-rebalance serve``: a Kafka broker whose group coordinator is ours (issue 34)."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import TYPE_CHECKING

import click

from kafka_rebalance.cli.app import cli
from kafka_rebalance.cli.errors import fail

if TYPE_CHECKING:  # the serve extra (kio) is imported only when the command runs
    from kafka_rebalance.serve.broker import BrokerConfig, BrokerState

DEFAULT_MAX_REQUEST_BYTES = 100 * 1024 * 1024


@cli.command("serve")
@click.option("--listen", default="127.0.0.1", show_default=True, help="The address to listen on (and advertise).")
@click.option("--port", type=click.IntRange(0, 65535), default=9092, show_default=True,
              help="The port; 0 picks a free one.")
@click.option("--partitions", type=click.IntRange(1, 10_000), default=1, show_default=True,
              help="num.partitions: the partitions of an auto-created topic.")
@click.option("--max-request-bytes", type=click.IntRange(1, 2**31 - 1), default=DEFAULT_MAX_REQUEST_BYTES,
              show_default=True, help="socket.request.max.bytes: a larger request closes its connection.")
@click.option("--retention-bytes", type=click.IntRange(1, 2**62), default=64 * 1024 * 1024, show_default=True,
              help="Bytes kept in memory per partition; the oldest batches go first.")
@click.option("--initial-rebalance-delay-ms", type=click.IntRange(0, 2**31 - 1), default=3000, show_default=True,
              help="group.initial.rebalance.delay.ms of classic groups.")
@click.option("--log", "log_path", type=click.Path(dir_okay=False), default=None,
              help="Append the group coordinator's log lines (Kafka 4.x's format, what `logs` reads) to this file.")
def serve_command(listen: str, port: int, partitions: int, max_request_bytes: int, retention_bytes: int,
                  initial_rebalance_delay_ms: int, log_path: str | None) -> None:
    """Run a Kafka broker in memory whose group coordinator is this package's. Prints
    'bootstrap HOST:PORT' first; SIGTERM or Ctrl-C stops it."""
    from kafka_rebalance.serve.broker import BrokerConfig

    if log_path is not None:
        try:
            open(log_path, "a", encoding="utf-8").close()
        except OSError as error:
            raise fail(f"--log {log_path}: {error.strerror or error}") from None
    config = BrokerConfig(listen, port, partitions, retention_bytes, max_request_bytes, initial_rebalance_delay_ms,
                          log_path)
    try:
        asyncio.run(_serve(config))
    except OSError as error:
        raise fail(f"--listen {listen} --port {port}: {error.strerror or error}") from None


async def _serve(config: BrokerConfig) -> None:
    from kafka_rebalance.serve.server import run_broker

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)

    def started(state: BrokerState) -> None:
        sys.stdout.write(f"bootstrap {state.config.host}:{state.config.port}\n")
        sys.stdout.flush()

    await run_broker(config, started, stop)
