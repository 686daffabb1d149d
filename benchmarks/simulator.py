"""Simulator throughput: one simulated hour of a 100-member group.

1,000 partitions (10 topics x 100), 100 consumers, 50 membership events (leaves, crashes,
restarts, joins), heartbeats every 3 s, 100 keyed records/s. Prints a table of wall times.

``--large 1000,2000,4000``: then large classic groups (cooperative-sticky), 5 simulated minutes
of the same kind of scenario (every member joining at 0, 4 events, 10 topics of max(100,
members / 50) partitions), each size twice the one before: the CPU time should grow with the
members, not their square.

    .venv/bin/python benchmarks/simulator.py [--repeat 3] [--large 1000,2000,4000]
"""

from __future__ import annotations

import argparse
import random
import time

from kafka_rebalance.sim import load_scenario, run_simulation


def hour_scenario(members: int = 100, topics: int = 10, partitions: int = 100, events: int = 50,
                  strategy: str = "cooperative-sticky", seed: int = 7) -> dict:
    rng = random.Random(seed)
    names = [f"consumer{i:03d}" for i in range(members)]
    topic_names = [f"topic{t}" for t in range(topics)]
    scenario_events = [{"at_ms": 0, "join": n} for n in names]
    kinds = ["leave", "crash", "restart", "join"]
    down: set[str] = set()
    for i in range(events):
        at = 60_000 + i * (3_300_000 // events)
        kind = kinds[i % len(kinds)]
        if kind == "join" and down:
            name = sorted(down)[0]
            down.discard(name)
            scenario_events.append({"at_ms": at, "join": name})
            continue
        name = rng.choice([n for n in names if n not in down])
        if kind == "restart":
            scenario_events.append({"at_ms": at, "restart": name, "after_ms": 5000})
        else:
            down.add(name)
            scenario_events.append({"at_ms": at, kind: name})
    return {
        "name": f"hour-{members}-members-{strategy}",
        "group": "bench-group",
        "topics": {t: partitions for t in topic_names},
        "consumers": [{"id": n, "strategies": [strategy], "subscribe": topic_names} for n in names],
        "produce": [{"topic": t, "records_per_s": 100 / topics, "keys": 1000} for t in topic_names],
        "events": scenario_events,
        "end_ms": 3_600_000,
        "seed": seed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--large", default="", help="member counts of large classic groups, comma-separated")
    args = parser.parse_args()
    rows = []
    # Classic strategies, then KIP-848 consumer groups (heartbeat 5 s, the broker's default) with
    # each server-side assignor, on the same events.
    for strategy in ("cooperative-sticky", "range", "consumer/uniform", "consumer/range"):
        if strategy.startswith("consumer/"):
            spec = hour_scenario() | {"group_protocol": "consumer", "assignor": strategy.split("/")[1]}
        else:
            spec = hour_scenario(strategy=strategy)
        scenario = load_scenario(spec)
        times, cpu = [], []
        for _ in range(args.repeat):
            start, start_cpu = time.perf_counter(), time.process_time()
            run = run_simulation(scenario)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        metrics = run.metrics
        rows.append((strategy, min(times), min(cpu), metrics.rebalances, metrics.partitions_moved, len(run.ownership)))
    print(f"{'strategy':<20} {'best wall s':>11} {'best cpu s':>10} {'rebalances':>10} {'moved':>7} {'ownership rows':>15}")
    for strategy, best, best_cpu, rebalances, moved, intervals in rows:
        print(f"{strategy:<20} {best:>11.2f} {best_cpu:>10.2f} {rebalances:>10} {moved:>7} {intervals:>15}")
    print("(one simulated hour, 100 members, 1,000 partitions, 50 membership events, heartbeat 3 s classic / 5 s "
          "consumer groups, 100 records/s)")
    if args.large:
        large_groups([int(n) for n in args.large.split(",")])


def large_groups(sizes: list[int]) -> None:
    print(f"\n{'members':>8} {'partitions':>10} {'cpu s':>7} {'rebalances':>10} {'growth':>7}")
    before: tuple[int, float] | None = None
    for members in sizes:
        spec = hour_scenario(members=members, topics=10, partitions=max(100, members // 50), events=4)
        spec["events"] = [e for e in spec["events"] if e["at_ms"] < 300_000]
        scenario = load_scenario(spec | {"end_ms": 300_000})
        start = time.process_time()
        run = run_simulation(scenario)
        cpu = time.process_time() - start
        growth = "" if before is None else f"{(cpu / before[1]) / (members / before[0]):.2f}"
        print(f"{members:>8,} {10 * max(100, members // 50):>10,} {cpu:>7.2f} {run.metrics.rebalances:>10} {growth:>7}")
        before = (members, cpu)
    print("(cooperative-sticky, 5 simulated minutes, every member joining at 0, 4 events; growth: CPU time per "
          "member against the size before)")


if __name__ == "__main__":
    main()
