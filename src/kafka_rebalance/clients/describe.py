"""A live view of consumer groups on a broker, decoded with our wire codecs, and what our
assignors would do next (``--what-if``). Talks to the broker through aiokafka's admin client
(its DescribeGroups answer carries the members' raw metadata and assignment bytes)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_rebalance.assignors import assign
from kafka_rebalance.clients.extras import require
from kafka_rebalance.model import InvalidInput
from kafka_rebalance.protocol.wire import decode_assignment, decode_subscription

if TYPE_CHECKING:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.admin import AIOKafkaAdminClient

# kafka-python's connection options and the aiokafka names they become.
SECURITY_OPTIONS = ("security_protocol", "sasl_mechanism", "sasl_plain_username", "sasl_plain_password", "ssl_cafile", "ssl_certfile", "ssl_keyfile")


class DescribeError(Exception):
    """One line for the user: unreachable broker, unknown group, timeout."""


@dataclass(frozen=True)
class WhatIf:
    leave: tuple[str, ...] = ()
    join: int = 0
    strategy: str | None = None
    partitions: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def parse(cls, changes: Sequence[str]) -> WhatIf:
        leave: list[str] = []
        join, strategy, partitions = 0, None, {}
        for change in changes:
            key, sep, value = change.partition("=")
            if not sep or not value:
                raise InvalidInput("--what-if", f"{change!r} is not KEY=VALUE (leave=MEMBER, join=N, strategy=NAME, partitions=TOPIC:N)")
            if key == "leave":
                leave.append(value)
            elif key == "join":
                if not value.isdigit():
                    raise InvalidInput("--what-if", f"join={value!r}: expected a number of members")
                join += int(value)
            elif key == "strategy":
                strategy = value
            elif key == "partitions":
                topic, _, count = value.rpartition(":")
                if not topic or not count.isdigit():
                    raise InvalidInput("--what-if", f"partitions={value!r}: expected TOPIC:N")
                partitions[topic] = int(count)
            else:
                raise InvalidInput("--what-if", f"unknown change {key!r} (leave, join, strategy, partitions)")
        return cls(tuple(leave), join, strategy, partitions)


def connection_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """kafka-python's SASL/SSL option names -> aiokafka's keyword arguments."""
    out: dict[str, Any] = {}
    for key in ("security_protocol", "sasl_mechanism", "sasl_plain_username", "sasl_plain_password"):
        if options.get(key):
            out[key] = options[key]
    if any(options.get(k) for k in ("ssl_cafile", "ssl_certfile", "ssl_keyfile")) or str(options.get("security_protocol", "")).endswith("SSL"):
        from aiokafka.helpers import create_ssl_context

        out["ssl_context"] = create_ssl_context(cafile=options.get("ssl_cafile"), certfile=options.get("ssl_certfile"), keyfile=options.get("ssl_keyfile"))
    return out


def describe(bootstrap: str, group: str | None = None, what_if: WhatIf | None = None, timeout: float = 15.0, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Groups on the cluster (no ``group``) or one group in detail; raises ``DescribeError``."""
    require("aiokafka", "aiokafka (for describe)")
    # aiokafka logs connection failures with tracebacks; the user gets our one line instead.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    try:
        return asyncio.run(asyncio.wait_for(_describe(bootstrap, group, what_if, options or {}, timeout), timeout))
    except TimeoutError:
        raise DescribeError(f"timed out after {timeout:g}s talking to {bootstrap}") from None


async def _describe(bootstrap: str, group: str | None, what_if: WhatIf | None, options: Mapping[str, Any], timeout: float) -> dict[str, Any]:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.errors import KafkaConnectionError, KafkaError

    kwargs = {"bootstrap_servers": bootstrap, "request_timeout_ms": int(timeout * 1000), **connection_options(options)}
    admin = AIOKafkaAdminClient(**kwargs)
    try:
        try:
            await admin.start()
        except (KafkaConnectionError, OSError) as exc:
            raise DescribeError(f"cannot reach a broker at {bootstrap}: {exc}") from None
        try:
            if group is None:
                return await _list_groups(admin)
            consumer = AIOKafkaConsumer(**kwargs, enable_auto_commit=False)
            await consumer.start()
            try:
                # ConsumerGroupDescribe goes on a plaintext connection of its own (clients/consumer_groups.py).
                plaintext = not any(options.get(key) for key in SECURITY_OPTIONS)
                return await _group(admin, consumer, group, what_if, bootstrap if plaintext else None)
            finally:
                await consumer.stop()
        except KafkaError as exc:
            raise DescribeError(f"broker at {bootstrap} answered with an error: {exc}") from None
    finally:
        await admin.close()


