"""KIP-848 ("modern") group protocols, beside the classic one (Kafka: ``coordinator/group/modern``)."""
