"""Write a realistic Kafka broker server.log for benchmarking ``kafka-rebalance logs``.

Many consumer groups on one broker, each with a behaviour taken from the seed documents:
healthy groups that rarely rebalance, groups bounced by rolling restarts (bursts of
rebalances), groups of old kafka-python clients that fail by session timeout at a steady period
and rejoin in a loop, modern groups whose slow consumers leave on poll timeout, and groups that
go empty. GroupCoordinator lines come in the modern and both legacy formats (one per broker
"version"), interleaved in time with the rest of a broker's INFO/WARN output (log segments,
replica fetchers, controller, stack traces) and some coordinator lines of other kinds.

    python benchmarks/logs_generator.py --size 1GB --out /tmp/server.log

The coordinator lines are written with ``kafka_rebalance.protocol.logformat``'s message
builders, so they are exactly the lines the simulator and Kafka write.
"""

from __future__ import annotations

import argparse
import heapq
import random
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kafka_rebalance.model import java_string_hash
from kafka_rebalance.protocol import logformat as lf

START = datetime(2024, 5, 1, tzinfo=UTC)
TOPICS = ["orders", "payments", "clicks", "audit", "events", "inventory", "emails", "metrics"]
NOISE_TEMPLATES = [
    "INFO [LocalLog partition={topic}-{p}, dir=/var/lib/kafka/data] Rolled new log segment at offset {offset} in {ms} ms. (kafka.log.LocalLog)",
    "INFO [ProducerStateManager partition={topic}-{p}] Wrote producer snapshot at offset {offset} with 0 producer ids in {ms} ms. (kafka.log.ProducerStateManager)",
    "INFO [UnifiedLog partition={topic}-{p}, dir=/var/lib/kafka/data] Deleting segment LogSegment(baseOffset={offset}, size=1073741800, lastModifiedTime=1714521600000, largestRecordTimestamp=Some(1714521599000)) due to retention time 604800000ms breach based on the largest record timestamp in the segment (kafka.log.UnifiedLog)",
    "INFO [GroupMetadataManager brokerId={broker}] Removed {ms} expired offsets in {ms} milliseconds. (kafka.coordinator.group.GroupMetadataManager)",
    "INFO [ReplicaFetcher replicaId={broker}, leaderId=2, fetcherId=0] Truncating partition {topic}-{p} with TruncationState(offset={offset}, completed=true) due to local high watermark {offset} (kafka.server.ReplicaFetcherThread)",
    "INFO [Partition {topic}-{p} broker={broker}] ISR updated to 1,2,3 and version updated to {ms} (kafka.cluster.Partition)",
    "INFO [Controller id={broker}] Processing automatic preferred replica leader election (kafka.controller.KafkaController)",
    "WARN [ReplicaFetcher replicaId={broker}, leaderId=3, fetcherId=1] Error in response for fetch request (type=FetchRequest, replicaId={broker}, maxWait=500, minBytes=1, maxBytes=10485760) (kafka.server.ReplicaFetcherThread)",
    "INFO [SocketServer listenerType=ZK_BROKER, nodeId={broker}] Failed authentication with /10.0.{p}.{ms} (SSL handshake failed) (org.apache.kafka.common.network.Selector)",
    "INFO [TransactionCoordinator id={broker}] Initialized transactionalId tx-{offset} with producerId {offset} and producer epoch 0 on partition __transaction_state-{p} (kafka.coordinator.transaction.TransactionCoordinator)",
]
# GroupCoordinator lines of kinds the analyser does not reconstruct (counted, then skipped).
OTHER_COORDINATOR_TEMPLATES = [
    "INFO [GroupCoordinator {broker}]: Loading group metadata for {group} with generation {gen} (kafka.coordinator.group.GroupCoordinator)",
    "INFO [GroupCoordinator id={broker} topic=__consumer_offsets partition={p}] Dynamic member with unknown member id joins group {group} in Stable state. Created a new member id {member} and requesting the member to rejoin with this id. (kafka.coordinator.group.GroupCoordinator)",
]
STACK_TRACE = [
    "org.apache.kafka.common.errors.NotLeaderOrFollowerException: For requests intended only for the leader, this error indicates that the broker is not the current leader.",
    "\tat org.apache.kafka.common.requests.FetchResponse.partitionError(FetchResponse.java:128)",
    "\tat kafka.server.AbstractFetcherThread.processFetchRequest(AbstractFetcherThread.scala:344)",
    "\tat kafka.server.AbstractFetcherThread.maybeFetch(AbstractFetcherThread.scala:139)",
]
PROFILES = ("healthy", "rolling", "python-loop", "poll-timeout", "emptying")
PROFILE_WEIGHTS = (0.55, 0.15, 0.1, 0.1, 0.1)