# aiokafka ships no types: its admin client, consumer and response rows are untyped here.
async def _describe_raw(admin: AIOKafkaAdminClient, groups: list[str]) -> list[Sequence[Any]]:
    """One DescribeGroups request per group: Tansu garbles an answer about several at once."""
    out: list[Sequence[Any]] = []
    for group in groups:
        for response in await admin.describe_consumer_groups([group]):
            out.extend(response.groups)
    return out


async def _list_groups(admin: AIOKafkaAdminClient) -> dict[str, Any]:
    listed = await admin.list_consumer_groups()
    names = sorted({g[0] for g in listed})
    out = []
    if names:
        for raw in await _describe_raw(admin, names):
            error_code, group_id, state, protocol_type, protocol, members = raw[:6]
            out.append({"group": group_id, "state": state, "protocol_type": protocol_type, "protocol": protocol or None, "members": len(members)})
    return {"groups": sorted(out, key=lambda g: g["group"])}


async def _group(admin: AIOKafkaAdminClient, consumer: AIOKafkaConsumer, group: str, what_if: WhatIf | None,
                 plaintext_bootstrap: str | None) -> dict[str, Any]:
    raws = await _describe_raw(admin, [group])
    error_code, group_id, state, protocol_type, protocol, raw_members = raws[0][:6] if raws else (69, group, "", "", "", [])
    # Kafka answers an unknown group with state Dead (or GROUP_ID_NOT_FOUND, 69); Tansu with
    # Empty. Either way no members and no protocol type, unlike a real group left empty. A
    # consumer group (KIP-848) is not a classic group: ConsumerGroupDescribe describes it.
    if error_code == 69 or (not raw_members and (state in ("Dead", "") or not protocol_type)):
        if plaintext_bootstrap is not None:
            from kafka_rebalance.clients.consumer_groups import describe_consumer_group

            described = await describe_consumer_group(plaintext_bootstrap, group)
            if described is not None:
                return await _consumer_group(admin, consumer, described, what_if)
        raise DescribeError(f"group {group!r} does not exist")
    if error_code:
        raise DescribeError(f"describing group {group!r} failed with error code {error_code}")
    members = []
    metadata_known = True
    for raw in raw_members:
        member_id, *rest = raw
        # DescribeGroups v4+ adds group_instance_id after member_id.
        if len(rest) == 5:
            instance_id, client_id, client_host, metadata, assignment_bytes = rest
        else:
            instance_id, (client_id, client_host, metadata, assignment_bytes) = None, rest
        metadata_known = metadata_known and bool(metadata)
        sub = decode_subscription(metadata) if metadata else None
        assignment = decode_assignment(assignment_bytes) if assignment_bytes else None
        members.append(
            {
                "member_id": member_id,
                "client_id": client_id,
                "host": client_host,
                "group_instance_id": instance_id,
                "topics": list(sub.topics) if sub else [],
                "subscription_version": sub.version if sub else None,
                "owned": sub.owned_names() if sub else [],
                "generation": sub.generation_id if sub else None,
                "rack": sub.rack_id if sub else None,
                "assigned": assignment.names() if assignment else [],
            }
        )
    head = {"group": group_id, "group_type": "classic", "state": state, "protocol_type": protocol_type,
            "assignor": protocol or None}  # Tansu leaves it empty
    if not metadata_known:
        # Tansu: members without their subscriptions. Their topics, and so the partitions, the
        # lag, the balance and any next assignment, are unknown: none is made up.
        if what_if is not None:
            raise DescribeError(f"the broker returned no member metadata for {group!r}: no subscriptions to assign from")
        return {**head, "member_metadata": False, "members": members, "partitions": [], "total_lag": None,
                "balance": None, "stickiness": None, "unassigned": None}
    return await _with_lag(admin, consumer, head, members, what_if, protocol or None)


