"""The member events of every group at once: from member lines, and from the members the opening lines' reasons name (``GroupStory._member_event``, ``_members_from_reason``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kafka_rebalance.pipeline.logparse.columns.arrays import (
    NO_TIME,
    as_array,
    changes,
    concat,
    falsy,
    map_numbers,
    map_strings,
    overwrite,
    rank_within,
    segmented_minimum,
)
from kafka_rebalance.pipeline.logparse.columns.rebalances import ClassicRebalances


@dataclass
class ReasonMembers:
    """The members named by reasons, a row each, in ``causes.members_in_reason``'s order (each
    reason's, pattern by pattern, match by match): which reason (its index), and as Arrow
    string arrays the member, its member event kind, the cause and the client's reason; and
    whether it is static."""

    reason: np.ndarray
    member: Any
    kind: Any
    cause: Any
    detail: Any
    static: np.ndarray



def reason_members(reasons: Any) -> ReasonMembers:
    """``causes.members_in_reason`` over an Arrow array of reasons at once. One RE2 pass counts
    the patterns' texts in each reason (every match holds its pattern's text): a reason holding
    one, of a pattern naming one member, has at most one match, extracted by RE2 with the
    other reasons of that pattern; the rare reason holding several, or naming a list, is read
    by ``members_in_reason`` itself."""
    import re

    import pyarrow as pa
    import pyarrow.compute as pc

    from kafka_rebalance.pipeline.logparse.causes import REASON_MEMBER_PATTERNS, members_in_reason

    reasons = as_array(reasons)
    texts = [text for _, _, _, text in REASON_MEMBER_PATTERNS]
    any_text = "|".join(re.escape(text) for text in texts)
    hits = pc.fill_null(pc.count_substring_regex(reasons, any_text), 0).to_numpy(zero_copy_only=False)
    single = np.flatnonzero(hits == 1)
    first_text = pc.extract_regex(reasons.take(pa.array(single)), f"(?P<text>{any_text})").field("text")
    pattern_of = pc.index_in(first_text, pa.array(texts)).to_numpy(zero_copy_only=False)
    listing = np.array(["members" in pattern.groupindex for pattern, *_ in REASON_MEMBER_PATTERNS])
    by_python = np.concatenate([np.flatnonzero(hits > 1), single[listing[pattern_of]]])
    parts: list[tuple[np.ndarray, np.ndarray, Any, Any, Any, Any]] = []
    for number in np.unique(pattern_of[~listing[pattern_of]]).tolist():
        pattern, kind, cause, _ = REASON_MEMBER_PATTERNS[number]
        holds = single[pattern_of == number]
        found = pc.extract_regex(reasons.take(pa.array(holds)), _one_pass(pattern.pattern))
        matched = found.is_valid().to_numpy(zero_copy_only=False)
        found = found.filter(pa.array(matched))
        size = len(found)
        instance = found.field("instance") if "instance" in pattern.groupindex else pa.nulls(size, pa.string())
        static = ~falsy(instance) & ~pc.fill_null(pc.is_in(instance, pa.array(["None", "null"])), False).to_numpy(
            zero_copy_only=False)
        parts.append((holds[matched], static, found.field("member"), pa.array([kind] * size, pa.string()),
                      pa.array(np.where(static & (cause == "joined"), "static_joined", cause).tolist(), pa.string()),
                      None))
    if len(by_python):
        rows = [(index, *named) for index in np.sort(by_python).tolist()
                for named in members_in_reason(reasons[index].as_py())]
        parts.append((np.array([row[0] for row in rows], np.int64), np.array([row[5] for row in rows], bool),
                      pa.array([row[1] for row in rows], pa.string()), pa.array([row[2] for row in rows], pa.string()),
                      pa.array([row[3] for row in rows], pa.string()), pa.array([row[4] for row in rows], pa.string())))
    if not parts:
        empty = pa.array([], pa.string())
        return ReasonMembers(np.zeros(0, np.int64), empty, empty, empty, empty, np.zeros(0, bool))
    index = np.concatenate([part[0] for part in parts])
    order = np.argsort(index, kind="stable")  # each reason's members are one part's, in its order
    index = index[order]
    take = pa.array(order)
    member, kind, cause = (concat([part[field] for part in parts]).take(take) for field in (2, 3, 4))
    detail = _client_reasons(reasons.take(pa.array(index)))
    # a client's reason given: Python's answer already holds it; a left member's cause is a poll timeout
    cause = pc.if_else(pc.and_(pc.equal(kind, "left"),
                               pc.fill_null(pc.match_substring(pc.utf8_lower(detail), "poll timeout"), False)),
                       "poll_timeout", cause)
    return ReasonMembers(index, member, kind, cause, detail, np.concatenate([part[1] for part in parts])[order])



def _one_pass(pattern: str) -> str:
    """A reason pattern for RE2's extraction: its lazy runs of ``[^\\s;]`` made greedy. Each
    such run is followed by a space, a ";" or the end (never by a character it holds), so it
    ends where the greedy one does, and RE2 extracts greedy runs in one pass."""
    return pattern.replace("[^\\s;]+?", "[^\\s;]+")



def _client_reasons(reasons: Any) -> Any:
    """``causes.client_reason_of`` of each reason (null where none is quoted)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    found = pc.extract_regex(reasons, r"client reason: (?P<reason>.*)$")
    return pc.if_else(found.is_valid(), found.field("reason"), pa.scalar(None, pa.string()))



