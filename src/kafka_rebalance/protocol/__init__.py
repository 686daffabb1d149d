"""Kafka's group protocols as sans-I/O state machines: the classic protocol (``classic/``: the
broker's GroupCoordinator and the consumer's ConsumerCoordinator) and KIP-848's consumer groups
(``modern/``: the coordinator, the new consumer's membership manager, and the shard that holds a
coordinator's groups of both kinds)."""
