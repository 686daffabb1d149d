"""Member ids in Java string order (``RangeAssignor.sortMemberIds``): the array sort the
server-side range assignor uses from ``ARRAY_SORT_MIN_IDS`` ids (``id_order.ascii_id_order``)
against CPython's sort (``sorted(range(n), key=ids.__getitem__)`` into an array, what it uses
below), CPU time, best of ``--runs`` batches of 10 calls.

    .venv/bin/python benchmarks/id_order.py [--members 2000,5000,10000] [--runs 30]

Ids: JMH's (``member0``... in order), JMH's incremental shapes' (the same and ``newMember``),
random 22-character ids (Kafka's own, ``Uuid``-based; in no order), and classic-style ids
(``consumer-app-<n>-`` and 32 hex digits, in order of ``n``).
"""

from __future__ import annotations

import argparse
import random
import string
import time
from collections.abc import Callable

import numpy as np

from kafka_rebalance.assignors.server.id_order import ascii_id_order

ALPHABET = string.ascii_letters + string.digits + "-_"


def id_kinds(n: int, rng: random.Random) -> dict[str, list[str]]:
    return {
        "JMH": [f"member{i}" for i in range(n)],
        "JMH incremental": [*(f"member{i}" for i in range(n - 1)), "newMember"],
        "random (Kafka's)": ["".join(rng.choice(ALPHABET) for _ in range(22)) for _ in range(n)],
        "classic-style": [f"consumer-app-{i}-{rng.getrandbits(128):032x}" for i in range(n)],
    }


def best_ms(call: Callable[[], object], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.process_time()
        for _ in range(10):
            call()
        best = min(best, (time.process_time() - started) / 10)
    return best * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", default="2000,5000,10000", help="group sizes, comma-separated")
    parser.add_argument("--runs", type=int, default=30, help="batches of 10 calls per figure (default 30)")
    args = parser.parse_args(argv)
    rng = random.Random(1)
    print("| members | ids | array sort (ms) | CPython's sort (ms) | speed-up |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for n in (int(m) for m in args.members.split(",")):
        for kind, ids in id_kinds(n, rng).items():
            expected = np.fromiter(sorted(range(n), key=ids.__getitem__), np.int64, n)
            order = ascii_id_order(ids)
            assert order is not None and (order == expected).all(), kind
            array = best_ms(lambda ids=ids: ascii_id_order(ids), args.runs)
            python = best_ms(lambda ids=ids, n=n: np.fromiter(sorted(range(n), key=ids.__getitem__), np.int64, n),
                             args.runs)
            print(f"| {n:,} | {kind} | {array:.2f} | {python:.2f} | {python / array:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