def _listed_members(text: str | None) -> list[str]:
    import re

    return re.findall(r"[^\s,]+", text or "")



# The lines that tell one member event, by event kind: (member event kind, the field its
# reason is), as ``group_story.GroupStory``'s handlers write them; the causes are worked out in
# ``_line_causes``. "members_not_rejoined" lines tell one per member (``_not_rejoined_items``).
_MEMBER_LINES: dict[str, tuple[str, str | None]] = {
    "member_failed": ("failed", "reason"),
    "member_left": ("left", "reason"),
    "member_fenced": ("fenced", "reason"),
    "member_joined": ("joined", "membership"),
    "group_dead": ("group_dead", None),
    "group_loaded": ("coordinator_loaded", None),
    "group_unloaded": ("coordinator_unloaded", None),
    "group_write_failed": ("coordinator_write_failed", "reason"),
    "group_converted": ("converted", None),
    "conversion_refused": ("conversion_refused", "reason"),
    "client_poll_timeout": ("poll_timeout", None),
    "client_leave": ("leave_request", "reason"),
    "client_heartbeat_failed": ("heartbeat_failed", "reason"),
    "client_commit_failed": ("commit_failed", "reason"),
}



# The member event kinds whose client is their member's, those that are a departure, and the
# happening each kind is one of (``group_story``; ``causes.SAME_HAPPENING``, as numbers).
_CLIENT_FROM_MEMBER = ("failed", "left", "joined", "rejoined", "fenced")



DEPARTURES = ("failed", "left", "fenced")



_HAPPENINGS = {"joined": 1, "rejoined": 1, "left": 2, "failed": 3, "fenced": 3}



# A member event's columns (``schemas.TABLES["member_events"]``, less the cluster and group).
MEMBER_EVENT_FIELDS = ("member", "time_ms", "kind", "client", "reason", "source", "input", "side", "generation",
                       "cause")



_CREATED, _MERGED, _SKIPPED = range(3)






@dataclass
class MemberEvents:
    """The member events of the ``covered`` groups, in each group's order (as
    ``GroupStory.member_events``): their group (its number in story order), each of
    ``MEMBER_EVENT_FIELDS`` as an Arrow array, and where each was told (``position``: the
    place in ``story_rows``' answer of its line, or of the opening line whose reason named the
    member; ``line_position``: of the member's own line, -1 for none)."""

    group: np.ndarray
    columns: dict[str, Any]
    position: np.ndarray
    line_position: np.ndarray
    covered: np.ndarray
    # each event's kind when it was told, and whether a reason told it
    told_kind: Any
    from_reason: np.ndarray
    # every member line, as read (merged into a reason's event or not), in story order: its
    # place, group, table row, member, kind, the cause it gives, its reason and time
    lines: dict[str, Any]



