"""Server-side assignors (KIP-848 ``uniform`` and ``range``) on the shapes of Kafka's JMH
``ServerSideAssignorBenchmark``: members x partitions-per-member x topics, homogeneous or
heterogeneous (members and topics split into 5 buckets), full (first assignment) or incremental
(one member joins a group holding the full assignment of the others).

    python benchmarks/server_assignors.py                 # every JMH shape at 10,000 members
    python benchmarks/server_assignors.py --grid          # every JMH shape (rack-unaware)
    python benchmarks/server_assignors.py --kafka-classpath CP   # side by side with Kafka's classes
    python benchmarks/server_assignors.py --dict-api      # server_assign (dicts) and the coordinator against the assignor

Timed: the assignor on a group already held as arrays, as JMH times ``assignor.assign(groupSpec,
describer)`` on a GroupSpec built in its setup; each assignor answers in its natural form, as
Kafka's do: ``uniform`` an owner per partition, ``range`` one range per member and topic
(Kafka's RangeAssignor answers with one ``RangeSet`` per member and topic). Each figure is the
best of several samples after a warm-up; a sample averages a batch of calls lasting about
10 ms (Java: the same, after a 2 s JIT warm-up). Best-of-N on both sides, because the machine
these figures come from is shared: the best sample is the one least disturbed by other jobs.
Kafka's side runs each shape in ``--kafka-forks`` JVMs (default 3) and takes the median of their
bests: how well the JIT compiles a shape varies from one JVM to the next.

``--kafka-classpath`` takes Kafka's already-built classes or jars (group-coordinator,
group-coordinator-api, clients, server-common, and slf4j-api). The benchmark then compiles a
small driver of its own (below, ``JAVA_DRIVER``) against them with ``javac`` into a temporary
directory and times Kafka's UniformAssignor and RangeAssignor on the same shapes, one JVM per
shape and fork, each after a JIT warm-up. It does not build Kafka.
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kafka_rebalance.assignors.server import ServerGroup, server_assign_columnar
from kafka_rebalance.assignors.server.build import resolve_topic_keys
from kafka_rebalance.assignors.server.range import range_ranges
from kafka_rebalance.assignors.server.uniform import uniform_assign
from kafka_rebalance.model import java_sort_key

BUCKETS = 5  # ServerSideAssignorBenchmark.MAX_BUCKET_COUNT

# Figures Kafka's developers published for 10,000 members (ms per assignment, JMH avgt; for
# range homogeneous they give 32-44 ms, the upper end is taken).
PUBLISHED_MS = {"uniform/homogeneous": 13.0, "uniform/heterogeneous": 315.0, "range/homogeneous": 44.0, "range/heterogeneous": 195.0}


@dataclass(frozen=True)
class Shape:
    assignor: str
    subscription: str  # homogeneous | heterogeneous
    kind: str  # full | incremental
    members: int
    ratio: int  # partitions per member
    topics: int

    @property
    def partitions_per_topic(self) -> int:
        return self.members * self.ratio // self.topics

    def label(self) -> str:
        return f"{self.assignor} {self.subscription[:5]} {self.kind[:4]} {self.members}x{self.ratio} t{self.topics}"


def bucket_subscriptions(members: int, topics: int) -> tuple[np.ndarray, list[list[int]]]:
    """AssignorBenchmarkUtils.createHeterogeneousBucketedMembers: member i's bucket, and each
    bucket's topics (by creation index)."""
    buckets = min(BUCKETS, members)
    topics_per_bucket = math.ceil(topics / buckets)
    members_per_bucket = math.ceil(members / buckets)
    bucket = np.arange(members) // members_per_bucket
    lists = [list(range(b * topics_per_bucket, min((b + 1) * topics_per_bucket, topics))) for b in range(buckets)]
    return bucket, lists


