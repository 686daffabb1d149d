"""A rebalance as a group's story builds it (``group_story``, ``client_story``), before it
becomes a row of the ``rebalances`` table (``story``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_rebalance.model import GroupProtocol
from kafka_rebalance.pipeline.logparse.rows import Event, Row


@dataclass(slots=True)
class Rebalance:
    cluster: str
    group: str
    start_ms: int | None
    old_generation: int | None = None
    generation: int | None = None
    reason: str | None = None
    state: str | None = None
    members: int | None = None
    leader: str | None = None
    end_ms: int | None = None
    outcome: str = "open"
    protocol: GroupProtocol = GroupProtocol.CLASSIC
    partition: int | None = None
    start_known: bool = True
    assignor: str | None = None
    assignor_ms: int | None = None
    stabilized_ms: int | None = None
    failed: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    joined: list[str] = field(default_factory=list)
    evidence: list[Event] = field(default_factory=list)
    source: str = "broker"
    causes: list[Row] = field(default_factory=list)
    clip_ms: int | None = None  # where an open rebalance is drawn to (the next one, or the log's end)
    during: list[str] = field(default_factory=list)  # what happened while it was open (never its cause)