def member_events(table: Any, rows: np.ndarray, rebalances: ClassicRebalances) -> MemberEvents:
    """The member events ``GroupStory`` tells from member lines and from the reasons of the
    rebalances it opens (``_member_event``, ``_members_from_reason``), for the groups
    ``classic_rebalances`` covers less those with a static join that names no member (its
    member is learnt from a later reason; not told here yet).

    A reason's member is an event unless an event of that member and happening was told near
    in time before (``_happened_near``); a member's own line just after the reason that named
    it is that event, not another (``from_reason``). Those rules chain only within one
    (group, member, happening): runs of one or two items are decided over arrays, longer runs
    (rare) item by item in Python (``_resolve_run``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafka_rebalance.pipeline.logparse.causes import EVIDENCE_WINDOW_MS

    count = len(rows)
    position_of = np.full(table.num_rows, -1, np.int64)
    position_of[rows] = np.arange(count)
    group_all = np.cumsum(changes(table.select(["cluster", "group"]).take(pa.array(rows)), ("cluster", "group"))) - 1
    kinds = table.column("kind").take(pa.array(rows))
    covered = rebalances.covered.copy()
    # a static join naming no member: its group is not told here yet
    member_none = table.column("member").take(pa.array(rows)).is_null().to_numpy(zero_copy_only=False)
    client_none = table.column("client_id").take(pa.array(rows)).is_null().to_numpy(zero_copy_only=False)
    static = pc.fill_null(pc.equal(table.column("membership").take(pa.array(rows)), "Static"), False)
    unnamed = (pc.fill_null(pc.equal(kinds, "member_joined"), False).to_numpy(zero_copy_only=False)
               & (member_none | falsy(table.column("member").take(pa.array(rows)))) & client_none
               & static.to_numpy(zero_copy_only=False))
    covered[group_all[unnamed]] = False

    parts = [_line_items(table, rows, position_of, group_all, covered, kinds),
             _not_rejoined_items(table, rows, group_all, covered, kinds),
             _reason_items(table, rebalances, position_of, group_all, covered)]
    items = {name: concat([part[name] for part in parts]) for name in parts[0]}
    order = np.lexsort((items["sub"], items["position"]))
    items = {name: (values[order] if isinstance(values, np.ndarray) else values.take(pa.array(order)))
             for name, values in items.items()}
    size = len(order)
    time_ms = items["time_ms"].to_numpy(zero_copy_only=False).astype(np.float64)
    kind = items["kind"]
    happening = map_numbers(kind, _HAPPENINGS)
    has_member = ~falsy(items["member"])
    keyed = (happening > 0) & has_member
    member_code = pc.fill_null(pc.dictionary_encode(items["member"]).indices, -1).to_numpy()
    # the runs of one (group, member, happening), in story order within each
    key_order = np.lexsort((np.arange(size), happening, member_code, items["group"]))
    key_order = key_order[keyed[key_order]]
    k_group, k_member, k_happening = items["group"][key_order], member_code[key_order], happening[key_order]
    new_run = np.ones(len(key_order), bool)
    new_run[1:] = (k_group[1:] != k_group[:-1]) | (k_member[1:] != k_member[:-1]) | (k_happening[1:] != k_happening[:-1])
    run_id = np.cumsum(new_run) - 1
    run_size = np.bincount(run_id) if len(run_id) else np.zeros(0, np.int64)
    status = np.full(size, _CREATED)
    merged_into = np.full(size, -1)
    is_reason = items["from_reason"]
    # runs of two, both timed: the second merges into a reason row near it, or a reason is
    # skipped when the first was near it
    size_of = run_size[run_id]
    timed = ~np.isnan(time_ms)
    second = np.flatnonzero(~new_run & (size_of == 2))
    first_item, second_item = key_order[second - 1], key_order[second]
    pair_timed = timed[first_item] & timed[second_item]
    close = np.abs(time_ms[first_item] - time_ms[second_item]) <= EVIDENCE_WINDOW_MS
    merges = pair_timed & close & ~is_reason[second_item] & is_reason[first_item]
    skips = pair_timed & close & is_reason[second_item]
    status[second_item[merges]] = _MERGED
    merged_into[second_item[merges]] = first_item[merges]
    status[second_item[skips]] = _SKIPPED
    # the rest, in Python: longer runs, and runs with a line without a time
    slow_runs = np.flatnonzero((run_size > 2) | (np.bincount(run_id, weights=~timed[key_order]) > 0)
                               if len(run_id) else np.zeros(0, np.int64))
    run_starts = np.flatnonzero(new_run)
    for run in slow_runs.tolist():
        members = key_order[run_starts[run]:run_starts[run] + run_size[run]]
        status[members] = _CREATED
        merged_into[members] = -1
        _resolve_run(members, is_reason, time_ms, status, merged_into, EVIDENCE_WINDOW_MS)

    created = status == _CREATED
    client = _clients(items)
    cause = _join_causes(items, client, created, status, merged_into, time_ms)
    # a line merged into the reason's row: the row is the line's now (``_member_event``)
    merged = np.flatnonzero(status == _MERGED)
    target = merged_into[merged]
    line_position = np.where(is_reason, -1, items["position"])
    line_position[target] = items["position"][merged]
    columns: dict[str, Any] = {"member": items["member"], "time_ms": items["time_ms"], "kind": kind,
                               "client": client, "reason": items["reason"], "input": items["input"],
                               "side": items["side"], "generation": items["generation"], "cause": cause}
    for name in ("kind", "input", "side", "generation", "cause"):
        columns[name] = overwrite(columns[name], target, columns[name].take(pa.array(merged)))
    line_reason = items["reason"].take(pa.array(merged))
    has_reason = ~falsy(line_reason)
    columns["reason"] = overwrite(columns["reason"], target[has_reason],
                                   line_reason.filter(pa.array(has_reason)))
    source = np.where(is_reason, "reason", "line").astype(object)
    source[target] = "line"
    columns["source"] = pa.array(source, pa.string())
    keep = np.flatnonzero(created)
    read = np.flatnonzero(~is_reason)
    row_of = np.where(status == _MERGED, merged_into, np.arange(size))
    told_as = np.cumsum(created) - 1  # each created item's place among the events
    lines = {"row_reason": columns["reason"].take(pa.array(row_of[read])), "row": told_as[row_of[read]],"position": items["position"][read], "sub": items["sub"][read], "group": items["group"][read],
             "table_row": items["table_row"][read], "member": items["member"].take(pa.array(read)),
             "kind": kind.take(pa.array(read)), "cause": cause.take(pa.array(read)),
             "reason": items["reason"].take(pa.array(read)), "time_ms": time_ms[read],
             "line_kind": table.column("kind").take(pa.array(items["table_row"][read]))}
    return MemberEvents(items["group"][keep], {name: columns[name].take(pa.array(keep)) for name in MEMBER_EVENT_FIELDS},
                        items["position"][keep], line_position[keep], covered, kind.take(pa.array(keep)),
                        is_reason[keep], lines)



def _resolve_run(members: np.ndarray, is_reason: np.ndarray, time_ms: np.ndarray, status: np.ndarray,
                 merged_into: np.ndarray, window: int) -> None:
    """One (group, member, happening)'s items in story order, as ``GroupStory`` meets them: a
    reason's member is skipped when an event of the run told before is near its time (any
    untimed one is), a line merges into the latest reason's row not yet merged when near."""
    told_times: list[float] = []
    untimed = 0
    pending = -1
    for item in members.tolist():
        at = time_ms[item]
        if is_reason[item]:
            if untimed or (np.isnan(at) and told_times) or \
                    (not np.isnan(at) and any(abs(t - at) <= window for t in told_times)):
                status[item] = _SKIPPED
                continue
            pending = item
        elif pending >= 0 and (np.isnan(time_ms[pending]) or np.isnan(at) or abs(time_ms[pending] - at) <= window):
            status[item] = _MERGED
            merged_into[item] = pending
            pending = -1
            continue
        if np.isnan(at):
            untimed += 1
        else:
            told_times.append(at)



