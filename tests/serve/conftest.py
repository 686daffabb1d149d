"""Our own broker (``kafka_rebalance.serve.Broker``) on 127.0.0.1, in a background thread."""

from __future__ import annotations

import pytest

pytest.importorskip("kio")

from kafka_rebalance.serve import Broker  # noqa: E402


@pytest.fixture
def served():
    """A fresh broker per test; classic groups form without the 3 s initial delay, consumer
    groups' members heartbeat every second (Kafka's default: 5 s)."""
    with Broker(group_initial_rebalance_delay_ms=0, num_partitions=3, consumer_heartbeat_interval_ms=1000) as broker:
        yield broker
