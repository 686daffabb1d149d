"""Assignors at scale (issue 3): one command, one table.

    .venv/bin/python benchmarks/assignors.py            # everything (about 4 minutes on 2 cores)
    .venv/bin/python benchmarks/assignors.py --quick    # 10x fewer partitions, a smoke run
    .venv/bin/python benchmarks/assignors.py --only 'sticky/uniform'   # cases whose name matches

Every case runs in its own subprocess (so one case's memory cannot inflate another's peak),
one case at a time, and measures

- **algo**: ``assign_columnar`` on a freshly built ``ColumnarGroup`` (integer arrays in, owner
  array out; the cached derived arrays are rebuilt for every call, so they are counted);
- **e2e**: ``kafka_rebalance.assign(snapshot_dict, strategy)``: dict in (1,000,000 owned
  partition strings in the R2 cases), validation, parsing, assignment, dict of sorted string
  lists out;
- **peak**: the process' peak RSS during the e2e calls (``VmHWM`` after resetting it through
  ``/proc/self/clear_refs``), which includes the input dict the caller holds, and ``input``,
  the RSS before the call;
- **checks**: owners subscribe, every subscribed partition assigned (cooperative: after the
  follow-up rebalance), Kafka-balanced, ``spread`` = max - min load, and ``moved`` = partitions a
  returning member validly claimed but lost, next to the minimum balance forces (uniform cases);
  e2e output must equal the columnar owner array.

Times are "first call / warmed median" in ms, like the Java figures of the issue. The cases
mirror Kafka's AbstractStickyAssignorTest large-assignment tests: 500 topics x 2,000
partitions, 2,000 consumers; R1 from scratch; R2 where consumers 1..1999 claim their R1 result
with generation 1 and consumer 0 claims nothing; "non-equal": the last consumer subscribes to
the first topic only. Topic names are ``t000``..``t499`` ("seq") or hashed, well-spread names
("spread"). ``random`` is testLargeAssignmentWithMultipleConsumersLeavingAndRandomSubscription
scaled up: random partition counts and random subscriptions, then a quarter of the consumers
leave. ``kafka-python`` runs kafka-python's StickyPartitionAssignor side by side with ours at
100 consumers x 10,000 partitions. ``growth`` cases scale sticky R2 over partitions and members.
``loads`` cases give every partition a load (lognormal, sigma 1.5, seeded) and run load-aware
(EAGER and COOPERATIVE) beside sticky and cooperative-sticky on the same uniform group (R1; R2:
every member but one claims its own R1 result): time, heaviest member's load against the lower
bound max(total / members, heaviest partition + the lightest ones its owner must also take),
partitions moved in R2.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np

# Java's warmed/first figures from issue 3 (ms): (first, warmed) for names t000.. and well-spread names.
JAVA_MS: dict[str, tuple[tuple[int, int], tuple[int, int] | None]] = {
    "sticky/uniform/R1": ((380, 200), (179, 80)),
    "sticky/uniform/R2": ((7440, 6080), (1254, 1106)),
    "cooperative-sticky/uniform/R1": ((443, 174), (156, 81)),
    "cooperative-sticky/uniform/R2": ((4486, 2316), (764, 599)),
    "sticky/nonequal/R1": ((7429, 6487), (4048, 3476)),
    "sticky/nonequal/R2": ((8051, 7276), (2616, 1876)),
    "cooperative-sticky/nonequal/R1": ((10441, 7649), (4540, 4166)),
    "cooperative-sticky/nonequal/R2": ((5206, 5427), (2687, 1724)),
    "range/500x2000": ((624, 290), (598, 285)),
    "roundrobin/500x2000": ((2927, 2122), (2525, 2397)),
    "range/1x1M": ((216, 124), None),
    "roundrobin/1x1M": ((104, 30), None),
}
E2E_TARGET_MS = {"R1": 1000, "R2": 1500}


@dataclass(frozen=True)
class Case:
    name: str
    strategy: str
    shape: str  # uniform | nonequal | random | single
    round: int  # 1 or 2
    topics: int
    partitions: int  # per topic (random: mean)
    members: int
    names: str  # seq | spread
    reps: int = 3

    @property
    def java_key(self) -> str:
        if self.shape == "single":
            return f"{self.strategy}/1x1M"
        if self.strategy in ("range", "roundrobin"):
            return f"{self.strategy}/500x2000"
        return f"{self.strategy}/{self.shape}/R{self.round}"


def build_cases(scale: int) -> list[Case]:
    """``scale`` divides the partition counts (1 = the issue's sizes)."""
    p = 2000 // scale
    cases = []
    for shape in ("uniform", "nonequal"):
        for strategy in ("sticky", "cooperative-sticky"):
            for rnd in (1, 2):
                for names in ("seq", "spread"):
                    cases.append(Case(f"{strategy}/{shape}/R{rnd}/{names}", strategy, shape, rnd, 500, p, 2000, names))
    for strategy in ("range", "roundrobin"):
        for names in ("seq", "spread"):
            cases.append(Case(f"{strategy}/500x2000/{names}", strategy, "uniform", 1, 500, p, 2000, names))
    for strategy in ("range", "roundrobin"):
        cases.append(Case(f"{strategy}/1x1M", strategy, "single", 1, 1, 1_000_000 // scale, 2000, "seq"))
    for strategy in ("sticky", "cooperative-sticky"):
        for rnd in (1, 2):
            cases.append(Case(f"{strategy}/random/R{rnd}/spread", strategy, "random", rnd, 500, p, 2000, "spread"))
    cases.append(Case("kafka-python/sticky/R1", "kafka-python", "uniform", 1, 10, 1000, 100, "seq", reps=1))
    cases.append(Case("kafka-python/sticky/R2", "kafka-python", "uniform", 2, 10, 1000, 100, "seq", reps=1))
    # load-aware beside the count-balancing sticky assignors (issue 22): same group, same loads.
    for strategy in ("sticky", "load-aware-eager", "cooperative-sticky", "load-aware"):
        for rnd in (1, 2):
            cases.append(Case(f"loads/{strategy}/R{rnd}", strategy, "uniform", rnd, 500, p, 2000, "seq"))
    for members in (200, 2000):
        for total in (10_000, 100_000, 1_000_000):
            per_topic = max(1, total // 500 // scale)
            cases.append(Case(f"growth/sticky/R2/{total // 1000}k/{members}m", "sticky", "uniform", 2, 500, per_topic, members, "seq"))
        cases.append(Case(f"growth/range/{members}m/1M", "range", "uniform", 1, 500, 2000 // scale, members, "seq"))
    return cases


# ----------------------------------------------------------------------------- input generation


def topic_names(case: Case) -> list[str]:
    """Topic names by creation index (index 0 is "the first topic")."""
    if case.names == "seq":
        width = len(str(case.topics - 1)) if case.topics > 1 else 1
        return [f"t{i:0{width}d}" for i in range(case.topics)]
    return [f"events.{hashlib.blake2b(str(i).encode(), digest_size=5).hexdigest()}" for i in range(case.topics)]


@dataclass
class Inputs:
    names: list[str]  # creation order
    counts: list[int]  # creation order
    subscriptions: list[list[int]]  # creation-order topic indices per member
    member_ids: list[str]


def make_inputs(case: Case) -> Inputs:
    names = topic_names(case)
    members = [f"c{i:04d}" for i in range(case.members)]
    everything = list(range(case.topics))
    if case.shape == "random":
        rng = random.Random(42)
        counts = [rng.randint(1, 2 * case.partitions - 1) for _ in range(case.topics)]
        subs = []
        for _ in range(case.members):
            # Kafka's loop: `for (j = 0; j < rand.nextInt(20); j++) topics.add(random topic)`.
            topics: set[int] = set()
            j = 0
            while j < rng.randrange(20):
                topics.add(rng.randrange(case.topics))
                j += 1
            subs.append(sorted(topics))
    else:
        counts = [case.partitions] * case.topics
        subs = [everything] * case.members
        if case.shape == "nonequal":
            subs[-1] = [0]
    return Inputs(names, counts, subs, members)


def columnar_group(inputs: Inputs, owned: list[np.ndarray] | None = None, generations=None, keep=None):
    """A ColumnarGroup through the public ``from_arrays``; ``owned`` holds global indices (Java
    order); ``keep`` the member indices (creation order) still in the group."""
    from kafka_rebalance.model import ColumnarGroup, java_sort_key

    order = sorted(range(len(inputs.names)), key=lambda i: java_sort_key(inputs.names[i]))
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    keep = list(range(len(inputs.member_ids))) if keep is None else keep
    sub_lists = [np.sort(position[inputs.subscriptions[m]]) if inputs.subscriptions[m] else np.zeros(0, np.int64) for m in keep]
    sub_indptr = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sub_lists], out=sub_indptr[1:])
    sub_topics = np.concatenate(sub_lists) if sub_lists else np.zeros(0, np.int64)
    kwargs = {}
    if owned is not None:
        owned_kept = [owned[m] for m in keep]
        owned_indptr = np.zeros(len(keep) + 1, dtype=np.int64)
        np.cumsum([len(o) for o in owned_kept], out=owned_indptr[1:])
        kwargs = dict(
            owned_indptr=owned_indptr,
            owned_partitions=np.concatenate(owned_kept) if owned_kept else np.zeros(0, np.int64),
            generations=np.asarray([generations[m] for m in keep], dtype=np.int64),
        )
    return ColumnarGroup.from_arrays(
        [inputs.names[i] for i in order],
        [inputs.counts[i] for i in order],
        [inputs.member_ids[m] for m in keep],
        sub_indptr,
        sub_topics,
        **kwargs,
    )


def snapshot_dict(inputs: Inputs, group, owned_lists: dict[str, list[str]] | None, generations, keep) -> dict:
    """The JSON snapshot of the same group (what a caller of ``assign`` holds)."""
    members = []
    for k, m in enumerate(keep):
        entry = {"member_id": inputs.member_ids[m], "topics": [inputs.names[t] for t in inputs.subscriptions[m]]}
        if owned_lists is not None:
            mid = inputs.member_ids[m]
            if owned_lists.get(mid):
                entry["owned"] = owned_lists[mid]
            if generations[m] != -1:
                entry["generation"] = int(generations[m])
        members.append(entry)
        del k
    return {"topics": dict(zip(inputs.names, inputs.counts, strict=True)), "members": members}


def prepare(case: Case):
    """(make_group() -> fresh ColumnarGroup, snapshot dict) for the measured round."""
    from kafka_rebalance.assignors import assign_columnar

    inputs = make_inputs(case)
    everyone = list(range(case.members))
    r1_group = columnar_group(inputs)
    if case.round == 1:
        return (lambda: columnar_group(inputs)), snapshot_dict(inputs, r1_group, None, None, everyone), None
    owner = assign_columnar(r1_group, "sticky" if case.strategy == "kafka-python" else case.strategy)
    # Members claim their R1 result with generation 1; consumer 0 claims nothing.
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(case.members + 1))
    owned = [order[bounds[m] : bounds[m + 1]] for m in range(case.members)]
    owned[0] = np.zeros(0, dtype=np.int64)
    generations = [-1] + [1] * (case.members - 1)
    keep = everyone
    if case.shape == "random":
        rng = random.Random(7)
        leaving = {rng.randrange(case.members) for _ in range(case.members // 4)}
        keep = [m for m in everyone if m not in leaving]
    names = r1_group.partition_names(np.concatenate(owned)) if owned else []
    owned_lists, at = {}, 0
    for m, mid in enumerate(inputs.member_ids):
        owned_lists[mid] = names[at : at + len(owned[m])]
        at += len(owned[m])
    del names
    snap = snapshot_dict(inputs, r1_group, owned_lists, generations, keep)
    return (lambda: columnar_group(inputs, owned, generations, keep)), snap, None


# ----------------------------------------------------------------------------- measuring one case


def _rss_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _timed(fn):
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1000, out


def minimum_moves(loads_claimed: np.ndarray, total: int) -> int:
    """Uniform subscriptions: the fewest valid claims balance forces to move (quota q or q+1,
    at most r = total % M members at q+1, the largest claimants taking those)."""
    m = len(loads_claimed)
    q, r = divmod(total, m)
    c = np.sort(loads_claimed)[::-1]
    cap = np.full(m, q)
    cap[:r] += 1
    return int(np.maximum(c - cap, 0).sum())


def check(case: Case, group, owner: np.ndarray) -> dict:
    from kafka_rebalance.assignors import assign_columnar, checks
    from kafka_rebalance.assignors.sticky import previous_owners

    result: dict = {}
    result["valid"] = checks.owners_subscribe(group, owner)
    subscribed = checks.subscribed_partitions(group)
    final_owner = owner
    if case.strategy == "cooperative-sticky":
        # The follow-up rebalance: everyone claims what it now has (generation 2) and runs again.
        counts = np.bincount(owner[owner >= 0], minlength=group.num_members)
        order = np.argsort(owner, kind="stable")[np.count_nonzero(owner < 0) :]
        from kafka_rebalance.model import ColumnarGroup

        follow = ColumnarGroup.from_arrays(
            group.topic_names, group.partition_counts, group.member_ids, group.subscription_indptr,
            group.subscription_topics, np.concatenate(([0], np.cumsum(counts))), order,
            np.full(group.num_members, 2),
        )
        final_owner = assign_columnar(follow, case.strategy)
        result["followup_kept_all"] = bool((final_owner[owner >= 0] == owner[owner >= 0]).all())
    result["complete"] = bool((final_owner[subscribed] >= 0).all())
    result["balanced"] = checks.is_balanced(group, final_owner)
    loads = checks.member_loads(group, final_owner)
    result["spread"] = int(loads.max() - loads.min()) if len(loads) else 0
    if case.strategy in ("sticky", "cooperative-sticky"):
        prev = previous_owners(group)
        claimed = int((prev >= 0).sum())
        kept = checks.kept_partitions(group, owner)
        result["claimed"] = claimed
        result["moved"] = claimed - kept
        if case.shape in ("uniform",) and claimed:
            result["min_moves"] = minimum_moves(np.bincount(prev[prev >= 0], minlength=group.num_members), int(subscribed.sum()))
    return result


def _loads_assignor(name: str):
    from kafka_rebalance.assignors import get_assignor

    if name == "load-aware-eager":
        return get_assignor("load-aware").configured({"rebalance_protocol": "EAGER"})
    return get_assignor(name)


def run_loads_case(case: Case) -> dict:
    """One ``loads/`` case: the assignor's time on a group carrying partition loads."""
    from dataclasses import replace

    from kafka_rebalance.assignors import assign_columnar
    from kafka_rebalance.assignors.sticky import previous_owners, with_ownership

    inputs = make_inputs(case)
    rng = np.random.default_rng(22)
    loads = rng.lognormal(0.0, 1.5, int(sum(inputs.counts)))
    assignor = _loads_assignor(case.strategy)

    def make_group():
        group = replace(columnar_group(inputs), partition_loads=loads)
        if case.round == 1:
            return group
        r1 = assign_columnar(group, assignor)
        if (r1 < 0).any():  # cooperative: the follow-up completes R1 first
            r1 = assign_columnar(with_ownership(group, r1), assignor)
        r1[r1 == 0] = -1  # consumer 0 claims nothing
        return with_ownership(group, r1)

    algo, owner, group = [], None, None
    for _ in range(case.reps + 1):
        group = make_group()
        ms, owner = _timed(lambda g=group: assign_columnar(g, assignor))
        algo.append(ms)
    final = owner
    if (owner < 0).any():
        final = assign_columnar(with_ownership(group, owner), assignor)
    member_load = np.bincount(final, weights=loads, minlength=group.num_members)
    least = len(loads) // group.num_members
    bound = max(loads.sum() / group.num_members, loads.max() + np.sort(loads)[: least - 1].sum())
    prev = previous_owners(group)
    claimed = prev >= 0
    return {
        "case": case.name,
        "partitions": len(loads),
        "algo": algo,
        "heaviest_over_bound": float(member_load.max() / bound),
        "moved": int((claimed & (final != prev)).sum()),
        "claimed": int(claimed.sum()),
        "count_spread": int(np.ptp(np.bincount(final, minlength=group.num_members))),
    }


def run_case(case: Case) -> dict:
    from kafka_rebalance import assign
    from kafka_rebalance.assignors import assign_columnar

    if case.strategy == "kafka-python":
        return run_kafka_python(case)
    if case.name.startswith("loads/"):
        return run_loads_case(case)
    make_group, snap, _ = prepare(case)
    out: dict = {"case": case.name, "partitions": int(sum(make_inputs(case).counts))}

    algo = []
    owner = None
    for _ in range(case.reps + 1):
        group = make_group()
        ms, owner = _timed(lambda g=group: assign_columnar(g, case.strategy))
        algo.append(ms)
    out["algo"] = algo
    group = make_group()

    input_kib = _rss_kib("VmRSS")
    peak_ok = _reset_peak()
    e2e = []
    result = None
    for _ in range(case.reps + 1):
        result = None
        ms, result = _timed(lambda: assign(snap, case.strategy))
        e2e.append(ms)
    out["e2e"] = e2e
    out["input_mib"] = input_kib / 1024
    out["peak_mib"] = _rss_kib("VmHWM") / 1024 if peak_ok else float("nan")

    out["checks"] = check(case, group, owner)
    e2e_owner = group.owner_from_lists(result["assignment"])
    out["checks"]["e2e_equal"] = bool(np.array_equal(e2e_owner, owner))
    return out


def run_kafka_python(case: Case) -> dict:
    """kafka-python's StickyPartitionAssignor next to ours, same group, same round."""
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData

    from kafka_rebalance import assign

    inputs = make_inputs(case)
    parts = {name: set(range(n)) for name, n in zip(inputs.names, inputs.counts, strict=True)}

    class Cluster:
        def topics(self):
            return set(parts)

        def partitions_for_topic(self, topic):
            return parts.get(topic)

    class Metadata:
        def __init__(self, topics, user_data):
            self.topics, self.user_data = topics, user_data

    class Member:
        def __init__(self, member_id, metadata):
            self.member_id, self.metadata = member_id, metadata

    make_group, snap, _ = prepare(case)
    members = []
    for m in snap["members"]:
        owned = m.get("owned")
        user_data = None
        if owned:
            by_topic: dict[str, list[int]] = {}
            for text in owned:
                topic, _, p = text.rpartition("-")
                by_topic.setdefault(topic, []).append(int(p))
            user_data = StickyAssignorUserData(list(by_topic.items()), m.get("generation", -1))
        members.append(Member(m["member_id"], Metadata(m["topics"], user_data)))
    ms_kp, kp_result = _timed(lambda: StickyPartitionAssignor().assign(Cluster(), members))
    e2e = [_timed(lambda: assign(snap, "sticky"))[0] for _ in range(case.reps + 3)]
    algo = []
    for _ in range(case.reps + 3):
        g = make_group()
        algo.append(_timed(lambda g=g: __import__("kafka_rebalance").assignors.assign_columnar(g, "sticky"))[0])
    sizes = sorted(len(a.partitions()) for a in kp_result.values())
    return {
        "case": case.name,
        "partitions": int(sum(inputs.counts)),
        "kafka_python_ms": ms_kp,
        "kafka_python_spread": sizes[-1] - sizes[0] if sizes else 0,
        "e2e": e2e,
        "algo": algo,
    }


# ----------------------------------------------------------------------------- report


def _fmt_times(ms: list[float]) -> str:
    first, rest = ms[0], ms[1:] or ms
    return f"{first:,.0f} / {statistics.median(rest):,.0f}"


def _warm(ms: list[float]) -> float:
    return statistics.median(ms[1:] or ms)


def report(results: list[dict], cases: dict[str, Case], quick: bool) -> str:
    lines = []
    main = [r for r in results if not r["case"].startswith(("growth/", "kafka-python/", "loads/"))]
    if main:
        lines += [
            "| case | partitions | Java `t000` / spread, first/warm (ms) | algo first/warm (ms) | e2e first/warm (ms) | input / peak RSS (MiB) | checks | targets |",
            "| --- | ---: | --- | ---: | ---: | ---: | --- | --- |",
        ]
        for r in main:
            case = cases[r["case"]]
            java = JAVA_MS.get(case.java_key)
            java_txt = "-"
            goal = None
            if java:
                seq, spread = java
                java_txt = f"{seq[0]}/{seq[1]}" + (f" ; {spread[0]}/{spread[1]}" if spread else "")
                goal = (spread or seq)[1]
            c = r["checks"]
            chk = []
            chk.append("valid" if c["valid"] else "INVALID")
            if "moved" in c:
                mv = f"moved {c['moved']:,}/{c['claimed']:,}"
                if "min_moves" in c:
                    mv += f" (min {c['min_moves']:,})"
                chk.append(mv)
            # Cooperative: completeness and balance are those after the follow-up rebalance.
            after = "after follow-up: " if "followup_kept_all" in c else ""
            state = ["complete" if c["complete"] else "INCOMPLETE", "balanced" if c["balanced"] else "UNBALANCED", f"spread {c['spread']}"]
            if "followup_kept_all" in c:
                state.append("nothing revoked again" if c["followup_kept_all"] else "REVOKES AGAIN")
            chk.append(after + " ".join(state))
            if not c["e2e_equal"]:
                chk.append("E2E DIFFERS")
            targets = []
            if goal is not None and not quick:
                targets.append("algo ok" if _warm(r["algo"]) <= goal else "ALGO SLOW")
            if not quick:
                limit = E2E_TARGET_MS["R2" if case.round == 2 else "R1"]
                targets.append("e2e ok" if _warm(r["e2e"]) <= limit else "E2E SLOW")
                targets.append("mem ok" if r["peak_mib"] < 2048 else "MEM HIGH")
            lines.append(
                f"| {r['case']} | {r['partitions']:,} | {java_txt} | {_fmt_times(r['algo'])} | {_fmt_times(r['e2e'])} | "
                f"{r['input_mib']:,.0f} / {r['peak_mib']:,.0f} | {', '.join(chk)} | {', '.join(targets) or '-'} |"
            )
    kp = [r for r in results if r["case"].startswith("kafka-python/")]
    if kp:
        lines += [
            "",
            "| kafka-python side by side (100 consumers x 10,000 partitions) | kafka-python (ms) | ours e2e warm (ms) | ours algo warm (ms) | ratio (e2e) | ratio (algo) |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in kp:
            e, a = _warm(r["e2e"]), _warm(r["algo"])
            lines.append(
                f"| {r['case']} | {r['kafka_python_ms']:,.0f} | {e:,.1f} | {a:,.1f} | {r['kafka_python_ms'] / e:,.0f}x | {r['kafka_python_ms'] / a:,.0f}x |"
            )
    loads = [r for r in results if r["case"].startswith("loads/")]
    if loads:
        lines += [
            "",
            "| loads case (lognormal loads) | partitions | algo first/warm (ms) | heaviest / lower bound | count spread | moved (R2) |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in loads:
            moved = f"{r['moved']:,}/{r['claimed']:,}" if r["claimed"] else "-"
            lines.append(f"| {r['case']} | {r['partitions']:,} | {_fmt_times(r['algo'])} | {r['heaviest_over_bound']:.3f} | {r['count_spread']} | {moved} |")
    growth = [r for r in results if r["case"].startswith("growth/")]
    if growth:
        lines += [
            "",
            "| growth case | partitions | members | algo warm (ms) | e2e warm (ms) | peak RSS (MiB) | checks |",
            "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
        for r in growth:
            case = cases[r["case"]]
            c = r["checks"]
            ok = c["valid"] and c["complete"] and c["balanced"] and c["e2e_equal"] and c.get("moved", 0) <= c.get("min_moves", 0)
            lines.append(
                f"| {r['case']} | {r['partitions']:,} | {case.members:,} | {_warm(r['algo']):,.1f} | {_warm(r['e2e']):,.1f} | "
                f"{r['peak_mib']:,.0f} | {'ok' if ok else 'FAILED ' + json.dumps(c)} |"
            )
    return "\n".join(lines)


def machine_line() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    except OSError:
        model = "?"
    load = os.getloadavg()
    return (
        f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}; "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10x fewer partitions per case (a smoke run)")
    parser.add_argument("--only", metavar="REGEX", help="run only the cases whose name matches (re.search)")
    parser.add_argument("--reps", type=int, help="warmed repetitions per case (default 3)")
    parser.add_argument("--list", action="store_true", help="list the case names and exit")
    parser.add_argument("--json", metavar="FILE", help="also write the raw results as JSON lines")
    parser.add_argument("--child", metavar="CASE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    scale = 10 if args.quick else 1
    cases = {c.name: c for c in build_cases(scale)}
    if args.reps is not None:
        cases = {n: Case(**{**c.__dict__, "reps": args.reps if c.strategy != "kafka-python" else c.reps}) for n, c in cases.items()}
    if args.child:
        print(json.dumps(run_case(cases[args.child])))
        return 0
    selected = [c for c in cases.values() if not args.only or re.search(args.only, c.name)]
    if args.list:
        print("\n".join(c.name for c in selected))
        return 0
    print(f"machine: {machine_line()}", flush=True)
    results = []
    failed = False
    for case in selected:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", case.name] + (["--quick"] if args.quick else [])
        if args.reps is not None:
            cmd += ["--reps", str(args.reps)]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{case.name}: FAILED\n{proc.stderr}", file=sys.stderr, flush=True)
            failed = True
            continue
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        results.append(result)
        print(f"  {case.name}: done in {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(result) + "\n")
    print(report(results, cases, args.quick))
    print(f"\nload average after the run: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