async def _consumer_group(admin: AIOKafkaAdminClient, consumer: AIOKafkaConsumer, described: Any,
                          what_if: WhatIf | None) -> dict[str, Any]:
    """A KIP-848 group from ConsumerGroupDescribe: each member's subscription, its current
    assignment (what it owns) and its target; the group epoch and the server assignor."""
    if what_if is not None:
        raise DescribeError(f"--what-if runs client-side assignors; {described.group_id!r} is a consumer group "
                            f"(KIP-848) assigned by the broker's {described.assignor_name!r}")

    def names(assignment: Any) -> list[str]:
        return [f"{t.topic_name}-{p}" for t in assignment.topic_partitions for p in sorted(t.partitions)]

    members = [{"member_id": m.member_id, "client_id": m.client_id, "host": m.client_host,
                "group_instance_id": m.instance_id, "topics": sorted(m.subscribed_topic_names),
                "subscribed_topic_regex": m.subscribed_topic_regex, "subscription_version": None,
                "owned": names(m.assignment), "generation": int(m.member_epoch), "rack": m.rack_id,
                "assigned": names(m.assignment), "target": names(m.target_assignment)}
               for m in described.members]
    head = {"group": str(described.group_id), "group_type": "consumer", "state": described.group_state,
            "protocol_type": "consumer",
            "assignor": described.assignor_name or None, "group_epoch": int(described.group_epoch),
            "assignment_epoch": int(described.assignment_epoch)}
    return await _with_lag(admin, consumer, head, members, None, None)


async def _with_lag(admin: AIOKafkaAdminClient, consumer: AIOKafkaConsumer, head: dict[str, Any],
                    members: list[dict[str, Any]], what_if: WhatIf | None, protocol: str | None) -> dict[str, Any]:
    """The partitions of the members' topics with their committed and end offsets (OffsetFetch,
    ListOffsets), balance, stickiness and the what-if."""
    from aiokafka.structs import TopicPartition

    topics = sorted({t for m in members for t in m["topics"]})
    # The topics' partitions from a Metadata request of their own (the consumer's cluster view
    # holds only what its bootstrap asked for).
    described = await admin.describe_topics(topics) if topics else []
    numbers = {d["topic"]: sorted(p["partition"] for p in d["partitions"]) for d in described if d["error_code"] == 0}
    counts = {t: len(numbers.get(t, ())) for t in topics}
    tps = [TopicPartition(t, p) for t in topics for p in numbers.get(t, ())]
    end = await consumer.end_offsets(tps) if tps else {}
    # Named partitions: Tansu cannot answer an OffsetFetch for "all partitions".
    committed = await admin.list_consumer_group_offsets(head["group"], partitions=tps) if tps else {}
    owner = {p: m["member_id"] for m in members for p in m["assigned"]}
    lag = []
    for tp in tps:
        c = committed.get(tp)
        c_offset = c.offset if c is not None and c.offset >= 0 else None
        e = end.get(tp)
        lag.append({"partition": f"{tp.topic}-{tp.partition}", "owner": owner.get(f"{tp.topic}-{tp.partition}"), "committed": c_offset, "end": e, "lag": (e - c_offset) if (e is not None and c_offset is not None) else e})
    out: dict[str, Any] = {
        **head,
        "member_metadata": True,
        "members": members,
        "partitions": lag,
        "total_lag": sum(row["lag"] or 0 for row in lag),
        **figures(members, counts),
    }
    if what_if is not None:
        if what_if.strategy is None and protocol is None:
            raise DescribeError(f"the broker reported no assignor for {head['group']!r}: give --what-if strategy=NAME")
        out["what_if"] = next_assignment(members, counts, protocol, what_if, lag_loads(lag, counts))
    return out


def figures(members: Sequence[Mapping[str, Any]], counts: Mapping[str, int]) -> dict[str, Any]:
    """Balance (spread of assigned counts) and stickiness (owned partitions still assigned)."""
    sizes = [len(m["assigned"]) for m in members]
    owned = sum(len(m["owned"]) for m in members)
    kept = sum(len(set(m["owned"]) & set(m["assigned"])) for m in members)
    assigned = sum(sizes)
    return {
        "balance": {"min": min(sizes, default=0), "max": max(sizes, default=0), "spread": (max(sizes) - min(sizes)) if sizes else 0},
        "stickiness": {"owned": owned, "kept": kept, "ratio": (kept / owned) if owned else None},
        "unassigned": sum(counts.values()) - assigned,
    }


