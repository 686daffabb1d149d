"""What a group's story builds as it reads (``group_story``, ``client_story``): a rebalance, the
causes it finds and the signals waiting for the next rebalance, before they become rows of the
``rebalances`` and ``causes`` tables (``story``); and a KIP-848 group's members with their epochs."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kafka_rebalance.model import GroupProtocol
from kafka_rebalance.pipeline.logparse.rows import Event


@dataclass(frozen=True, slots=True)
class CauseClaim:
    """A cause of a rebalance (``kinds.Cause``) as the story finds it: who, in what words, and
    the lines that show it (a ``causes`` row once the story is told)."""

    cause: str
    member: str | None
    detail: str | None
    events: list[Event]


@dataclass(frozen=True, slots=True)
class Signal:
    """A departure, a join or a client's line not yet tied to a rebalance: the cause of the next
    one to open within the evidence window (``group_story.GroupStory._claim_recent``).
    ``departure``: how the member went (``failed``, ``left``, ``fenced``, a ``client``'s own
    line), None for a join or a change."""

    cause: str
    member: str | None
    detail: str | None
    event: Event
    departure: str | None


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
    # members (None: a line that named none)
    failed: list[str | None] = field(default_factory=list)
    left: list[str | None] = field(default_factory=list)
    joined: list[str | None] = field(default_factory=list)
    evidence: list[Event] = field(default_factory=list)
    source: str = "broker"
    causes: list[CauseClaim] = field(default_factory=list)
    clip_ms: int | None = None  # where an open rebalance is drawn to (the next one, or the log's end)
    during: list[str] = field(default_factory=list)  # what happened while it was open (never its cause)


MemberState = tuple[int | None, str | None]  # (member epoch, state) of a KIP-848 consumer


class ConsumerMembers:
    """A consumer group's members and the epoch and state each reported last, counted by
    (epoch, state): whether every member is stable at an epoch is one lookup, not a walk over
    the members at each member's line (a group of thousands reconciling was quadratic)."""

    def __init__(self) -> None:
        self.states: dict[str | None, MemberState] = {}
        self.counts: Counter[MemberState] = Counter()

    def __len__(self) -> int:
        return len(self.states)

    def set(self, member: str | None, state: MemberState) -> None:
        self.pop(member)
        self.states[member] = state
        self.counts[state] += 1

    def setdefault(self, member: str | None, state: MemberState) -> None:
        if member not in self.states:
            self.set(member, state)

    def pop(self, member: str | None) -> MemberState | None:
        state = self.states.pop(member, None)
        if state is not None:
            self.counts[state] -= 1
        return state

    def clear(self) -> None:
        self.states.clear()
        self.counts.clear()

    def all_in(self, state: MemberState) -> bool:
        return self.counts[state] == len(self.states)