def _line_items(table: Any, rows: np.ndarray, position_of: np.ndarray, group_all: np.ndarray, covered: np.ndarray,
                kinds: Any) -> dict[str, Any]:
    """The member event each member line tells (one per line)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    told = pc.is_valid(pc.index_in(kinds, pa.array(list(_MEMBER_LINES)))).to_numpy(zero_copy_only=False)
    told &= covered[group_all]
    at = rows[told]
    lines = table.select(["kind", "member", "client_id", "reason", "membership", "protocol", "library", "time_ms",
                          "source", "side", "generation"]).take(pa.array(at))
    line_kind = lines.column("kind").combine_chunks()
    kind = map_strings(line_kind, {name: spec[0] for name, spec in _MEMBER_LINES.items()})
    reason = pa.nulls(len(at), pa.string())
    for field in ("reason", "membership"):
        uses = pc.is_in(line_kind, pa.array([name for name, spec in _MEMBER_LINES.items() if spec[1] == field]))
        reason = pc.if_else(uses, lines.column(field).combine_chunks(), reason)
    reason = pc.if_else(pc.equal(line_kind, "client_poll_timeout"), "consumer poll timeout has expired", reason)
    protocol = pc.fill_null(lines.column("protocol").combine_chunks(), "None")
    reason = pc.if_else(pc.equal(line_kind, "group_converted"), pc.binary_join_element_wise("to ", protocol, ""),
                        reason)
    text = pc.utf8_lower(pc.fill_null(lines.column("reason").combine_chunks(), ""))
    cause = pa.nulls(len(at), pa.string())
    cause = pc.if_else(pc.equal(kind, "failed"), "session_timeout", cause)
    cause = pc.if_else(pc.equal(kind, "left"),
                       pc.if_else(pc.match_substring(text, "poll timeout"), "poll_timeout", "left"), cause)
    raw = pc.fill_null(lines.column("reason").combine_chunks(), "")
    cause = pc.if_else(pc.equal(kind, "fenced"), pc.if_else(pc.match_substring(raw, "failed to transition"),
                                                            "rebalance_timeout", "session_timeout"), cause)
    # a KIP-848 static member leaving "temporarily" (its line says so): only those lines read
    maybe = np.flatnonzero(pc.fill_null(pc.and_(pc.and_(pc.equal(line_kind, "member_left"),
                                                        pc.equal(lines.column("library"), "broker-kip848")),
                                                pc.equal(lines.column("membership"), "Static")), False).to_numpy(
        zero_copy_only=False))
    said = pc.fill_null(pc.match_substring(table.column("line").take(pa.array(at[maybe])), "temporarily"), False)
    temporarily = pa.array(np.isin(np.arange(len(at)), maybe[said.to_numpy(zero_copy_only=False)]))
    kind = pc.if_else(temporarily, "left_temporarily", kind)
    reason = pc.if_else(temporarily, pa.scalar(None, pa.string()), reason)
    cause = pc.if_else(temporarily, pa.scalar(None, pa.string()), cause)
    member = lines.column("member").combine_chunks()
    client_id = lines.column("client_id").combine_chunks()
    return {"group": group_all[told], "position": position_of[at], "sub": np.zeros(len(at), np.int64), "table_row": at,
            "member": pc.if_else(pa.array(~falsy(member)), member, client_id), "time_ms": lines.column("time_ms"),
            "kind": kind, "reason": reason, "cause": cause, "input": lines.column("source"),
            "side": lines.column("side"), "generation": lines.column("generation"), "client_id": client_id,
            "membership": lines.column("membership"), "from_reason": np.zeros(len(at), bool)}



def _not_rejoined_items(table: Any, rows: np.ndarray, group_all: np.ndarray, covered: np.ndarray,
                        kinds: Any) -> dict[str, Any]:
    """The members a "removed dynamic members who haven't joined" line names: one event each
    (``GroupStory._on_members_not_rejoined``), in Python: such lines are few."""
    import re

    import pyarrow as pa
    import pyarrow.compute as pc

    places = np.flatnonzero(pc.fill_null(pc.equal(kinds, "members_not_rejoined"), False).to_numpy(
        zero_copy_only=False) & covered[group_all])
    found: dict[str, list[Any]] = {name: [] for name in ("group", "position", "sub", "member", "time_ms", "input",
                                                         "side", "generation", "table_row")}
    for place in places.tolist():
        line = table.slice(int(rows[place]), 1).to_pylist()[0]
        for sub, member in enumerate(re.findall(r"[\w.\-]+", (line.get("line") or "").split(":")[-1])):
            for name, value in (("group", group_all[place]), ("position", place), ("sub", sub), ("member", member),
                                ("time_ms", line.get("time_ms")), ("input", line.get("source")),
                                ("side", line.get("side")), ("generation", line.get("generation")),
                                ("table_row", int(rows[place]))):
                found[name].append(value)
    size = len(found["member"])
    return {"group": np.array(found["group"], np.int64), "position": np.array(found["position"], np.int64),
            "table_row": np.array(found["table_row"], np.int64),
            "sub": np.array(found["sub"], np.int64), "member": pa.array(found["member"], pa.string()),
            "time_ms": pa.array(found["time_ms"], pa.int64()), "kind": pa.array(["failed"] * size, pa.string()),
            "reason": pa.array(["did not rejoin in time"] * size, pa.string()),
            "cause": pa.array(["rebalance_timeout"] * size, pa.string()), "input": pa.array(found["input"], pa.string()),
            "side": pa.array(found["side"], pa.string()), "generation": pa.array(found["generation"], pa.int64()),
            "client_id": pa.nulls(size, pa.string()), "membership": pa.nulls(size, pa.string()),
            "from_reason": np.zeros(size, bool)}



def _reason_items(table: Any, rebalances: ClassicRebalances, position_of: np.ndarray, group_all: np.ndarray,
                  covered: np.ndarray) -> dict[str, Any]:
    """The members each opening line's reason names (``GroupStory._members_from_reason``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    reason_row = rebalances.values["reason_row"]
    opened = np.flatnonzero(~np.isnan(reason_row))
    at = reason_row[opened].astype(np.int64)
    at = at[covered[group_all[position_of[at]]]]
    opening = table.select(["reason", "time_ms", "source", "side"]).take(pa.array(at))
    named = reason_members(opening.column("reason"))
    line = named.reason
    static = pc.if_else(pa.array(named.static), "Static", pa.scalar(None, pa.string()))
    size = len(line)
    place = position_of[at][line]
    return {"group": group_all[place], "position": place, "sub": rank_within(place), "table_row": at[line],
            "member": named.member,
            "time_ms": opening.column("time_ms").take(pa.array(line)), "kind": named.kind,
            "reason": pc.if_else(pa.array(falsy(named.detail)), static, named.detail), "cause": named.cause,
            "input": opening.column("source").take(pa.array(line)), "side": opening.column("side").take(pa.array(line)),
            "generation": pa.nulls(size, pa.int64()), "client_id": pa.nulls(size, pa.string()),
            "membership": pa.nulls(size, pa.string()), "from_reason": np.ones(size, bool)}