def build_group(shape: Shape) -> ServerGroup:
    """The group JMH's setup builds (topic ids derived from names instead of random)."""
    created = [f"topic-{i}" for i in range(shape.topics)]
    names = sorted(created, key=java_sort_key)
    position = {name: i for i, name in enumerate(names)}
    as_index = [position[name] for name in created]  # creation index -> our topic index
    counts = np.full(shape.topics, shape.partitions_per_topic, dtype=np.int64)
    n = shape.members - 1 if shape.kind == "incremental" else shape.members
    member_ids = [f"member{i}" for i in range(n)]
    if shape.subscription == "homogeneous":
        member_class = np.zeros(n, dtype=np.int64)
        class_lists = [as_index]
    else:
        member_class, lists = bucket_subscriptions(n, shape.topics)
        class_lists = [[as_index[t] for t in topics] for topics in lists]
    group = ServerGroup.build(names, counts, resolve_topic_keys(names, None), member_ids, member_class, class_lists)
    if shape.kind == "full":
        return group
    # simulateIncrementalRebalance: everyone holds the full assignment; "newMember" joins with
    # the subscription of member (memberCount - 2) (heterogeneous) or all topics (homogeneous).
    owner = server_assign_columnar(shape.assignor, group)
    joiner_class = int(member_class[n - 1])
    return ServerGroup.build(
        names,
        counts,
        group.topic_keys,
        [*member_ids, "newMember"],
        np.append(member_class, joiner_class),
        class_lists,
        current_owner=owner,
    )


ASSIGNORS = {"uniform": uniform_assign, "range": range_ranges}


def time_python(shape: Shape, runs: int) -> float:
    group = build_group(shape)
    assignor = ASSIGNORS[shape.assignor]
    # Warm-up, as the Java driver's: at least 3 calls and 0.2 s; the fastest call sizes the batch
    # so that a sample lasts about 10 ms (a batch sized on one cold call would be too short to
    # amortise the collection that precedes each sample).
    single, warm_until, calls = math.inf, time.perf_counter() + 0.2, 0
    while calls < 3 or time.perf_counter() < warm_until:
        fresh_group = _fresh(group)
        start = time.perf_counter()
        assignor(fresh_group)
        single = min(single, time.perf_counter() - start)
        calls += 1
    batch = min(1000, max(1, int(0.01 / single)))  # at most 1,000 fresh groups built per sample
    samples = []
    for _ in range(runs):
        fresh = [_fresh(group) for _ in range(batch)]  # no cached arrays carried over between runs
        # The setup's objects (the batch of groups) are moved out of the collector's sight, as
        # a JVM's old generation is out of its young collections'; collection stays on for
        # whatever the assignor itself allocates.
        gc.collect()
        gc.freeze()
        start = time.perf_counter()
        for g in fresh:
            answer = assignor(g)
        samples.append((time.perf_counter() - start) / batch)
        gc.unfreeze()
    owner = answer if isinstance(answer, np.ndarray) else answer.owner(group)
    assert (owner >= 0).all(), "every partition is assigned"
    return min(samples) * 1000


def _fresh(group: ServerGroup) -> ServerGroup:
    """The same group without derived (cached) arrays, so each run pays for them. It keeps
    what Kafka's ``GroupSpec`` carries in from JMH's setup: each member's current assignment
    and the inverted partition -> member map (``held_*`` and ``current_owner``)."""
    return ServerGroup.build(
        group.topic_names,
        group.partition_counts,
        group.topic_keys,
        group.member_ids,
        group.member_class,
        [group.class_topics[group.class_indptr[c] : group.class_indptr[c + 1]] for c in range(group.num_classes)],
        current_owner=group.current_owner,
        instance_ids=group.instance_ids,
        held=(group.held_indptr, group.held_partitions),
    )


