"""``kafka-rebalance describe``: consumer groups on a live broker, and what would move next."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from kafka_rebalance.cli.app import cli
from kafka_rebalance.cli.errors import bad_input_exits, fail


@cli.command("describe")
@click.option("--bootstrap-server", "bootstrap", required=True, metavar="HOST:PORT", help="A broker to start from.")
@click.option("--group", default=None, help="The group to describe; without it, list the groups.")
@click.option("--what-if", "what_if", multiple=True, metavar="CHANGE",
              help="leave=MEMBER, join=N, strategy=NAME or partitions=TOPIC:N (repeatable): print the next assignment.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@click.option("--timeout", type=float, default=15.0, show_default=True, help="Seconds before giving up.")
@click.option("--security-protocol", default=None, help="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (kafka-python's option).")
@click.option("--sasl-mechanism", default=None, help="PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 ...")
@click.option("--sasl-plain-username", default=None)
@click.option("--sasl-plain-password", default=None, envvar="KAFKA_SASL_PASSWORD", help="Or $KAFKA_SASL_PASSWORD.")
@click.option("--ssl-cafile", default=None)
@click.option("--ssl-certfile", default=None)
@click.option("--ssl-keyfile", default=None)
def describe_command(bootstrap: str, group: str | None, what_if: tuple[str, ...], as_json: bool, timeout: float, **security: Any) -> None:
    """Describe the consumer groups of a live cluster (needs the kafka extra)."""
    from kafka_rebalance.clients.describe import DescribeError, WhatIf, describe

    with bad_input_exits():
        changes = WhatIf.parse(what_if) if what_if else None
        if changes is not None and group is None:
            raise fail("--what-if needs --group")
        try:
            result = describe(bootstrap, group, changes, timeout, security)
        except DescribeError as exc:
            raise fail(str(exc)) from None
    if as_json:
        click.echo(json.dumps(result, indent=2))
    elif group is None:
        _print_groups(result)
    else:
        _print_group(result)


def _print_groups(result: dict[str, Any]) -> None:
    table = Table(title="consumer groups")
    for column in ("group", "state", "protocol", "members"):
        table.add_column(column)
    for g in result["groups"]:
        table.add_row(g["group"], g["state"], g["protocol"] or "-", str(g["members"]))
    Console().print(table)


def _print_group(result: dict[str, Any]) -> None:
    console = Console(highlight=False)
    console.print(f"[bold]{result['group']}[/bold]  state {result['state']}  assignor {result['assignor'] or '-'}  total lag {result['total_lag']}")
    members = Table(title="members")
    for column in ("member", "client", "host", "instance", "generation", "topics", "owned", "assigned"):
        members.add_column(column, overflow="fold")
    for m in result["members"]:
        members.add_row(m["member_id"], m["client_id"], m["host"], m["group_instance_id"] or "-", str(m["generation"]),
                        ", ".join(m["topics"]), ", ".join(m["owned"]) or "-", ", ".join(m["assigned"]) or "-")
    console.print(members)
    lag = Table(title="partitions")
    for column in ("partition", "owner", "committed", "end", "lag"):
        lag.add_column(column)
    for row in result["partitions"]:
        lag.add_row(row["partition"], row["owner"] or "-", str(row["committed"]), str(row["end"]), str(row["lag"]))
    console.print(lag)
    b, s = result["balance"], result["stickiness"]
    console.print(f"balance: {b['min']}..{b['max']} partitions per member; stickiness: {s['kept']} of {s['owned']} owned still assigned")
    if "what_if" in result:
        w = result["what_if"]
        console.print(f"\n[bold]what if[/bold]: {w['strategy']} ({w['protocol']})")
        for member, parts in w["assignment"].items():
            console.print(f"    {member}: {', '.join(parts) or '-'}")
        for move in w["moves"]:
            console.print(f"    moves {move['partition']}: {move['from']} -> {move['to']}")
        stw = w["stop_the_world"]
        console.print(f"    eager pauses {stw['eager_paused_partitions']} partitions; cooperative pauses "
                      f"{stw['cooperative_paused_partitions']} over {stw['cooperative_rebalances']} rebalance(s)")
