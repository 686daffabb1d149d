"""``kafka-rebalance describe``: consumer groups on a live broker, and what would move next."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.padding import Padding
from rich.text import Text

from kafka_rebalance.cli.app import cli
from kafka_rebalance.cli.errors import bad_input_exits, fail
from kafka_rebalance.pipeline.report.terminal import console_for, table_for, wrap_id


@cli.command("describe")
@click.option("--bootstrap-server", "bootstrap", required=True, metavar="HOST:PORT", help="A broker to start from.")
@click.option("--group", default=None, help="The group to describe; without it, list the groups.")
@click.option("--what-if", "what_if", multiple=True, metavar="CHANGE",
              help="leave=MEMBER (a member id or its start, a client id, a group.instance.id), join=N, strategy=NAME or "
                   "partitions=TOPIC:N (repeatable): print the next assignment.")
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


MEMBER_ID_MIN_WIDTH = 20


def _shown(value: Any) -> str:
    """A cell: ``-`` for what the broker did not say (never ``None``)."""
    if value is None or value == "":
        return "-"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or "-"
    return str(value)


def _print_groups(result: dict[str, Any]) -> None:
    console = console_for()
    table = table_for(console, "consumer groups")
    for column in ("group", "state", "protocol", "members"):
        table.add_column(column, overflow="fold")
    for g in result["groups"]:
        table.add_row(_shown(g["group"]), _shown(g["state"]), _shown(g["protocol"]), _shown(g["members"]))
    console.print(table)


def _print_group(result: dict[str, Any]) -> None:
    console = console_for()
    epoch = f"  group epoch {result['group_epoch']}" if "group_epoch" in result else ""
    console.print(Text(f"{result['group']}  state {_shown(result['state'])}  assignor {_shown(result['assignor'])}"
                       f"{epoch}  total lag {_shown(result['total_lag'])}", style="bold" if console.is_terminal else ""))
    if not result.get("member_metadata", True):
        console.print(Text("the broker returned no member metadata: the members' subscriptions and assignments, "
                           "so the partitions' lag and the balance, are unknown", overflow="fold"))
    # A third of the line for member ids (the rest for their partitions), broken after dashes.
    id_width = max(MEMBER_ID_MIN_WIDTH, min(max((len(m["member_id"]) for m in result["members"]), default=0),
                                            console.width // 3))
    members = table_for(console, "members")
    members.add_column("member", overflow="fold", width=id_width)
    members.add_column("gen", overflow="fold")
    members.add_column("topics", overflow="fold")
    members.add_column("owned", overflow="fold")
    members.add_column("assigned", overflow="fold")
    consumer_group = result.get("group_type") == "consumer"  # KIP-848: each member's target too
    if consumer_group:
        members.add_column("target", overflow="fold")
    for m in result["members"]:
        who = [wrap_id(str(m["member_id"]), id_width), f"client {_shown(m['client_id'])}",
               f"host {_shown(m['host'])}"]
        if m.get("group_instance_id"):
            who.append(f"instance {m['group_instance_id']}")
        cells = ["\n".join(who), _shown(m["generation"]), _shown(m["topics"]), _shown(m["owned"]), _shown(m["assigned"])]
        members.add_row(*cells, *([_shown(m["target"])] if consumer_group else []))
    console.print(members)
    if not result.get("member_metadata", True):
        return
    lag = table_for(console, "partitions")
    for column in ("partition", "owner", "committed", "end", "lag"):
        lag.add_column(column, overflow="fold")
    for row in result["partitions"]:
        lag.add_row(_shown(row["partition"]), _shown(row["owner"]), _shown(row["committed"]), _shown(row["end"]),
                    _shown(row["lag"]))
    console.print(lag)
    b, s = result["balance"], result["stickiness"]
    console.print(Text(f"balance: {b['min']}..{b['max']} partitions per member; stickiness: {s['kept']} of "
                       f"{s['owned']} owned still assigned", overflow="fold"))
    if "what_if" in result:
        w = result["what_if"]
        console.print(Text(f"\nwhat if: {_shown(w['strategy'])} ({_shown(w['protocol'])})",
                           style="bold" if console.is_terminal else ""))
        for member, parts in w["assignment"].items():
            console.print(Padding(Text(f"{member}: {_shown(parts)}", overflow="fold"), (0, 0, 0, 4)))
        for move in w["moves"]:
            console.print(Padding(Text(f"moves {move['partition']}: {move['from']} -> {move['to']}", overflow="fold"),
                                  (0, 0, 0, 4)))
        stw = w["stop_the_world"]
        console.print(Padding(Text(f"eager pauses {stw['eager_paused_partitions']} partitions; cooperative pauses "
                                   f"{stw['cooperative_paused_partitions']} over {stw['cooperative_rebalances']} "
                                   "rebalance(s)"), (0, 0, 0, 4)))