def lag_loads(rows: Sequence[Mapping[str, Any]], counts: Mapping[str, int]) -> dict[str, list[float]]:
    """The live lag per partition (end offset where the group committed nothing) as the
    ``partition_loads`` of a snapshot: what load-aware assignment balances. A topic with a
    partition whose end offset could not be read is left out (it counts at the mean)."""
    by_topic: dict[str, dict[int, float]] = {}
    for row in rows:
        topic, _, number = row["partition"].rpartition("-")
        if row["lag"] is not None:
            by_topic.setdefault(topic, {})[int(number)] = float(max(row["lag"], 0))
    return {t: [lags[p] for p in range(counts[t])] for t, lags in by_topic.items() if t in counts and len(lags) == counts[t] and set(lags) == set(range(counts[t]))}


def leaving_member(members: Sequence[Mapping[str, Any]], name: str) -> str:
    """The member id ``leave=NAME`` means: a member id, a client id or group.instance.id that names
    one member, or a prefix of exactly one member id (member ids are long; their start is enough)."""
    for field_name in ("member_id", "client_id", "group_instance_id"):
        named = [m["member_id"] for m in members if m.get(field_name) == name]
        if len(named) == 1:
            return str(named[0])
        if len(named) > 1:
            raise InvalidInput("--what-if", f"leave={name!r}: {len(named)} members have this {field_name.replace('_', ' ')}; "
                               "give (the start of) a member id")
    starting = [str(m["member_id"]) for m in members if str(m["member_id"]).startswith(name)]
    if len(starting) == 1:
        return starting[0]
    if starting:
        raise InvalidInput("--what-if", f"leave={name!r}: the start of {len(starting)} member ids; give more of one")
    raise InvalidInput("--what-if", f"leave={name!r}: no such member (no member id, client id or instance id is this, no member id starts with it)")


def next_assignment(members: Sequence[Mapping[str, Any]], counts: Mapping[str, int], protocol: str | None, what_if: WhatIf,
                    loads: Mapping[str, list[float]] | None = None) -> dict[str, Any]:
    """The assignment our assignors give after the changes, what moves, and its pause cost.
    ``loads`` (per topic, per partition; the live lag) are what load-aware balances."""
    leaving = {leaving_member(members, name) for name in what_if.leave}
    strategy = what_if.strategy or protocol or "cooperative-sticky"
    topics = {**counts, **what_if.partitions}
    all_topics = sorted({t for m in members for t in m["topics"]})
    snapshot_members = [
        {"member_id": m["member_id"], "topics": m["topics"], "owned": [p for p in m["assigned"] if p.rpartition("-")[0] in topics], "generation": max(m["generation"] or 0, 0) + 1}
        | ({"group_instance_id": m["group_instance_id"]} if m["group_instance_id"] else {})
        for m in members
        if m["member_id"] not in leaving
    ]
    snapshot_members += [{"member_id": f"new-member-{i + 1}", "topics": all_topics} for i in range(what_if.join)]
    # A topic grown by the what-if has no load for its new partitions: leave its loads out.
    partition_loads = {t: v for t, v in (loads or {}).items() if len(v) == topics.get(t)}
    extra = {"partition_loads": partition_loads} if partition_loads else {}
    result = assign({"topics": topics, "members": snapshot_members, **extra}, strategy)
    first_round = result["assignment"]
    cooperative = result["protocol"] == "COOPERATIVE"
    if cooperative:
        # The follow-up rebalance, which sees the first round's answer as ownership, places
        # what the first round withheld; that is where the group ends up.
        follow_up = [{**m, "owned": first_round[m["member_id"]], "generation": m.get("generation", 0) + 1} for m in snapshot_members]
        result = assign({"topics": topics, "members": follow_up, **extra}, strategy)
    before = {p: m["member_id"] for m in members for p in m["assigned"]}
    after = {p: mid for mid, parts in result["assignment"].items() for p in parts}
    moved = sorted(p for p, mid in after.items() if p in before and before[p] != mid)
    total = sum(topics.values())
    return {
        "strategy": result["strategy"],
        "protocol": result["protocol"],
        "assignment": result["assignment"],
        **({"first_round": first_round} if cooperative else {}),
        "moves": [{"partition": p, "from": before[p], "to": after[p]} for p in moved],
        "newly_assigned": sorted(p for p in after if p not in before),
        "stop_the_world": {
            # Eager: every member revokes everything before rejoining, so all partitions pause.
            "eager_paused_partitions": sum(len(m["assigned"]) for m in members),
            # Cooperative: only partitions that change owner pause, across two rebalances.
            "cooperative_paused_partitions": len(moved),
            "cooperative_rebalances": 2 if moved else 1,
            "this_strategy": "cooperative" if cooperative else "eager",
            "total_partitions": total,
        },
    }