def _clients(items: dict[str, Any]) -> Any:
    """Each event's client (``GroupStory._member_event``): its member's for a member's own
    event, else the line's client id when it has one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafka_rebalance.pipeline.logparse.catalogue import MEMBER_UUID_SUFFIX

    of_member = pc.replace_substring_regex(items["member"], MEMBER_UUID_SUFFIX.pattern, "")
    own = pc.is_in(items["kind"], pa.array(_CLIENT_FROM_MEMBER))
    client_id = items["client_id"]
    return pc.if_else(own, of_member, pc.if_else(pa.array(~falsy(client_id)), client_id, of_member))



def _join_causes(items: dict[str, Any], client: Any, created: np.ndarray, status: np.ndarray,
                 merged_into: np.ndarray, time_ms: np.ndarray) -> Any:
    """A joined line's cause: a static or dynamic join, or a restart when its client departed
    at or before it (``GroupStory._rejoins``: a departure event told earlier in the story; a
    line merged into a reason's row is judged at that row's time)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = items["kind"]
    is_join_line = pc.fill_null(pc.equal(kind, "joined"), False).to_numpy(zero_copy_only=False) & ~items["from_reason"]
    joins = np.flatnonzero(is_join_line & (status != _SKIPPED))
    departs = np.flatnonzero(created & pc.is_in(kind, pa.array(DEPARTURES)).to_numpy(zero_copy_only=False)
                             & ~falsy(client))
    cause = items["cause"]
    if not len(joins):
        return cause
    static = pc.fill_null(pc.equal(items["membership"].take(pa.array(joins)), "Static"), False).to_numpy(
        zero_copy_only=False)
    judged_at = np.where(status[joins] == _MERGED, merged_into[joins], joins)
    join_time = time_ms[judged_at]
    client_code = pc.fill_null(pc.dictionary_encode(as_array(client)).indices, -1).to_numpy()
    # per client, in story order: the earliest departure so far (an untimed one counts as
    # before anything), then whether a join comes at or after it
    both = np.concatenate([departs, joins])
    is_join = np.concatenate([np.zeros(len(departs), bool), np.ones(len(joins), bool)])
    # (a story's departures are its group's own)
    client_of_group = items["group"][both] * (int(client_code.max()) + 2) + client_code[both]
    order = np.lexsort((is_join, items["position"][both], client_of_group))
    who = client_of_group[order]
    departed_ms = np.concatenate([np.nan_to_num(time_ms[departs], nan=-1.0), np.full(len(joins), NO_TIME)])
    earliest = segmented_minimum(departed_ms[order].astype(np.int64), who)
    first_of_client = np.ones(len(who), bool)
    first_of_client[1:] = who[1:] != who[:-1]
    before = np.where(first_of_client, NO_TIME, np.concatenate([[NO_TIME], earliest[:-1]]))
    joined_ms = np.concatenate([np.zeros(len(departs)), join_time])[order]
    joined_back = np.zeros(len(both), bool)
    joined_back[order] = is_join[order] & (before < NO_TIME) & (np.isnan(joined_ms) | (before <= joined_ms))
    restarted = joined_back[len(departs):]
    has_client = ~falsy(client.take(pa.array(joins)))
    values = np.where(restarted & has_client, "restarted", np.where(static, "static_joined", "joined"))
    return overwrite(cause, joins, pa.array(values.tolist(), pa.string()))
