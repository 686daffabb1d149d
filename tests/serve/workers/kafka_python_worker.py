"""One kafka-python consumer in its own process, for the client tests on serve (and Tansu).

argv[1]: a JSON object: bootstrap, group, topic, client_id, assignor (a key of ASSIGNORS),
session_ms, heartbeat_ms, poll_ms, process_s (seconds of "processing" after each poll),
instance_id (group.instance.id, optional). Prints JSON lines: {"ready": true} once built, then,
after a "go" line on stdin, {"a": [partitions], "g": generation, "t": monotonic seconds} per
assignment change, {"revoked": [...], "g": ...} and {"assigned": [...], "g": ...} from the
rebalance listener (so a generation replaced within one poll is still seen),
{"r": [[partition, offset], ...]} per batch (before committing it), {"c": {partition: next
offset}} per commit; "close" on stdin closes it (LeaveGroup, unless
static), {"closed": true} when done. A SIGKILL from the test is a crash."""

from __future__ import annotations

import json
import sys
import threading
import time


def main() -> None:
    config = json.loads(sys.argv[1])
    if config.get("log_file"):  # for debugging a test: kafka-python's own log, at INFO
        import logging

        logging.basicConfig(filename=config["log_file"], level=config.get("log_level", "INFO"),
                            format="%(asctime)s %(name)s %(message)s")
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor as KPCooperative
    from kafka.coordinator.assignors.range import RangePartitionAssignor as KPRange
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor as KPRoundRobin
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor as KPSticky

    from kafka_rebalance.clients import kafka_python as ours

    assignors = {
        "range": KPRange,
        "roundrobin": KPRoundRobin,
        "sticky": KPSticky,
        "cooperative-sticky": KPCooperative,
        "ours-range": ours.RangePartitionAssignor,
        "ours-roundrobin": ours.RoundRobinPartitionAssignor,
        "ours-sticky": ours.StickyPartitionAssignor,
        "ours-cooperative-sticky": ours.CooperativeStickyPartitionAssignor,
    }
    assignor = assignors[config["assignor"]]
    consumer = KafkaConsumer(
        bootstrap_servers=config["bootstrap"],
        group_id=config["group"],
        client_id=config["client_id"],
        group_instance_id=config.get("instance_id"),
        partition_assignment_strategy=[assignor() if config["assignor"].startswith("ours-") else assignor],
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=config.get("session_ms", 6000),
        heartbeat_interval_ms=config.get("heartbeat_ms", 500),
        metadata_max_age_ms=1000,
        max_poll_interval_ms=30000,
    )
    lock = threading.Lock()

    def emit(obj: object) -> None:
        with lock:
            sys.stdout.write(json.dumps(obj) + "\n")
            sys.stdout.flush()

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            emit({"revoked": sorted(tp.partition for tp in revoked), "g": generation_id()})

        def on_partitions_assigned(self, assigned):
            # Called inside poll at the end of each join, so a generation that a second join
            # replaces within the same poll is still reported.
            emit({"assigned": sorted(tp.partition for tp in assigned), "g": generation_id()})

    def generation_id() -> int | None:
        return consumer._coordinator._generation.generation_id if consumer._coordinator._generation else None

    consumer.subscribe([config["topic"]], listener=Listener())

    emit({"ready": True})
    sys.stdin.readline()
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    last = None
    poll_ms, process_s = config.get("poll_ms", 200), config.get("process_s", 0)
    while not stop.is_set():
        batches = consumer.poll(timeout_ms=poll_ms)
        records = [[r.partition, r.offset] for rs in batches.values() for r in rs]
        if records:
            # Told before the commit: a consumer killed between its commit and this line would
            # leave records committed (so never read again) that no line says it read.
            emit({"r": records})
            offsets = {tp.partition: rs[-1].offset + 1 for tp, rs in batches.items()}
            try:
                consumer.commit()
                emit({"c": offsets})
            except Exception as error:  # a rebalance took them away first: not committed
                emit({"commit_failed": type(error).__name__})
        generation = generation_id()
        now = sorted(tp.partition for tp in consumer.assignment())
        if (now, generation) != last:
            last = (now, generation)
            emit({"a": now, "g": generation, "t": round(time.monotonic(), 3)})
        if process_s:
            time.sleep(process_s)
    consumer.close()
    emit({"closed": True})


if __name__ == "__main__":
    main()
