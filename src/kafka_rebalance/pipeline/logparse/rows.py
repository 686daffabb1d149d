"""The records of the logs pipeline, typed: the events a line parses to, and the rows of every
story table, of the unrecognised shapes and of the coverage. They are ``TypedDict``s: Arrow
reads and writes them as they are (``schemas.story_table_batch``, ``RecordBatch.from_pylist``)
and the story makes hundreds of thousands of them, so they stay plain dicts at run time while
mypy checks every field the parse, the stories and the tables read or write.

The columns of each table and their types are declared once more as data, for Arrow and pandas
(``parse.EVENT_COLUMNS``, ``schemas.TABLES``); tests check that the two agree."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class Event(TypedDict, total=False):
    """One log line as ``parse`` reads it: the ``EVENT_COLUMNS`` it filled (a field it did not
    is missing, so the stories read optional ones with ``get``), or an unrecognised line (``kind``
    None, with its ``shape``). Read back from Arrow in a Spark story task, ``kind``, ``side`` and
    ``library`` are plain strings (their enums are ``StrEnum``s: they compare equal)."""

    source: str | None
    seq: int | None
    cluster: str
    time_ms: int | None
    kind: str | None  # kinds.EventKind, or None for an unrecognised line
    side: str | None  # kinds.Side
    library: str | None  # kinds.Library
    group: str | None
    member: str | None
    generation: int | None
    old_generation: int | None
    state: str | None
    from_state: str | None
    reason: str | None
    members: int | None
    static_members: int | None
    instance_id: str | None
    old_member: str | None
    membership: str | None
    partitions: str | None
    count: int | None
    protocol: str | None
    assignor: str | None
    took_ms: int | None
    partition: int | None
    broker: int | None
    client_id: str | None
    pending: bool | None
    rejoin: bool | None
    line: str | None
    # only where a caller has them (the local engine; not a column of ``events``)
    line_no: int
    members_text: str
    topics: str
    # an unrecognised line's wording (``parse.shape``)
    shape: str


class RebalanceRow(TypedDict):
    """A row of ``rebalances`` (times as epoch ms; ``clip_ms`` is written as ``drawn_until``)."""

    cluster: str
    group: str
    generation: int | None
    start_ms: int | None
    end_ms: int | None
    duration_ms: int | None
    reason: str | None
    members: int | None
    old_generation: int | None
    leader: str | None
    outcome: str
    failed_members: list[str | None]
    left_members: list[str | None]
    joined_members: list[str | None]
    partition: int | None
    protocol: str
    source: str
    start_known: bool
    assignor: str | None
    assignor_ms: int | None
    cause: str
    cause_member: str | None
    clip_ms: int | None
    during: list[str]


class MemberEventRow(TypedDict):
    """A row of ``member_events``: ``source`` says how it was learnt (its own ``line``, or the
    ``reason`` of a rebalance naming the member), ``input`` is the file."""

    cluster: str
    group: str
    member: str | None
    time_ms: int | None
    kind: str
    client: str | None
    reason: str | None
    source: str
    input: str | None
    side: str | None
    generation: int | None
    line: str | None
    cause: NotRequired[str]
    during_rebalance: NotRequired[bool]  # not a column: read by the findings


class EmptyPeriodRow(TypedDict):
    cluster: str
    group: str
    generation: int | None
    start_ms: int | None
    end_ms: int | None
    duration_ms: NotRequired[int | None]  # once the story is finished


class ClientRebalanceRow(TypedDict):
    """A row of ``client_rebalances``: one client's part in one rebalance."""

    cluster: str
    group: str
    source: str | None
    client_library: str | None
    client: str | None
    member: str | None
    generation: int | None
    protocol: str | None
    assigned: list[str]
    revoked: list[str]
    lost: list[str]
    start_ms: int | None
    end_ms: int | None
    outcome: str
    reason: str | None
    duration_ms: NotRequired[int | None]  # once the client's lines are read


class CauseRow(TypedDict):
    """A row of ``causes``: one cause of one rebalance, with the lines that show it."""

    cluster: str
    group: str
    generation: int | None
    start_ms: int | None
    cause: str
    member: str | None
    detail: str | None
    evidence: list[str]
    evidence_sources: list[str]


class StormRow(TypedDict):
    cluster: str
    group: str
    start_ms: int
    end_ms: int
    rebalances: int
    duration_ms: int
    failures: int
    leaves: int
    top_client: str | None
    top_client_failures: int
    kind: str
    restarts: int


class UnrecognisedRow(TypedDict):
    """A row of ``unrecognised``: lines about groups that no message matched, by wording."""

    cluster: str
    source: str
    shape: str
    count: int
    sample: str


class CoverageRow(TypedDict):
    """What was read of one input (``summary.json``'s ``coverage``)."""

    source: str
    cluster: str
    lines: int
    broker_lines: int
    client_lines: int
    unrecognised_lines: int
    first_ms: int | None
    last_ms: int | None
