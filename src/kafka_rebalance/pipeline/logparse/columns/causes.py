"""Each rebalance's members and causes, for every group at once (``GroupStory``'s departures, joins and signals, ``_claim_recent``; ``story.tell``'s passes over the causes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kafka_rebalance.pipeline.logparse.columns.arrays import (
    as_array,
    changes,
    codes_of,
    concat,
    counts_of,
    falsy,
    map_strings,
    overwrite,
    rank_within,
)
from kafka_rebalance.pipeline.logparse.columns.members import DEPARTURES, MemberEvents, reason_members
from kafka_rebalance.pipeline.logparse.columns.rebalances import ClassicRebalances

# The kinds of line a story told over columns reads so far (``told_groups``): a group with
# any other line, a line without a time or from a client is told by ``GroupStory``.
COLUMN_KINDS = ("preparing_rebalance", "stabilized", "assignment_received", "group_empty", "group_dead",
                "member_joined", "member_failed", "member_left", "members_not_rejoined", "group_loaded",
                "group_unloaded")



@dataclass
class RebalanceCauses:
    """What the member lines and reasons tell each rebalance (in ``ClassicRebalances``' order),
    of the groups ``covered``: the members that failed, left and joined and what happened
    during it (each a list, as ``story._rebalance_row`` writes them: each member once), and
    its causes (``causes``: a row each, in the ``causes`` table's order)."""

    failed: Any
    left: Any
    joined: Any
    during: Any
    cause: Any
    cause_member: Any
    causes: dict[str, Any]
    covered: np.ndarray
    # the member events told as what happened during a rebalance (their places among the events)
    during_events: np.ndarray



def rebalance_causes(table: Any, rows: np.ndarray, rebalances: ClassicRebalances, events: MemberEvents
                     ) -> RebalanceCauses:
    """The causes of each rebalance and the members it lost and gained, as ``GroupStory`` finds
    them (``_departure``, ``_on_member_joined``, ``_on_members_not_rejoined``,
    ``_on_group_loaded``, ``_claim_recent``, ``_members_from_reason``) and ``story.tell``
    passes over them (``infer_joins``, ``not_logged``, the causes merged by cause and member),
    for the groups whose lines are all ``COLUMN_KINDS``, broker lines with a time.

    A line read while a rebalance is open is part of it (a cause when at its start, else what
    happened during it); one read while none is, a signal: the next rebalance opened claims it
    when it starts within the evidence window of it (in time order, that is the only one that
    can), else nobody does."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafka_rebalance.pipeline.logparse.causes import EVIDENCE_WINDOW_MS, WHAT_HAPPENED

    group_all = np.cumsum(changes(table.select(["cluster", "group"]).take(pa.array(rows)), ("cluster", "group"))) - 1
    ordered = table.select(["kind", "time_ms", "side"]).take(pa.array(rows))
    simple = pc.is_in(ordered.column("kind"), pa.array(COLUMN_KINDS)).to_numpy(zero_copy_only=False)
    simple &= ordered.column("time_ms").is_valid().to_numpy(zero_copy_only=False)
    simple &= pc.fill_null(pc.equal(ordered.column("side"), "broker"), False).to_numpy(zero_copy_only=False)
    covered = events.covered & rebalances.covered
    covered[group_all[~simple]] = False

    values = rebalances.values
    start = values["start_ms"]
    made = rebalances.made_position
    made_group = rebalances.group
    lines = events.lines
    line_group = lines["group"]
    in_covered = covered[line_group]
    line_kind = lines["line_kind"]
    open_at = rebalances.open_at(lines["position"], line_group)
    # (open_at -1, none, reads the NaN appended)
    at_start = (open_at >= 0) & (lines["time_ms"] <= np.append(start, np.nan)[open_at])
    departure = pc.is_in(line_kind, pa.array(["member_failed", "member_left"])).to_numpy(zero_copy_only=False) \
        & ~pc.equal(lines["kind"], "left_temporarily").to_numpy(zero_copy_only=False)
    joining = pc.equal(line_kind, "member_joined").to_numpy(zero_copy_only=False)
    not_rejoined = pc.equal(line_kind, "members_not_rejoined").to_numpy(zero_copy_only=False)
    loaded = pc.equal(line_kind, "group_loaded").to_numpy(zero_copy_only=False)
    failing = pc.is_in(lines["kind"], pa.array(["failed", "fenced"])).to_numpy(zero_copy_only=False)
    member, cause, reason = lines["member"], lines["cause"], lines["reason"]

    # every append to a rebalance's lists and causes, keyed by when the story makes it: the
    # line's place, then (at a rebalance's opening) its reason's cause, the signals it
    # claims, the members its reason names
    appends: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Any]]] = {
        "failed": [], "left": [], "joined": [], "during": []}
    claims: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Any, Any, Any, np.ndarray]] = []

    def add(name: str, mask: np.ndarray, target: np.ndarray, key: tuple[np.ndarray, np.ndarray, np.ndarray],
            value: Any) -> None:
        chosen = np.flatnonzero(mask)
        appends[name].append((target[chosen], key[0][chosen], key[1][chosen], key[2][chosen],
                              value.take(pa.array(chosen)) if len(chosen) else pa.array([], pa.string())))

    position, sub = lines["position"], lines["sub"]
    zero = np.zeros(len(position), np.int64)
    while_open = in_covered & (open_at >= 0)
    read_key = (position, zero, sub)
    # departures while a rebalance is open: a cause at its start, else what happened during it
    add("failed", while_open & departure & failing, open_at, read_key, member)
    add("left", while_open & departure & ~failing, open_at, read_key, member)
    named = pc.fill_null(member, "None")  # as Python formats a member it does not know
    what = pc.binary_join_element_wise(named, map_strings(cause, WHAT_HAPPENED), " ")
    add("during", while_open & departure & ~at_start, open_at, read_key, what)
    starting = np.flatnonzero(while_open & departure & at_start)
    claims.append((open_at[starting], position[starting], zero[starting], sub[starting],
                   cause.take(pa.array(starting)), member.take(pa.array(starting)), reason.take(pa.array(starting)),
                   lines["table_row"][starting]))
    # joins while open; members that did not rejoin in time
    add("joined", while_open & joining, open_at, read_key, member)
    add("during", while_open & joining & ~at_start, open_at, read_key,
        pc.binary_join_element_wise(named, pa.scalar("joined"), " "))
    add("failed", while_open & not_rejoined, open_at, read_key, member)
    add("during", while_open & not_rejoined, open_at, read_key,
        pc.binary_join_element_wise(named, pa.scalar(WHAT_HAPPENED["rebalance_timeout"]), " "))

    # departures told as during a rebalance that a later line proves complete, when that
    # line's reason names them: they came after it completed, and are signals again, read
    # where that line is (``GroupStory._departures_after``)
    during_departure = while_open & departure & ~at_start
    moved, proved_at = _moved_departures(table, rows, rebalances, lines, during_departure, open_at)
    removed = np.flatnonzero(moved)
    removals = {"during": (open_at[removed], what.take(pa.array(removed))),
                "failed": (open_at[removed[failing[removed]]], member.take(pa.array(removed[failing[removed]]))),
                "left": (open_at[removed[~failing[removed]]], member.take(pa.array(removed[~failing[removed]]))),
                "joined": (np.zeros(0, np.int64), pa.array([], pa.string()))}

    # signals, claimed by the next rebalance made in their group (at or after where they are
    # read) if it starts within the window
    signal = in_covered & ((departure & (open_at < 0)) | (joining & ((open_at < 0) | at_start)) | loaded)
    chosen = np.concatenate([np.flatnonzero(signal), removed])
    read_at = np.concatenate([position[signal], proved_at[removed]])
    read_after = np.concatenate([np.ones(int(signal.sum()), bool), np.zeros(len(removed), bool)])
    order_read = np.concatenate([position[signal] * 1_000_000 + sub[signal],
                                 proved_at[removed] * 1_000_000 + 500_000 + rank_within(proved_at[removed])])
    by_place = np.argsort(made, kind="stable")
    made_sorted = made[by_place]
    after = np.where(read_after, np.searchsorted(made_sorted, read_at, side="right"),
                     np.searchsorted(made_sorted, read_at, side="left"))
    claimer = np.append(by_place, -1)[after]  # -1: none made after
    claimed = (claimer >= 0) & (np.append(made_group, -1)[claimer] == line_group[chosen])
    claimed &= np.append(start, np.nan)[claimer] - lines["time_ms"][chosen] <= EVIDENCE_WINDOW_MS
    taken, claimer, order_read = chosen[claimed], claimer[claimed], order_read[claimed]
    signal_cause = pc.if_else(pa.array(loaded), "coordinator_moved", cause)
    signal_member = pc.if_else(pa.array(loaded), pa.scalar(None, pa.string()), member)
    line_text = table.column("line").take(pa.array(lines["table_row"]))
    signal_detail = pc.if_else(pa.array(loaded), line_text, pc.if_else(pa.array(moved), lines["row_reason"], reason))
    one = np.ones(len(taken), np.int64)
    claim_key = (made[claimer], one, order_read)
    claims.append((claimer, *claim_key, signal_cause.take(pa.array(taken)), signal_member.take(pa.array(taken)),
                   signal_detail.take(pa.array(taken)), lines["table_row"][taken]))
    took_failed = failing[taken] & departure[taken]
    took_left = ~failing[taken] & departure[taken]
    took_join = joining[taken] & pc.is_in(cause.take(pa.array(taken)), pa.array(["joined", "static_joined",
                                                                                  "restarted"])).to_numpy(
        zero_copy_only=False)
    taken_member = member.take(pa.array(taken))
    for name, mask in (("failed", took_failed), ("left", took_left), ("joined", took_join)):
        add(name, mask, claimer, claim_key, taken_member)

    # the members the opening line's reason names (told as events: not those skipped)
    told = np.flatnonzero(events.from_reason & covered[events.group])
    opened_by = _rebalance_made_at(made, made_group, events.position[told], events.group[told])
    reason_kind = events.told_kind.take(pa.array(told))
    reason_member = events.columns["member"].take(pa.array(told))
    reason_key = (events.position[told], np.full(len(told), 2), np.arange(len(told)))
    for name, mask in (("failed", pc.equal(reason_kind, "failed")), ("left", pc.equal(reason_kind, "left"))):
        add(name, mask.to_numpy(zero_copy_only=False), opened_by, reason_key, reason_member)
    add("joined", ~pc.is_in(reason_kind, pa.array(["failed", "left"])).to_numpy(zero_copy_only=False), opened_by,
        reason_key, reason_member)

    # the cause the opening line's reason gives, first
    claims.append(_reason_causes(table, rebalances, events, covered))
    told_during = lines["row"][during_departure & ~moved]
    return _finish_causes(table, rows, rebalances, appends, removals, claims, covered, told_during)



def _rebalance_made_at(made: np.ndarray, made_group: np.ndarray, positions: np.ndarray, groups: np.ndarray
                       ) -> np.ndarray:
    """The rebalance made by the line at each of ``positions`` (one is, by each)."""
    by_place = np.argsort(made, kind="stable")
    found = np.searchsorted(made[by_place], positions)
    made_by: np.ndarray = by_place[np.minimum(found, len(made) - 1)] if len(made) else np.zeros(0, np.int64)
    return made_by



def reason_causes(reasons: Any) -> tuple[Any, Any, Any]:
    """``causes.cause_from_reason`` of each reason of an Arrow array: (cause, member, the
    client's reason), each an Arrow array, null where no rule matches. In Python, a reason at a
    time: one per rebalance opened, and Python's ``re`` finds the first of the rules' lazy
    matches in a third of the time RE2's extraction takes over the array."""
    import pyarrow as pa

    from kafka_rebalance.pipeline.logparse.causes import cause_from_reason

    found = [cause_from_reason(reason) or (None, None, None) for reason in as_array(reasons).to_pylist()]
    return (pa.array([row[0] for row in found], pa.string()), pa.array([row[1] for row in found], pa.string()),
            pa.array([row[2] for row in found], pa.string()))



def _reason_causes(table: Any, rebalances: ClassicRebalances, events: MemberEvents, covered: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Any, Any, Any, np.ndarray]:
    """The cause each opening line's reason gives its rebalance (``GroupStory._claim_recent``):
    a join is a restart when the joining client departed before (``_rejoins``: in time order,
    any departure told earlier is at or before the start)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafka_rebalance.pipeline.logparse.catalogue import MEMBER_UUID_SUFFIX

    reason_row = rebalances.values["reason_row"]
    opened = np.flatnonzero(~np.isnan(reason_row) & covered[rebalances.group])
    at = reason_row[opened].astype(np.int64)
    reasons = table.column("reason").take(pa.array(at))
    cause, member, detail = reason_causes(reasons)
    has = np.flatnonzero(cause.is_valid().to_numpy(zero_copy_only=False))
    opened, at, cause, member, detail = (opened[has], at[has], cause.take(pa.array(has)), member.take(pa.array(has)),
                                         detail.take(pa.array(has)))
    client = pc.replace_substring_regex(member, MEMBER_UUID_SUFFIX.pattern, "")
    departed = np.flatnonzero(pc.is_in(events.told_kind, pa.array(DEPARTURES)).to_numpy(zero_copy_only=False)
                              & ~falsy(events.columns["client"]))
    codes = pc.dictionary_encode(concat([events.columns["client"].take(pa.array(departed)), client])).indices
    codes = pc.fill_null(codes, -1).to_numpy(zero_copy_only=False)
    width = int(codes.max()) + 2 if len(codes) else 1
    departed_key = events.group[departed] * width + codes[:len(departed)]
    joining_key = rebalances.group[opened] * width + codes[len(departed):]
    # the first place each (group, client) departed
    order = np.lexsort((events.position[departed], departed_key))
    keys, places = departed_key[order], events.position[departed][order]
    first = np.concatenate([[True], keys[1:] != keys[:-1]]) if len(keys) else np.zeros(0, bool)
    keys, places = keys[first], places[first]
    found = np.searchsorted(keys, joining_key)
    inside = found < len(keys)
    earlier = inside & (keys[np.minimum(found, max(len(keys) - 1, 0))] == joining_key) if len(keys) else inside
    earlier &= places[np.minimum(found, max(len(keys) - 1, 0))] < rebalances.made_position[opened] if len(keys) \
        else earlier
    joins = pc.is_in(cause, pa.array(["joined", "static_joined"])).to_numpy(zero_copy_only=False)
    restarted = joins & earlier & ~falsy(client)
    cause = pc.if_else(pa.array(restarted), "restarted", cause)
    size = len(opened)
    return (opened, rebalances.made_position[opened], np.zeros(size, np.int64), np.zeros(size, np.int64), cause,
            member, pc.if_else(pa.array(falsy(detail)), reasons.take(pa.array(has)), detail), at)



def _finish_causes(table: Any, rows: np.ndarray, rebalances: ClassicRebalances,
                   appends: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Any]]],
                   removals: dict[str, tuple[np.ndarray, Any]],
                   claims: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Any, Any, Any, np.ndarray]],
                   covered: np.ndarray, told_during: np.ndarray) -> RebalanceCauses:
    """Each rebalance's lists (each member once, in the order told) and causes: those claimed,
    else one inferred from its size (``causes.infer_joins``), else "not logged" for an opening
    line without a reason (``causes.not_logged``), else "unknown"; merged by (cause, member),
    with the first ``EVIDENCE_CAP`` lines of evidence in time order (``story.tell``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafka_rebalance.pipeline.logparse.causes import EVIDENCE_CAP, REASONS_FROM_VERSION

    count = len(rebalances.group)
    group = rebalances.group
    lists = {name: _first_of_each(parts, count, removals[name], every=name == "during")
             for name, parts in appends.items()}
    target = np.concatenate([part[0] for part in claims])
    keep = np.flatnonzero(covered[group[target]])
    order = keep[np.lexsort(tuple(np.concatenate([part[index] for part in claims])[keep] for index in (3, 2, 1))
                            + (target[keep],))]
    target, evidence = target[order], np.concatenate([part[7] for part in claims])[order]
    cause, member, detail = (concat([part[index] for part in claims]).take(pa.array(order)) for index in (4, 5, 6))
    # the causes no line gives: inferred from the group's size, or not logged, or unknown
    values = rebalances.values
    told = np.zeros(count, bool)
    told[target] = True
    members = values["members"]
    known = ~np.isnan(members)
    last_known = np.maximum.accumulate(np.where(known, np.arange(count), -1))
    previous = np.concatenate([[-1], last_known[:-1]]) if count else last_known
    previous = np.where((previous >= 0) & (group[np.maximum(previous, 0)] == group), previous, -1)
    before = members[np.maximum(previous, 0)]
    inferable = ~told & known & (previous >= 0) & (members != before)
    opening = rows[rebalances.made_position]
    opened_by_preparing = pc.equal(table.column("kind").take(pa.array(opening)), "preparing_rebalance").to_numpy(
        zero_copy_only=False)
    reason_row = np.nan_to_num(values["reason_row"], nan=0).astype(np.int64)
    no_reason = np.isnan(values["reason_row"]) | table.column("reason").take(pa.array(reason_row)).is_null().to_numpy(
        zero_copy_only=False)
    unexplained = ~told & ~inferable & (values["start_known"] == 1) & opened_by_preparing & no_reason
    extra = np.flatnonzero(~told & covered[group])
    extra_cause = np.where(inferable[extra], np.where(members[extra] > before[extra], "joined", "left"),
                           np.where(unexplained[extra], "not_logged", "unknown"))
    extra_detail = np.full(len(extra), None, object)
    for index in np.flatnonzero(inferable[extra]).tolist():  # a rebalance no line explains: few
        extra_detail[index] = f"members {int(before[extra[index]])} -> {int(members[extra[index]])} (inferred)"
    extra_detail[unexplained[extra]] = (f"brokers before Kafka {REASONS_FROM_VERSION} print no reason, "
                                        "and no line before the rebalance explains it")
    order = np.argsort(np.concatenate([target, extra]), kind="stable")
    target = np.concatenate([target, extra])[order]
    evidence = np.concatenate([evidence, opening[extra]])[order]
    cause = concat([cause, pa.array(extra_cause.tolist(), pa.string())]).take(pa.array(order))
    member = concat([member, pa.nulls(len(extra), pa.string())]).take(pa.array(order))
    detail = concat([detail, pa.array(extra_detail.tolist(), pa.string())]).take(pa.array(order))
    size = len(target)
    primary = np.flatnonzero(np.concatenate([[True], target[1:] != target[:-1]])) if size else np.zeros(0, np.int64)
    rebalance_cause = overwrite(pa.nulls(count, pa.string()), target[primary], cause.take(pa.array(primary)))
    rebalance_member = overwrite(pa.nulls(count, pa.string()), target[primary], member.take(pa.array(primary)))
    # merged by (cause, member): the first's place and detail, every one's evidence
    cause_code, member_code = codes_of(cause), codes_of(member)
    pair = cause_code * (int(member_code.max(initial=0)) + 2) + member_code + 1
    by_pair = np.lexsort((np.arange(size), pair, target))
    same = np.zeros(size, bool)
    same[1:] = (target[by_pair][1:] == target[by_pair][:-1]) & (pair[by_pair][1:] == pair[by_pair][:-1])
    head_of = np.empty(size, np.int64)
    head_of[by_pair] = by_pair[np.maximum.accumulate(np.where(~same, np.arange(size), 0))]
    heads = np.unique(head_of)  # in the order of their first claim
    time_ms = pc.fill_null(table.column("time_ms").take(pa.array(evidence)), 0).to_numpy()
    seq = pc.fill_null(table.column("seq").take(pa.array(evidence)), 0).to_numpy()
    shown = np.lexsort((np.arange(size), seq, time_ms, head_of))
    shown = shown[rank_within(head_of[shown]) < EVIDENCE_CAP]
    offsets = pa.array(np.concatenate([[0], np.cumsum(np.bincount(np.searchsorted(heads, head_of[shown]),
                                                                  minlength=len(heads)))]), pa.int32())
    causes = {"rebalance": target[heads], "cause": cause.take(pa.array(heads)),
              "member": member.take(pa.array(heads)), "detail": detail.take(pa.array(heads)),
              "evidence": pa.ListArray.from_arrays(offsets, as_array(pc.fill_null(
                  table.column("line").take(pa.array(evidence[shown])), ""))),
              "evidence_sources": pa.ListArray.from_arrays(offsets, as_array(_evidence_sources(table, evidence[shown])))}
    return RebalanceCauses(lists["failed"], lists["left"], lists["joined"], lists["during"],
                           pc.fill_null(rebalance_cause, "unknown"), rebalance_member, causes, covered, told_during)



def _first_of_each(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Any]], count: int,
                   removed: tuple[np.ndarray, Any], *, every: bool) -> Any:
    """A list per rebalance of the values appended to it, in the order of their keys, less
    those ``removed`` (each removal the earliest left of its value, or with ``every`` all of
    them), each value once (its first time: ``dict.fromkeys``)."""
    import pyarrow as pa

    target = np.concatenate([part[0] for part in parts])
    value = concat([part[4] for part in parts])
    order = np.lexsort(tuple(np.concatenate([part[index] for part in parts]) for index in (3, 2, 1)) + (target,))
    codes = codes_of(concat([value, removed[1]]))
    width = int(codes.max(initial=0)) + 2
    pair = (target * width + codes[:len(target)] + 1)[order]
    gone = removed[0] * width + codes[len(target):] + 1
    by_pair = np.lexsort((np.arange(len(order)), pair))
    rank = np.empty(len(order), np.int64)
    rank[by_pair] = rank_within(pair[by_pair])
    drop = np.isin(pair, gone) if every else rank < counts_of(pair, gone)
    target, pair, order = target[order][~drop], pair[~drop], order[~drop]
    by_pair = np.lexsort((np.arange(len(order)), pair))
    repeat = np.zeros(len(order), bool)
    repeat[by_pair[1:]] = pair[by_pair][1:] == pair[by_pair][:-1]
    kept = order[~repeat]
    offsets = np.concatenate([[0], np.cumsum(np.bincount(target[~repeat], minlength=count))])
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), as_array(value.take(pa.array(kept))))



