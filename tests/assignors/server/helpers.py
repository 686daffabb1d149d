"""Small builders for server-side assignor tests."""

from __future__ import annotations

from kafka_rebalance.assignors.server import ServerMember


def m(member_id: str, topics: str, assigned: dict[str, tuple[int, ...]] | None = None, instance: str | None = None) -> ServerMember:
    """A member subscribed to the space-separated ``topics``."""
    return ServerMember(member_id, tuple(topics.split()), assigned or {}, instance_id=instance)


def moved_count(members: list[ServerMember], target: dict[str, dict[str, tuple[int, ...]]]) -> int:
    """Partitions a member held before and does not keep (Kafka's notion of stickiness)."""
    lost = 0
    for member in members:
        kept = target.get(member.member_id, {})
        for topic, parts in member.assigned.items():
            lost += len(set(parts) - set(kept.get(topic, ())))
    return lost


def kept_count(members: list[ServerMember], target: dict[str, dict[str, tuple[int, ...]]]) -> int:
    held = sum(len(p) for member in members for p in member.assigned.values())
    return held - moved_count(members, target)


def sizes(target: dict[str, dict[str, tuple[int, ...]]]) -> dict[str, int]:
    return {member: sum(map(len, topics.values())) for member, topics in target.items()}


def drop_empty(target: dict[str, dict[str, tuple[int, ...]]]) -> dict[str, dict[str, tuple[int, ...]]]:
    return {member: {t: p for t, p in topics.items() if p} for member, topics in target.items()}
