"""Strategy selection by vote, as the group coordinator does it (GroupMetadata.selectProtocol)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from kafka_rebalance.model import InvalidInput


def select_strategy(member_strategies: Sequence[Sequence[str]]) -> str:
    """Pick the group's strategy from each member's preference list (members in join order).

    Candidates are the strategies every member supports; each member votes for the first
    candidate in its own list; the most votes wins. Kafka breaks ties by hash-map order, which
    is not defined; we break them by the first member's preference (the member that joined
    first, normally the leader), which is deterministic and respects a real preference.
    """
    if not member_strategies:
        raise InvalidInput("strategies", "no members to vote")
    candidates = set(member_strategies[0])
    for strategies in member_strategies[1:]:
        candidates &= set(strategies)
    if not candidates:
        raise InvalidInput("strategies", "no strategy is supported by every member")
    votes = Counter(next(s for s in strategies if s in candidates) for strategies in member_strategies)
    most = max(votes.values())
    return next(s for s in member_strategies[0] if votes.get(s) == most)