def _moved_departures(table: Any, rows: np.ndarray, rebalances: ClassicRebalances, lines: dict[str, Any],
                      during: np.ndarray, open_at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which departures read ``during`` a rebalance (a mask over ``lines``) the line that
    proves it complete names in its reason, and that line's place (for each line)."""
    import pyarrow as pa

    proving = np.flatnonzero(rebalances.line_proves >= 0)
    proof_of = np.full(len(rebalances.group) + 1, -1)  # by rebalance; the last: none
    proof_of[rebalances.line_proves[proving]] = np.arange(len(proving))
    proof = proof_of[open_at]
    candidate = np.flatnonzero(during & (proof >= 0))
    proved_at = np.full(len(open_at), -1)
    moved = np.zeros(len(open_at), bool)
    if not len(candidate):
        return moved, proved_at
    proving_rows = rows[rebalances.line_position[proving]]
    named = reason_members(table.column("reason").take(pa.array(proving_rows)))
    codes = codes_of(concat([lines["member"].take(pa.array(candidate)), named.member]))
    width = int(codes.max(initial=0)) + 2
    wanted = proof[candidate] * width + codes[:len(candidate)] + 1
    moved[candidate] = np.isin(wanted, named.reason * width + codes[len(candidate):] + 1)
    proved_at[candidate] = rebalances.line_position[proving][proof[candidate]]
    return moved, proved_at



def _evidence_sources(table: Any, at: np.ndarray) -> Any:
    """``file:line`` of each line (``story._where``): the file alone where lines are not numbered."""
    import pyarrow as pa
    import pyarrow.compute as pc

    source = pc.fill_null(table.column("source").take(pa.array(at)), "None")
    if "line_no" not in table.column_names:
        return source
    line_no = table.column("line_no").take(pa.array(at))
    numbered = pc.binary_join_element_wise(source, pc.cast(line_no, pa.string()), ":")
    return pc.if_else(line_no.is_valid(), numbered, source)
