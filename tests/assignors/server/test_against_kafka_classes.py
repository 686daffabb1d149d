"""Our ``uniform`` and ``range`` against Kafka's own classes, group for group (opt-in).

Set ``KAFKA_ASSIGNOR_CLASSPATH`` to Kafka's compiled group-coordinator assignor classes with
their dependencies (as ``benchmarks/server_assignors.py --kafka-classpath`` takes them; see
docs/performance.md for how they were compiled from Kafka 4.1's source) and this test compiles
the small driver below with ``javac``, feeds it random groups, and requires Kafka's target
assignment for every one, in both iteration orders: ``coordinator`` (hash maps filled in the
order given, as a broker's coordinator does) and ``given`` (linked maps, as Kafka's unit tests).
Without the variable the test is skipped: the repository holds no Kafka code.
"""

from __future__ import annotations

import base64
import importlib.util
import os
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_rebalance.assignors.server import ServerMember, server_assign

CLASSPATH = os.environ.get("KAFKA_ASSIGNOR_CLASSPATH")
pytestmark = pytest.mark.skipif(not CLASSPATH, reason="KAFKA_ASSIGNOR_CLASSPATH not set (Kafka's classes, opt-in)")

DRIVER = r"""import java.io.*;
import java.util.*;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.*;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;

/** Reads groups (one per line), prints Kafka's target assignment (one line per group).
 *  Line: assignor order T (name id count)*T M (memberId S name*S A (topicName P p*P)*A)*M
 *  order: coordinator = hash maps filled in the order given; given = linked maps.
 *  GroupSpec and its members: the benchmark's driver's (benchmarks/server_assignors.py). */
public class UniformOracle {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            Iterator<String> tok = Arrays.asList(line.trim().split(" ")).iterator();
            PartitionAssignor assignor = tok.next().equals("range") ? new RangeAssignor() : new UniformAssignor();
            boolean hashed = tok.next().equals("coordinator");
            int t = Integer.parseInt(tok.next());
            Map<String, Uuid> ids = new HashMap<>(); Map<Uuid, String> names = new HashMap<>();
            Map<Uuid, Integer> counts = new HashMap<>();
            for (int i = 0; i < t; i++) {
                String name = tok.next(); Uuid id = Uuid.fromString(tok.next()); int n = Integer.parseInt(tok.next());
                ids.put(name, id); names.put(id, name); counts.put(id, n);
            }
            SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
                public int numPartitions(Uuid x) { Integer n = counts.get(x); return n == null ? -1 : n; }
                public Set<String> racksForPartition(Uuid x, int p) { return Collections.emptySet(); }
            };
            int m = Integer.parseInt(tok.next());
            Map<String, ServerAssignorDriver.Sub> subs = hashed ? new HashMap<>() : new LinkedHashMap<>();
            Map<String, ServerAssignorDriver.Assigned> assigned = new HashMap<>();
            Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
            List<String> order = new ArrayList<>();
            Set<Set<String>> nameSets = new HashSet<>();
            for (int j = 0; j < m; j++) {
                String member = tok.next(); order.add(member);
                int s = Integer.parseInt(tok.next());
                List<String> subNames = new ArrayList<>();
                for (int k = 0; k < s; k++) subNames.add(tok.next());
                Set<String> nameSet = new HashSet<>(subNames);
                nameSets.add(nameSet);
                // TopicIds: the names as the member's HashSet yields them, resolved.
                Set<Uuid> topicIds = new LinkedHashSet<>();
                for (String n : (hashed ? nameSet : new LinkedHashSet<>(subNames))) if (ids.containsKey(n)) topicIds.add(ids.get(n));
                subs.put(member, new ServerAssignorDriver.Sub(topicIds));
                int a = Integer.parseInt(tok.next());
                Map<Uuid, Set<Integer>> map = hashed ? new HashMap<>() : new LinkedHashMap<>();
                for (int k = 0; k < a; k++) {
                    Uuid id = ids.get(tok.next()); int p = Integer.parseInt(tok.next());
                    List<Integer> parts = new ArrayList<>();
                    for (int q = 0; q < p; q++) parts.add(Integer.parseInt(tok.next()));
                    map.put(id, hashed ? new HashSet<>(parts) : new LinkedHashSet<>(parts));
                    for (int x : parts) inverted.computeIfAbsent(id, z -> new HashMap<>()).putIfAbsent(x, member);
                }
                assigned.put(member, new ServerAssignorDriver.Assigned(Collections.unmodifiableMap(map)));
            }
            SubscriptionType type = nameSets.size() <= 1 ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
            GroupAssignment result = assignor.assign(new ServerAssignorDriver.Spec(Collections.unmodifiableMap(subs), assigned, type, inverted), describer);
            StringBuilder out = new StringBuilder();
            for (String member : order) {
                out.append(member).append(':');
                MemberAssignment ma = result.members().get(member);
                List<String> parts = new ArrayList<>();
                if (ma != null) for (Map.Entry<Uuid, Set<Integer>> e : ma.partitions().entrySet())
                    for (int p : e.getValue()) parts.add(names.get(e.getKey()) + "-" + p);
                Collections.sort(parts);
                out.append(String.join(",", parts)).append(';');
            }
            System.out.println(out);
        }
    }
}
"""


