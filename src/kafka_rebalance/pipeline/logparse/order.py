"""A group's events in time order, each line once (``story.tell`` reads them so)."""

from __future__ import annotations

import operator
from typing import Any

from kafka_rebalance.pipeline.logparse.rows import Event

_TIME_ORDER = operator.itemgetter("time_ms", "source", "seq")


def order_events(events: list[Event]) -> list[Event]:
    """Time order; lines without a time keep their place in their file (they sort at the last
    known time of that file)."""
    try:
        # The usual case, every line with a time and its place in its file: one sort. A missing
        # field or a None beside a value (a line without a time among timed ones) raises, and
        # when nothing raises this sort makes the same comparisons with the same outcomes as
        # the general one below (ties keep the input order in both).
        return sorted(events, key=_TIME_ORDER)
    except (KeyError, TypeError):
        pass
    last_known: dict[str, int] = {}
    keyed = []
    for event in sorted(events, key=lambda e: (e.get("source") or "", e.get("seq") or 0)):
        source = event.get("source") or ""
        time_ms = event.get("time_ms")
        if time_ms is None:
            time_ms = last_known.get(source, -1)
        else:
            last_known[source] = time_ms
        keyed.append(((time_ms, source, event.get("seq") or 0), event))
    keyed.sort(key=lambda pair: pair[0])
    return [event for _, event in keyed]


_IDENTITY = ("kind", "time_ms", "member", "generation", "old_generation", "state", "reason", "client_id",
             "partitions", "from_state")


def distinct_events(events: list[Event]) -> list[Event]:
    """Without repeats of the same line: a file given twice (a copy beside its rotated original,
    an excerpt pasted twice) must not double what it shows. Lines without a time are kept.

    ``events`` in time order (``order_events``): a repeat has its line's time, so it can only
    be among the lines of that same time, and a line alone at its time is no repeat."""
    out: list[Event] = []
    keep = out.append
    run_time = None
    # the first line kept at ``run_time``: most times have one line, and it needs no index
    first: Event = {}
    # kind and member (a repeat has the same ones) -> the one line kept at this time with them,
    # or the identities of all of them when there are several; built at the time's second line
    run: dict[tuple[str | None, str | None], Event | set[tuple[Any, ...]]] | None = None
    for event in events:
        time_ms = event.get("time_ms")
        if time_ms is None:
            keep(event)
            continue
        if time_ms != run_time:
            run_time = time_ms
            first = event
            run = None
            keep(event)
            continue
        if run is None:
            run = {(first.get("kind"), first.get("member")): first}
        kind_member = (event.get("kind"), event.get("member"))
        same = run.get(kind_member)
        if same is None:
            run[kind_member] = event
        else:
            if not isinstance(same, set):
                same = run[kind_member] = {tuple(map(same.get, _IDENTITY))}
            key = tuple(map(event.get, _IDENTITY))
            if key in same:
                continue
            same.add(key)
        keep(event)
    return out