JAVA_DRIVER = r"""
import java.util.*;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.*;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;

/** Times Kafka's server-side assignors on ServerSideAssignorBenchmark's shapes.
 *  Arguments: runs, then shapes as assignor,subscription,kind,members,ratio,topics. */
public class ServerAssignorDriver {
    record Sub(Set<Uuid> topics) implements MemberSubscription {
        public Optional<String> rackId() { return Optional.empty(); }
        public Optional<String> instanceId() { return Optional.empty(); }
        public Set<Uuid> subscribedTopicIds() { return topics; }
    }
    record Assigned(Map<Uuid, Set<Integer>> partitions) implements MemberAssignment {}
    static final class Spec implements GroupSpec {
        final Map<String, Sub> subs; final Map<String, Assigned> assigned; final SubscriptionType type;
        final Map<Uuid, Map<Integer, String>> inverted;
        Spec(Map<String, Sub> subs, Map<String, Assigned> assigned, SubscriptionType type, Map<Uuid, Map<Integer, String>> inverted) {
            this.subs = subs; this.assigned = assigned; this.type = type; this.inverted = inverted;
        }
        public Collection<String> memberIds() { return subs.keySet(); }
        public SubscriptionType subscriptionType() { return type; }
        public boolean isPartitionAssigned(Uuid t, int p) { Map<Integer, String> m = inverted.get(t); return m != null && m.containsKey(p); }
        public boolean isPartitionAssignable(Uuid t, int p) { return true; }  // GroupSpec of Kafka 4.1
        public MemberSubscription memberSubscription(String id) { return subs.get(id); }
        public MemberAssignment memberAssignment(String id) { Assigned a = assigned.get(id); return a != null ? a : new Assigned(Collections.emptyMap()); }
    }

    public static void main(String[] args) {
        int runs = Integer.parseInt(args[0]);
        for (int i = 1; i < args.length; i++) {
            String[] f = args[i].split(",");
            PartitionAssignor assignor = f[0].equals("range") ? new RangeAssignor() : new UniformAssignor();
            boolean homogeneous = f[1].equals("homogeneous"), incremental = f[2].equals("incremental");
            int members = Integer.parseInt(f[3]), ratio = Integer.parseInt(f[4]), topicCount = Integer.parseInt(f[5]);
            int perTopic = members * ratio / topicCount;
            List<Uuid> topics = new ArrayList<>();
            Map<Uuid, Integer> partitions = new HashMap<>();
            for (int t = 0; t < topicCount; t++) { Uuid id = Uuid.randomUuid(); topics.add(id); partitions.put(id, perTopic); }
            SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
                public int numPartitions(Uuid t) { Integer n = partitions.get(t); return n == null ? -1 : n; }
                public Set<String> racksForPartition(Uuid t, int p) { return Collections.emptySet(); }
            };
            int n = incremental ? members - 1 : members;
            Map<String, Sub> subs = new HashMap<>();
            int buckets = Math.min(5, n);
            int topicsPerBucket = (int) Math.ceil((double) topicCount / buckets), membersPerBucket = (int) Math.ceil((double) n / buckets);
            List<Sub> bucketSubs = new ArrayList<>();
            for (int b = 0; b < buckets; b++)
                bucketSubs.add(new Sub(new HashSet<>(topics.subList(Math.min(b * topicsPerBucket, topicCount), Math.min((b + 1) * topicsPerBucket, topicCount)))));
            Sub all = new Sub(new HashSet<>(topics));
            for (int m = 0; m < n; m++) subs.put("member" + m, homogeneous ? all : bucketSubs.get(m / membersPerBucket));
            SubscriptionType type = homogeneous ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
            GroupSpec spec = new Spec(subs, new HashMap<>(), type, Collections.emptyMap());
            if (incremental) {
                GroupAssignment first = assignor.assign(spec, describer);
                Map<String, Assigned> assigned = new HashMap<>();
                Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
                for (Map.Entry<String, MemberAssignment> e : first.members().entrySet()) {
                    assigned.put(e.getKey(), new Assigned(Collections.unmodifiableMap(e.getValue().partitions())));
                    for (Map.Entry<Uuid, Set<Integer>> tp : e.getValue().partitions().entrySet())
                        for (int p : tp.getValue()) inverted.computeIfAbsent(tp.getKey(), k -> new HashMap<>()).put(p, e.getKey());
                }
                Map<String, Sub> joined = new HashMap<>(subs);
                joined.put("newMember", homogeneous ? all : subs.get("member" + (members - 2)));
                spec = new Spec(joined, assigned, type, inverted);
            }
            // JIT warm-up: at least 3 runs and 2 s. Then each sample averages a batch of runs
            // lasting about 10 ms (JMH's avgt mode averages over many invocations too).
            long warmUntil = System.nanoTime() + 2_000_000_000L, single = Long.MAX_VALUE;
            for (int w = 0; w < 3 || System.nanoTime() < warmUntil; w++) {
                long t0 = System.nanoTime();
                assignor.assign(spec, describer);
                single = Math.min(single, System.nanoTime() - t0);
            }
            int batch = (int) Math.max(1, 10_000_000L / Math.max(single, 1));
            double[] samples = new double[runs];
            for (int r = 0; r < runs; r++) {
                long start = System.nanoTime();
                for (int b = 0; b < batch; b++) assignor.assign(spec, describer);
                samples[r] = (System.nanoTime() - start) / 1e6 / batch;
            }
            Arrays.sort(samples);
            System.out.println(args[i] + "," + samples[0]);
        }
    }
}
"""