class Clock:
    """Fast ``[yyyy-MM-dd HH:mm:ss,SSS]`` formatting: the seconds part is cached."""

    def __init__(self) -> None:
        self._second = -1
        self._text = ""

    def stamp(self, epoch_ms: int) -> str:
        second = epoch_ms // 1000
        if second != self._second:
            self._second = second
            self._text = (datetime(1970, 1, 1) + timedelta(seconds=second)).strftime("%Y-%m-%d %H:%M:%S")
        return f"[{self._text},{epoch_ms % 1000:03d}]"


@dataclass(order=True)
class Group:
    next_ms: int
    name: str = field(compare=False)
    profile: str = field(compare=False)
    style: str = field(compare=False)
    broker: int = field(compare=False)
    partition: int = field(compare=False)
    generation: int = field(compare=False)
    members: list[str] = field(compare=False, default_factory=list)
    client: str = field(compare=False, default="consumer")
    pending: list[tuple[int, str]] = field(compare=False, default_factory=list)  # (at_ms, message)


def coordinator_partition(group: str, partitions: int = 50) -> int:
    return abs(java_string_hash(group)) % partitions if java_string_hash(group) != -2**31 else 0


def _member(client: str, rng: random.Random) -> str:
    return f"{client}-{uuid.UUID(int=rng.getrandbits(128), version=4)}"


def make_group(index: int, rng: random.Random, start_ms: int) -> Group:
    profile = rng.choices(PROFILES, PROFILE_WEIGHTS)[0]
    style = rng.choice((lf.MODERN, lf.MODERN, lf.LEGACY, lf.LEGACY_OLD))
    if profile == "python-loop":
        style = rng.choice((lf.LEGACY, lf.LEGACY_OLD))
        client = rng.choice(("kafka-python-1.3.5", "kafka-python-1.3.3"))
    elif profile == "poll-timeout":
        style = lf.MODERN
        client = f"consumer-{TOPICS[index % len(TOPICS)]}-{index}"
    else:
        client = rng.choice((f"consumer-app{index}", "kafka-python-2.0.2", "rdkafka", f"svc-{index}"))
    name = f"{TOPICS[index % len(TOPICS)]}-{profile}-{index}"
    group = Group(next_ms=start_ms + rng.randint(0, 600_000), name=name, profile=profile, style=style,
                  broker=rng.randint(0, 5), partition=coordinator_partition(name),
                  generation=rng.randint(1, 2000), client=client)
    group.members = [_member(client, rng) for _ in range(rng.randint(2, 8))]
    return group


def _line(clock: Clock, at_ms: int, message: str, group: Group) -> str:
    if group.style == lf.MODERN:
        prefix = f"[GroupCoordinator id={group.broker} topic=__consumer_offsets partition={group.partition}] "
    else:
        prefix = f"[GroupCoordinator {group.broker}]: "
    return f"{clock.stamp(at_ms)} INFO {prefix}{message} ({lf.LOGGER})\n"


def rebalance_messages(group: Group, at_ms: int, rng: random.Random) -> list[tuple[int, str]]:
    """One episode of the group's behaviour: the coordinator lines and their times."""
    g, style, out = group.name, group.style, []
    profile = group.profile
    gen = group.generation
    state = "Stable"
    departures: list[tuple[str, str]] = []  # (kind, member)
    if profile == "python-loop":
        departures.append(("failed", group.members[0]))
    elif profile == "poll-timeout":
        departures.append(("left", group.members[0]))
    elif profile == "rolling":
        departures.append(("left" if style == lf.MODERN else "failed", group.members[rng.randrange(len(group.members))]))
    elif profile == "emptying" and rng.random() < 0.5:
        state = "Empty"
    t = at_ms
    for kind, member in departures:
        if kind == "failed":
            out.append((t, lf.member_failed_message(g, member, style)))
            reason = f"removing member {member} on heartbeat expiration"
        else:
            reason = f"removing member {member} on LeaveGroup; client reason: consumer poll timeout has expired."
            out.append((t, lf.member_left_message(g, member, "consumer poll timeout has expired. This means the time "
                                                  "between subsequent calls to poll() was longer than the configured "
                                                  "max.poll.interval.ms")))
        group.members[group.members.index(member)] = _member(group.client, rng)  # it comes back with a new id
    if not departures:
        reason = f"Adding new member {_member(group.client, rng)} with group instance id None"
    out.append((t, lf.preparing_rebalance_message(g, state, gen, reason, group.partition, style)))
    if profile == "emptying" and state == "Stable" and rng.random() < 0.5:
        out.append((t + rng.randint(0, 5), lf.group_empty_message(g, gen + 1, group.partition, style)))
        group.generation = gen + 1
        return out
    t += rng.randint(5, 3000) if profile != "python-loop" else rng.randint(3000, 30000)
    if rng.random() < 0.05:  # a member misses the join and the rebalance restarts
        t2 = t + rng.randint(1, 200)
        out.append((t2, lf.preparing_rebalance_message(g, "CompletingRebalance", gen + 1,
                                                       "a member rejoined", group.partition, style)))
        gen += 1
        t = t2 + rng.randint(5, 2000)
    gen += 1
    out.append((t, lf.stabilized_message(g, gen, len(group.members), group.partition, style)))
    t += rng.randint(1, 50)
    leader = group.members[0]
    out.append((t, lf.assignment_received_message(g, gen, leader, len(group.members), 0, style)))
    group.generation = gen
    return out


