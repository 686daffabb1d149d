"""``kafka-rebalance assign``: assign a group snapshot and print the result."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from kafka_rebalance.assignors import assign
from kafka_rebalance.cli import inputs
from kafka_rebalance.cli.app import cli
from kafka_rebalance.cli.errors import bad_input_exits
from kafka_rebalance.cli.limits import check_snapshot_limits
from kafka_rebalance.model import GroupProtocol, GroupSnapshot


@cli.command("assign")
@click.argument("file")
@click.option("--strategy", default=None,
              help="Strategy name or module:Class; overrides the snapshot and the vote. For a consumer group "
                   "(\"group_protocol\": \"consumer\"): a server-side assignor, uniform or range.")
@click.option("--format", "output_format", type=click.Choice(["json", "table"]), default="json", show_default=True,
              help="json (the spec's output object) or a readable per-member table.")
def assign_command(file: str, strategy: str | None, output_format: str) -> None:
    """Assign partitions to the members of a group snapshot FILE (JSON, or - for stdin).

    A classic group runs its client-side assignor; a consumer group (KIP-848) the broker's
    server-side assignor, and the output is its full target assignment."""
    with bad_input_exits(file):
        snapshot = inputs.load_document(file, "a group snapshot (JSON)", json_only=True)
        check_snapshot_limits(snapshot)
        parsed = GroupSnapshot.from_dict(snapshot)
        if not parsed.members and parsed.group_protocol is not GroupProtocol.CONSUMER:
            click.echo(f"{inputs.display_name(file)}: the group has no members; nothing to assign", err=True)
            return
        result = assign(snapshot, strategy)
    if output_format == "json":
        click.echo(json.dumps(result, indent=2))
    else:
        print_table(result)


def print_table(result: dict[str, Any]) -> None:
    kind = "consumer group, assignor" if result.get("group_protocol") == "consumer" else "strategy"
    table = Table(title=f"{kind} {result['strategy']} ({result['protocol']})")
    table.add_column("member")
    table.add_column("count", justify="right")
    table.add_column("partitions")
    for member, partitions in result["assignment"].items():
        table.add_row(member, str(len(partitions)), ", ".join(partitions) or "-")
    Console().print(table)
