"""``kafka-rebalance serve``: a Kafka broker whose group coordinator is ours."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import TYPE_CHECKING

import click

from kafka_rebalance.cli.app import cli
from kafka_rebalance.cli.errors import bad_input_exits, fail

if TYPE_CHECKING:  # the serve extra (kio) is imported only when the command runs
    from kafka_rebalance.serve.broker import BrokerConfig, BrokerState
    from kafka_rebalance.serve.script import Script

DEFAULT_MAX_REQUEST_BYTES = 100 * 1024 * 1024


@cli.group("serve", invoke_without_command=True)
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
@click.option("--script", "script_path", type=click.Path(dir_okay=False), default=None,
              help="Faults at times or on group states (YAML: expire, force_rebalance, delay, drop, "
                   "coordinator_failover, add_partitions, server_assignor; docs/serve.md).")
@click.option("--control", "control_path", type=click.Path(dir_okay=False), default=None,
              help="Listen for `serve ctl` actions on this unix socket path.")
@click.pass_context
def serve_command(context: click.Context, listen: str, port: int, partitions: int, max_request_bytes: int,
                  retention_bytes: int, initial_rebalance_delay_ms: int, log_path: str | None,
                  script_path: str | None, control_path: str | None) -> None:
    """Run a Kafka broker in memory whose group coordinator is this package's. Prints
    'bootstrap HOST:PORT' first; SIGTERM or Ctrl-C stops it. `serve ctl` acts on a running one."""
    if context.invoked_subcommand is not None:
        return
    from kafka_rebalance.serve.broker import BrokerConfig
    from kafka_rebalance.serve.script import load_script

    script = None
    if script_path is not None:
        with bad_input_exits(script_path):
            script = load_script(script_path)

    if log_path is not None:
        try:
            open(log_path, "a", encoding="utf-8").close()
        except OSError as error:
            raise fail(f"--log {log_path}: {error.strerror or error}") from None
    config = BrokerConfig(listen, port, partitions, retention_bytes, max_request_bytes, initial_rebalance_delay_ms,
                          log_path)
    try:
        asyncio.run(_serve(config, script, control_path))
    except OSError as error:
        raise fail(f"--listen {listen} --port {port}: {error.strerror or error}") from None


async def _serve(config: BrokerConfig, script: Script | None, control_path: str | None) -> None:
    from kafka_rebalance.serve.server import run_broker

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)

    def started(state: BrokerState) -> None:
        sys.stdout.write(f"bootstrap {state.config.host}:{state.config.port}\n")
        sys.stdout.flush()

    await run_broker(config, started, stop, script, control_path)


@serve_command.command("ctl")
@click.option("--control", "control_path", type=click.Path(dir_okay=False), required=True,
              help="The control socket a running `serve --control PATH` listens on.")
@click.argument("actions", nargs=-1, required=True)
def serve_ctl(control_path: str, actions: tuple[str, ...]) -> None:
    """Act on a running serve, one action per argument in the script's words, e.g.
    'expire: {group: g, client_id: c1}' or 'force_rebalance: {group: g}'. Prints what each did."""
    import yaml

    from kafka_rebalance.serve.ctl import send

    for text in actions:
        try:
            request = yaml.safe_load(text)
        except yaml.YAMLError:
            raise fail(f"action {text!r}: not YAML") from None
        if not isinstance(request, dict):
            raise fail(f"action {text!r}: expected a mapping such as 'force_rebalance: {{group: g}}'")
        try:
            answer = send(control_path, request)
        except OSError as error:
            raise fail(f"--control {control_path}: {error.strerror or error}") from None
        if not answer.get("ok"):
            raise fail(str(answer.get("error")))
        click.echo(answer.get("done"))
