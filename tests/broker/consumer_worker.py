"""One real kafka-python consumer in its own process, for the broker tests: prints one JSON
line per assignment change ({"a": [...], "g": generation}) and per batch of records
({"r": [[partition, offset], ...]}) before committing them; "close" on stdin closes it cleanly
(LeaveGroup); a SIGKILL from the test is a crash. It reports {"ready": true} once built and
waits for a "go" line before it joins."""

from __future__ import annotations

import json
import sys
import threading


def main() -> None:
    bootstrap, group, topic, client_id, kind = sys.argv[1:6]
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor as KPCooperative
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor as KPSticky

    from kafka_rebalance.clients import kafka_python as ours

    assignor = {
        "cooperative": ours.CooperativeStickyPartitionAssignor,
        "sticky": ours.StickyPartitionAssignor,
        "kafka-python-sticky": KPSticky,
        "kafka-python-cooperative": KPCooperative,
        "load-aware": ours.LoadAwarePartitionAssignor,
    }[kind]()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=client_id,
        partition_assignment_strategy=[assignor],
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        metadata_max_age_ms=1000,
        max_poll_interval_ms=30000,
    )
    if kind == "load-aware":
        assignor.bind(consumer)  # the default load source measures through this consumer

    def emit(obj) -> None:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    # Ready, then wait for "go": consumers started together join within milliseconds of each
    # other, as the simulator's scenario has them (the first poll sends the JoinGroup).
    emit({"ready": True})
    sys.stdin.readline()
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    last = None
    led = None

    while not stop.is_set():
        batches = consumer.poll(timeout_ms=200)
        records = [[r.partition, r.offset] for rs in batches.values() for r in rs]
        if records:
            # Told before the commit: killed between the two, it would leave records committed
            # (never read again) that no line says it read.
            emit({"r": records})
            consumer.commit()
        result = getattr(assignor, "latest_result", None)
        if result is not None and result is not led:  # this consumer ran the assignment
            led = result
            emit({"led": True})
        now = (sorted(tp.partition for tp in consumer.assignment()), getattr(assignor, "generation", None))
        if now != last:
            last = now
            emit({"a": now[0], "g": now[1]})
    consumer.close()
    emit({"closed": True})


if __name__ == "__main__":
    main()