def next_episode_delay(group: Group, rng: random.Random) -> int:
    if group.profile == "healthy":
        return int(rng.expovariate(1 / 7_200_000)) + 60_000
    if group.profile == "rolling":
        return rng.randint(20_000, 90_000) if rng.random() < 0.85 else rng.randint(3_600_000, 14_400_000)
    if group.profile == "python-loop":
        return 60_000 + rng.randint(-500, 500)  # the steady period of the seed's story
    if group.profile == "poll-timeout":
        return 330_000 + rng.randint(-2000, 2000)
    return rng.randint(600_000, 3_600_000)


def generate(out: Path, size_bytes: int, groups: int = 2000, seed: int = 7, coordinator_share: float = 0.12) -> dict:
    """Write ``out`` until it holds ``size_bytes``; returns counts of what was written."""
    rng = random.Random(seed)
    clock = Clock()
    start_ms = int(START.timestamp() * 1000)
    heap = [make_group(i, rng, start_ms) for i in range(groups)]
    heapq.heapify(heap)
    written = lines = coordinator_lines = 0
    now = start_ms
    noise_per_coordinator = max(0.0, (1 - coordinator_share) / coordinator_share)
    buffer: list[str] = []
    pending: list[tuple[int, int, str, Group]] = []  # coordinator lines of an episode, by time
    sequence = 0
    with out.open("w", encoding="utf-8") as fh:
        while written < size_bytes:
            if not pending:
                group = heapq.heappop(heap)
                for at, message in rebalance_messages(group, group.next_ms, rng):
                    heapq.heappush(pending, (at, sequence, message, group))
                    sequence += 1
                group.next_ms += next_episode_delay(group, rng) + 1
                heapq.heappush(heap, group)
            at, _, message, group = heapq.heappop(pending)
            # Noise lines between now and the coordinator line (times never go backwards).
            at = max(at, now)
            noise = int(rng.expovariate(1 / noise_per_coordinator)) if noise_per_coordinator else 0
            for i in range(noise):
                t = now + (at - now) * (i + 1) // (noise + 1)
                roll = rng.random()
                if roll < 0.01:
                    buffer.append(f"{clock.stamp(t)} WARN [ReplicaFetcher replicaId=1, leaderId=3, fetcherId=0] "
                                  "Error for partition orders-3 at offset 1234 (kafka.server.ReplicaFetcherThread)\n")
                    buffer.extend(f"{frame}\n" for frame in STACK_TRACE)
                elif roll < 0.03:
                    template = rng.choice(OTHER_COORDINATOR_TEMPLATES)
                    buffer.append(f"{clock.stamp(t)} " + template.format(
                        broker=group.broker, group=group.name, gen=group.generation, p=group.partition,
                        member=_member(group.client, rng)) + "\n")
                else:
                    template = rng.choice(NOISE_TEMPLATES)
                    buffer.append(f"{clock.stamp(t)} " + template.format(
                        topic=rng.choice(TOPICS), p=rng.randrange(64), offset=rng.randrange(10**9),
                        ms=rng.randrange(1000), broker=rng.randrange(6)) + "\n")
            buffer.append(_line(clock, at, message, group))
            coordinator_lines += 1
            now = at
            if len(buffer) >= 4096:
                chunk = "".join(buffer)
                fh.write(chunk)
                written += len(chunk.encode("utf-8")) if not chunk.isascii() else len(chunk)
                lines += len(buffer)
                buffer.clear()
        if buffer:
            chunk = "".join(buffer)
            fh.write(chunk)
            written += len(chunk)
            lines += len(buffer)
    return {"bytes": written, "lines": lines, "coordinator_lines": coordinator_lines, "groups": groups,
            "span_hours": round((now - start_ms) / 3_600_000, 1)}


def parse_size(text: str) -> int:
    units = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "K": 10**3, "M": 10**6, "G": 10**9}
    text = text.strip().upper()
    for unit, factor in sorted(units.items(), key=lambda u: -len(u[0])):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="the log file to write")
    parser.add_argument("--size", default="1GB", help="target size, e.g. 1GB, 200MB (default 1GB)")
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    stats = generate(args.out, parse_size(args.size), args.groups, args.seed)
    stats["seconds"] = round(time.perf_counter() - started, 1)
    print(stats, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