Group = tuple[str, str, dict[str, int], dict[str, str], list[ServerMember]]


def benchmark_driver() -> str:
    """The Java driver of ``benchmarks/server_assignors.py``, whose GroupSpec this one uses."""
    path = Path(__file__).parents[3] / "benchmarks" / "server_assignors.py"
    spec = importlib.util.spec_from_file_location("server_assignors_benchmark", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    driver: str = module.JAVA_DRIVER
    return driver


def rand_id(rng: random.Random) -> str:
    return base64.urlsafe_b64encode(rng.randbytes(16)).rstrip(b"=").decode()


def member_id(rng: random.Random, style: str) -> str:
    if style == "short":  # one bucket each in a 16-bucket table: rarely shared
        return rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") + str(rng.randint(0, 99))
    if style == "uuid":
        return rand_id(rng)
    return f"member{rng.randint(0, 5000)}"


def random_topics(rng: random.Random, names: list[str]) -> tuple[dict[str, int], dict[str, str]]:
    """Partition counts (16 and more: partitions share HashSet buckets) and topic ids."""
    topics = {n: rng.choice([0, 1, 2, 3, 5, 8, 13, 17, 20, 33, 40, 70]) for n in names}
    return topics, {n: rand_id(rng) for n in names}


def shuffled_member_ids(rng: random.Random, fewest: int, most: int) -> list[str]:
    """Distinct member ids of one style, in a random join order."""
    style = rng.choice(["short", "uuid", "member"])
    wanted = rng.randint(fewest, most)
    members: set[str] = set()
    while len(members) < wanted:
        members.add(member_id(rng, style))
    order = sorted(members)
    rng.shuffle(order)
    return order


def make(rng: random.Random) -> Group:
    """1-7 topics of 0-70 partitions (16 and more: partitions share HashSet buckets), 1-40
    members; one subscription for all (homogeneous) or random ones, sometimes naming a topic
    that does not exist; a random current assignment listed in random order."""
    pool = [f"topic{i}" for i in range(20)] + [f"t-{rng.randint(0, 999)}" for _ in range(5)]
    names = rng.sample(pool, rng.randint(1, 7))
    topics, ids = random_topics(rng, names)
    order = shuffled_member_ids(rng, 1, 40)
    choices = names + (["missing"] if rng.random() < 0.2 else [])
    common = rng.sample(choices, rng.randint(0, len(choices)))
    homogeneous = rng.random() < 0.6
    subscriptions = {x: list(common) if homogeneous else rng.sample(choices, rng.randint(0, len(choices))) for x in order}
    for x in order:
        rng.shuffle(subscriptions[x])
    held: dict[str, dict[str, list[int]]] = {x: {} for x in order}
    if rng.random() < 0.8:
        for n in names:
            for p in range(topics[n]):
                if rng.random() < 0.85:
                    held[rng.choice(order)].setdefault(n, []).append(p)
        for x in order:
            runs = list(held[x].items())
            rng.shuffle(runs)
            for _, parts in runs:
                rng.shuffle(parts)
            held[x] = dict(runs)
    members_list = [ServerMember(x, tuple(subscriptions[x]), {n: tuple(p) for n, p in held[x].items()}) for x in order]
    return rng.choice(["uniform", "uniform", "range"]), rng.choice(["coordinator", "given"]), topics, ids, members_list


def make_bucketed(rng: random.Random) -> Group:
    """JMH's heterogeneous shape at small scale: topics split among 2-4 buckets, each member
    subscribing to one bucket's topics (no topic shared across buckets), 2-60 members; a random
    current assignment, often piled on a few members (levels far apart) and partly on members
    of another bucket (revoked)."""
    names = rng.sample([f"topic{i}" for i in range(30)], rng.randint(2, 12))
    topics, ids = random_topics(rng, names)
    buckets = rng.randint(2, 4)
    bucket_of = {n: rng.randrange(buckets) for n in names}
    order = shuffled_member_ids(rng, 2, 60)
    subscriptions = {}
    for x in order:
        b = rng.randrange(buckets)
        subscriptions[x] = [n for n in names if bucket_of[n] == b] + (["missing"] if rng.random() < 0.1 else [])
        rng.shuffle(subscriptions[x])
    held: dict[str, dict[str, list[int]]] = {x: {} for x in order}
    if rng.random() < 0.7:
        holders = order[: rng.randint(1, len(order))]  # sometimes a few members hold everything
        for n in names:
            for p in range(topics[n]):
                if rng.random() < 0.85:
                    held[rng.choice(holders)].setdefault(n, []).append(p)
    members_list = [ServerMember(x, tuple(subscriptions[x]), {n: tuple(p) for n, p in held[x].items()}) for x in order]
    return "uniform", rng.choice(["coordinator", "given"]), topics, ids, members_list


def make_large_range(rng: random.Random) -> Group:
    """Range over 2,000-3,000 members (where the member ids are sorted as integers,
    ``id_order.ascii_id_order``): Kafka's random ids (in no order) or JMH's ``member<n>`` in
    join order with a ``newMember`` among them (no shared prefix: ids tie in their first 8
    bytes); 1-3 topics, nothing held."""
    count = rng.randint(2000, 3000)
    if rng.random() < 0.5:
        order = list({rand_id(rng) for _ in range(count)})
    else:
        order = [f"member{i}" for i in range(count)]
        order.insert(rng.randrange(count), "newMember")
    names = rng.sample([f"topic{i}" for i in range(10)], rng.randint(1, 3))
    topics = {n: rng.choice([100, 2500, 7001]) for n in names}
    ids = {n: rand_id(rng) for n in names}
    members_list = [ServerMember(x, tuple(names), {}) for x in order]
    return "range", "coordinator", topics, ids, members_list


def line(assignor: str, order: str, topics: dict[str, int], ids: dict[str, str], members: list[ServerMember]) -> str:
    """The driver's input line for one group."""
    tokens = [assignor, order, str(len(topics))]
    for name, count in topics.items():
        tokens += [name, ids[name], str(count)]
    tokens.append(str(len(members)))
    for member in members:
        tokens += [member.member_id, str(len(member.subscribed_topics)), *member.subscribed_topics, str(len(member.assigned))]
        for name, parts in member.assigned.items():
            tokens += [name, str(len(parts)), *map(str, parts)]
    return " ".join(tokens)


def ours(assignor: str, order: str, topics: dict[str, int], ids: dict[str, str], members: list[ServerMember]) -> str:
    """Our answer in the driver's output form."""
    got = server_assign(assignor, topics, members, topic_ids=ids, iteration_order=order)
    out = []
    for member in members:
        parts = sorted(f"{t}-{p}" for t, ps in got[member.member_id].items() for p in ps)
        out.append(member.member_id + ":" + ",".join(parts) + ";")
    return "".join(out)


@pytest.mark.parametrize(("seed", "maker", "count"), [(1, make, 500), (2, make, 500), (3, make, 500),
                                                      (4, make_bucketed, 500), (5, make_bucketed, 500),
                                                      (6, make_large_range, 8)])
def test_random_groups_match_kafkas_classes(seed: int, maker: Callable[[random.Random], Group], count: int,
                                            tmp_path: Path) -> None:
    assert CLASSPATH is not None
    (tmp_path / "UniformOracle.java").write_text(DRIVER)
    (tmp_path / "ServerAssignorDriver.java").write_text(benchmark_driver())
    subprocess.run(["javac", "-nowarn", "-cp", CLASSPATH, "-d", str(tmp_path), str(tmp_path / "UniformOracle.java"),
                    str(tmp_path / "ServerAssignorDriver.java")], check=True, capture_output=True)
    rng = random.Random(seed)
    groups = [maker(rng) for _ in range(count)]
    java = subprocess.run(["java", "-cp", f"{CLASSPATH}:{tmp_path}", "UniformOracle"], check=True,
                          input="\n".join(line(*g) for g in groups) + "\n", capture_output=True, text=True)
    theirs = java.stdout.splitlines()
    assert len(theirs) == len(groups)
    for group, kafka in zip(groups, theirs, strict=True):
        assert ours(*group) == kafka, line(*group)