class KafkaDriver:
    """JAVA_DRIVER compiled against the user's Kafka classes, run in one JVM per shape (as JMH
    forks), right before the Python run of the same shape so that both see the same load."""

    def __init__(self, classpath: str):
        self.classpath = classpath
        self.tmp = tempfile.TemporaryDirectory()
        source = Path(self.tmp.name) / "ServerAssignorDriver.java"
        source.write_text(JAVA_DRIVER, encoding="utf-8")
        subprocess.run(["javac", "-nowarn", "-cp", classpath, "-d", self.tmp.name, str(source)], check=True)

    def time(self, shape: Shape, runs: int, forks: int = 1) -> float:
        """The median over ``forks`` JVMs of each one's best sample: one JVM's JIT may compile a
        shape's loops well or badly (its best moves by up to 3x between JVMs), as JMH's forks
        acknowledge; the median fork is Kafka's typical time, not its luckiest."""
        arg = f"{shape.assignor},{shape.subscription},{shape.kind},{shape.members},{shape.ratio},{shape.topics}"
        bests = []
        for _ in range(forks):
            out = subprocess.run(
                ["java", "-Xmx8g", "-cp", f"{self.tmp.name}:{self.classpath}", "ServerAssignorDriver", str(runs), arg],
                check=True, capture_output=True, text=True,
            ).stdout
            bests.append(float(out.strip().splitlines()[-1].rsplit(",", 1)[1]))
        return statistics.median(bests)


