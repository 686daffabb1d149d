"""The consumer group protocol of KIP-848 (``group.protocol=consumer``): the broker-side
ConsumerGroupHeartbeat coordinator, the client-side membership manager, reconciliation and the
online migration from and to classic groups (Kafka: ``coordinator/group/modern/consumer``)."""
