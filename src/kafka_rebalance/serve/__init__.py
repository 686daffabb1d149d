"""``kafka-rebalance serve``: a Kafka broker around our group coordinator.

Real Kafka clients connect, create topics, produce, fetch and join groups whose coordinator is
``protocol/modern/shard.py``'s ``GroupCoordinatorShard`` (classic groups and KIP-848 consumer
groups), so every client library exercises our protocol machines. The wire codecs are kio's
(Kafka's message schemas); records are kept in memory as the batches clients send.

Layer: above ``protocol``, beside ``sim``: imports model, assignors and protocol; only ``cli``
imports it.
"""

from kafka_rebalance.serve.server import Broker

__all__ = ["Broker"]
