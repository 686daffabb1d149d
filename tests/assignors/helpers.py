"""Builders for small groups in tests."""

from __future__ import annotations

from typing import Any

from kafka_rebalance import assign


def member(member_id: str, topics: list[str], owned: list[str] | None = None, generation: int | None = None, **extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"member_id": member_id, "topics": topics}
    if owned is not None:
        m["owned"] = owned
    if generation is not None:
        m["generation"] = generation
    m.update(extra)
    return m


def run(strategy: str, topics: dict[str, int], members: list[dict[str, Any]]) -> dict[str, list[str]]:
    return assign({"topics": topics, "members": members}, strategy)["assignment"]


def kafka_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"