def dict_api(members: int, topics: int, partitions_per_topic: int, runs: int, subscription_kind: str) -> None:
    """``server_assign`` (dicts in, dicts out: what the client adapters call) and the consumer
    group coordinator's answer to the heartbeat that makes it compute a target, against the
    assignor alone on the same group held as arrays, one member joining a group whose members
    hold a first assignment: ``uniform``'s (each member a run of one topic) or ``range``'s (each
    member one partition of every topic: a run per member and topic). Beside them, the floor of
    any dict API in Python: reading every held partition number out of the input (one pass over
    the tuples) and building the output's dicts of tuples from lists.

    The coordinator is timed in the steady state (``_coordinator_join``), against the assignor
    alone on the group it builds. ``subscription_kind``: every member subscribes to every topic
    (homogeneous), or members and topics are dealt into JMH's 5 buckets (heterogeneous; the
    joiners take the last bucket's topics, as ``simulateIncrementalRebalance`` has it)."""
    from itertools import chain

    from kafka_rebalance.assignors.server import ServerMember, build_server_group, server_assign

    names = {f"topic-{i}": partitions_per_topic for i in range(topics)}
    if subscription_kind == "homogeneous":
        subscriptions = [tuple(names)] * members
    else:
        created = list(names)
        bucket, lists = bucket_subscriptions(members - 1, topics)
        subscriptions = [tuple(created[t] for t in lists[b]) for b in bucket.tolist()]
        subscriptions.append(subscriptions[-1])
    print(f"{members:,} members, {topics} topics of {partitions_per_topic:,} partitions, {subscription_kind}, "
          f"one member joining; best of {runs}, ms")
    print("| first assignment | assignor | assignor alone | server_assign | ratio | Python floor "
          "| assignor alone, coordinator's group | coordinator | ratio |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for layout in ("uniform", "range"):
        joined = [ServerMember(f"member{i}", subscriptions[i], {}) for i in range(members - 1)]
        first = server_assign(layout, names, joined)
        held = [ServerMember(m.member_id, m.subscribed_topics, first[m.member_id]) for m in joined]
        held.append(ServerMember("newMember", subscriptions[-1], {}))
        for assignor in ("uniform", "range"):
            group = build_server_group(names, held)
            answer = server_assign(assignor, names, held)
            alone, through, floor, its_alone, coordinator = [], [], [], [], []
            for _ in range(runs):
                fresh = _fresh(group)
                start = time.process_time()
                server_assign_columnar(assignor, fresh)
                alone.append(time.process_time() - start)
                start = time.process_time()
                server_assign(assignor, names, held)
                through.append(time.process_time() - start)
                # The floor: one pass over the input's numbers, and the output rebuilt from lists.
                runs_of = [list(a.items()) for a in answer.values()]
                start = time.process_time()
                for m in held:
                    sum(map(len, m.assigned.values()))
                np.fromiter(chain.from_iterable(chain.from_iterable(m.assigned.values() for m in held)), dtype=np.int64)
                {mid: dict(r) for mid, r in zip(answer, runs_of, strict=True)}
                floor.append(time.process_time() - start)
                its, answered = _coordinator_join(names, first, subscriptions, assignor)
                its_alone.append(its)
                coordinator.append(answered)
            a, t, f = min(alone) * 1000, min(through) * 1000, min(floor) * 1000
            ca, c = min(its_alone) * 1000, min(coordinator) * 1000
            print(f"| {layout} | {assignor} | {a:.1f} | {t:.1f} | {t / a:.0f}x | {f:.1f} | {ca:.1f} | {c:.1f} "
                  f"| {c / ca:.1f}x |", flush=True)


def _coordinator_join(topics: dict[str, int], targets: dict[str, dict[str, tuple[int, ...]]],
                      subscriptions: list[tuple[str, ...]], assignor: str) -> tuple[float, float]:
    """The consumer group coordinator in the steady state between rebalances, one member
    joining: the group holds ``targets`` as its last computed target, then a member joins and
    every member reads its new target (they reconcile); then another member joins, and the
    seconds the coordinator takes to answer that heartbeat are timed, beside the seconds the
    assignor alone takes on the group the coordinator builds for it (same members, same order,
    same current assignment). Returns (assignor alone, coordinator)."""
    from kafka_rebalance.assignors.server import (
        ServerMember,
        build_server_group,
        build_server_group_from_held,
    )
    from kafka_rebalance.protocol.modern.consumer.coordinator import (
        ConsumerGroupCoordinator,
        ConsumerGroupMember,
    )
    from kafka_rebalance.protocol.modern.consumer.coordinator_events import (
        ConsumerGroupHeartbeatRequest,
        RequestReceived,
    )
    from kafka_rebalance.protocol.modern.consumer.target import TargetAssignment

    subscribed = dict(zip(targets, subscriptions, strict=False))  # member i's; the joiners take the last
    subscription = subscriptions[-1]
    members = [ConsumerGroupMember(member_id, rebalance_timeout_ms=60_000, subscribed_topic_names=subscribed[member_id])
               for member_id in targets]
    group = ConsumerGroupCoordinator.loaded("bench", topics, 1, 1, members, {})
    last = build_server_group(topics, [ServerMember(m, subscribed[m], held) for m, held in targets.items()])
    group.target = TargetAssignment.computed(last, last.current_owner, list(targets))

    def join(member_id: str, now_ms: int) -> float:
        request = ConsumerGroupHeartbeatRequest("bench", member_id, 0, rebalance_timeout_ms=60_000,
                                                subscribed_topic_names=subscription, server_assignor=assignor,
                                                topic_partitions=())
        start = time.process_time()
        group.handle(RequestReceived("c", request), now_ms)
        return time.process_time() - start

    join("newMember", 1)
    # Each member reads its target as it reconciles, and holds it (as its assignment does).
    reconciled = [group.target[member_id] for member_id in group.target]
    seen = [ServerMember(m, subscribed.get(m, subscription), {}) for m in [*group.members, "lastMember"]]
    its_group = build_server_group_from_held(group.subscription_metadata, seen, group.target)
    assert its_group is not None
    fresh = _fresh(its_group)
    # As for the assignor alone (``time_python``): the setup's objects (the group, its members'
    # targets) out of the collector's sight, as a JVM's old generation is out of its young
    # collections'; collection stays on for what the answer allocates.
    gc.collect()
    gc.freeze()
    start = time.process_time()
    server_assign_columnar(assignor, fresh)
    alone = time.process_time() - start
    answered = join("lastMember", 2)
    gc.unfreeze()
    del reconciled  # freed after the answer, as members reconcile away from their targets
    return alone, answered


def shapes_for(args: argparse.Namespace) -> list[Shape]:
    return [
        Shape(assignor, subscription, kind, members, ratio, topics)
        for assignor in args.assignors
        for subscription in args.subscriptions
        for kind in args.kinds
        for members in args.members
        for ratio in args.ratios
        for topics in args.topics
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grid", action="store_true", help="every JMH shape: 100..10,000 members, ratios 5/10/50, 10/100/1000 topics")
    parser.add_argument("--members", default="10000")
    parser.add_argument("--ratios", default="5,10,50")
    parser.add_argument("--topics", default="10,100,1000")
    parser.add_argument("--assignors", default="uniform,range")
    parser.add_argument("--runs", type=int, default=15, help="samples per shape and side (best taken)")
    parser.add_argument("--kafka-classpath", help="Kafka's built classes/jars (see the module docstring)")
    parser.add_argument("--kafka-forks", type=int, default=3,
                        help="JVMs per Kafka shape; Kafka's time is the median of their best samples (default 3)")
    parser.add_argument("--subscriptions", default="homogeneous,heterogeneous")
    parser.add_argument("--kinds", default="full,incremental")
    parser.add_argument("--dict-api", action="store_true",
                        help="server_assign (dicts) and the consumer-group coordinator against the assignor alone: "
                             "--members, 50 topics of 10,000 partitions, --subscriptions")
    args = parser.parse_args()
    if args.dict_api:
        for kind in args.subscriptions.split(","):
            dict_api(int(args.members.split(",")[0]), 50, 10_000, min(args.runs, 5), kind)
        return
    if args.grid:
        args.members, args.ratios, args.topics = "100,500,1000,5000,10000", "5,10,50", "10,100,1000"
    args.members = [int(x) for x in args.members.split(",")]
    args.ratios = [int(x) for x in args.ratios.split(",")]
    args.topics = [int(x) for x in args.topics.split(",")]
    args.assignors = args.assignors.split(",")
    args.subscriptions = args.subscriptions.split(",")
    args.kinds = args.kinds.split(",")
    shapes = shapes_for(args)
    kafka = KafkaDriver(args.kafka_classpath) if args.kafka_classpath else None
    header = "| assignor | subscription | type | members | partitions | topics | ours (ms) | Kafka (ms) | speed-up |"
    print(header)
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    slowest: dict[str, float] = {}
    for shape in shapes:
        theirs = kafka.time(shape, args.runs, args.kafka_forks) if kafka else None
        ours = time_python(shape, args.runs)
        if shape.members == 10000:
            key = f"{shape.assignor}/{shape.subscription}"
            slowest[key] = max(slowest.get(key, 0.0), ours)
        java, speedup = ("-", "-") if theirs is None else (f"{theirs:.3f}", f"{theirs / ours:.1f}x")
        print(
            f"| {shape.assignor} | {shape.subscription} | {shape.kind} | {shape.members:,} | "
            f"{shape.partitions_per_topic * shape.topics:,} | {shape.topics:,} | {ours:.3f} | {java} | {speedup} |",
            flush=True,
        )
    if slowest:
        print("\nKafka's published figures at 10,000 members against our slowest 10,000-member shape:")
        for key, ms in slowest.items():
            print(f"  {key}: Kafka about {PUBLISHED_MS[key]:g} ms, ours at most {ms:.2f} ms ({PUBLISHED_MS[key] / ms:.1f}x)")


if __name__ == "__main__":
    sys.exit(main())
