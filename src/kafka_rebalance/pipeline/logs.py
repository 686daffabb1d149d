"""Broker-log analysis on Spark: GroupCoordinator lines -> events -> rebalances, member events,
empty periods and storms.

Every transform here is a pure DataFrame -> DataFrame function; reading files and writing
tables happen in ``run_logs`` only. Parsing uses Spark's own regex functions with the pattern
constants of ``kafka_rebalance.protocol.logformat`` (one set of regexes for the pure-Python
parser and for Spark), so the hot path never leaves the JVM: a substring test picks the line's
kind, then a single match of that kind's pattern yields all its fields.

Rebalances are rebuilt exactly as ``logformat.parse_rebalances`` does, with window functions:
a rebalance opens at a "Preparing to rebalance" line when none is open for the group (a further
"Preparing" line while open is a restart of the same rebalance), closes at the leader's
"Assignment received" line (the group is Stable again) or at "is now empty"; still open at the
end of the log, it ends at its "Stabilized" line if it has one. A member that fails or leaves
outside a rebalance in the same millisecond as the next "Preparing" line is what caused it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Observation, Window
from pyspark.sql import functions as F

from kafka_rebalance.protocol import logformat

KINDS: tuple[str, ...] = tuple(logformat.PATTERNS)
PREPARING = "preparing_rebalance"
STABILIZED = "stabilized"
ASSIGNMENT = "assignment_received"
FAILED = "member_failed"
LEFT = "member_left"
EMPTY = "group_empty"
CLOSERS = (ASSIGNMENT, EMPTY)
BOUNDARIES = (PREPARING, *CLOSERS)

# A fixed phrase of each kind, looked for (a plain substring search) before its regex runs:
# most lines of a broker log are not coordinator lines, and most coordinator lines match one
# kind, so each line costs at most one full regex match to classify.
KIND_PHRASES: dict[str, str] = {
    PREPARING: "Preparing to rebalance group ",
    STABILIZED: "Stabilized group ",
    ASSIGNMENT: "Assignment received from leader ",
    FAILED: " has failed, removing it from the group",
    LEFT: " has left group through explicit `LeaveGroup` request",
    EMPTY: " is now empty",
}
TIMESTAMP_FORMAT = "yyyy-MM-dd HH:mm:ss,SSS"
NO_BREAK_SPACES = "\u00a0\u2007\u202f"
GROUP_SEPARATOR = "\u0001"
# Member ids are client.id (or group.instance.id) + "-" + a UUID; the client part is what stays
# the same when a consumer process rejoins with a new member id.
_MEMBER_UUID_SUFFIX = r"-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"

_INT_FIELDS = {"broker", "members", "static_members", "prefix_partition", "suffix_partition"}
_LONG_FIELDS = {"old_generation", "generation"}
EVENT_FIELDS = ("group", "state", "old_generation", "generation", "members", "static_members", "leader", "member",
                "reason", "broker")


@dataclass(frozen=True)
class StormRule:
    """A storm: consecutive rebalances of a group, each starting within ``gap_ms`` of the one
    before, at least ``min_rebalances`` of them."""

    gap_ms: int = 10 * 60 * 1000
    min_rebalances: int = 3
    # A client failing this often within one storm is the seed's fail-rejoin loop.
    loop_failures: int = 3


# --------------------------------------------------------------------------- parsing

def _kind_column(line: Column) -> Column:
    kind = F.when(~line.contains("GroupCoordinator"), F.lit(None).cast("string"))
    for name in KINDS:
        kind = kind.when(line.contains(KIND_PHRASES[name]), F.lit(name))
    return kind


def _groups_column(line: Column, kind: Column) -> Column:
    """All capture groups of the line's kind pattern in one regex match: the matched line is
    rewritten as its groups joined by a separator, then split. (One ``regexp_extract`` per
    field would run the same pattern once per field.) A line that does not match its kind's
    pattern is left as it is, so it splits into a single element."""
    value = None
    for name in KINDS:
        pattern = logformat.PATTERNS[name]
        groups = re.compile(pattern).groups
        rewritten = F.regexp_replace(line, pattern, GROUP_SEPARATOR.join(f"${i}" for i in range(1, groups + 1)))
        parts = F.split(rewritten, GROUP_SEPARATOR)
        value = F.when(kind == name, parts) if value is None else value.when(kind == name, parts)
    return value


def _field_column(groups: Column, kind: Column, field: str) -> Column:
    """The text of ``field`` for the line's kind ('' when the kind has no such field)."""
    value = None
    for name in KINDS:
        index = logformat.GROUP_INDEX[name].get(field)
        if index is None:
            continue
        extract = F.try_element_at(groups, F.lit(index))
        value = F.when(kind == name, extract) if value is None else value.when(kind == name, extract)
    return F.coalesce(value, F.lit("")) if value is not None else F.lit("")


def classify_lines(lines: DataFrame, line_column: str = "value") -> DataFrame:
    """Lines -> ``seq``, ``kind`` (a key of ``logformat.PATTERNS``, or null), ``groups`` (the
    capture groups of the kind's pattern) and the raw ``timestamp`` text, which is empty when
    the line does not match its kind's pattern."""
    raw = F.col(line_column)
    kinds = lines.select("seq", raw.alias("raw"), _kind_column(raw).alias("kind"),
                         raw.contains("GroupCoordinator").alias("coordinator"))
    # Java's \s, unlike Python's, does not match a no-break space (logs pasted from web pages
    # and documents indent with them): make them plain spaces before matching.
    line = F.when(F.col("kind").isNotNull(),
                  F.translate("raw", NO_BREAK_SPACES, " " * len(NO_BREAK_SPACES)))
    # The one-element explode is a barrier the optimizer cannot inline through: without it each
    # later use of ``groups`` would be rewritten into its own copy of the regex match.
    candidates = kinds.select("seq", "kind", "coordinator", F.explode(F.array(_groups_column(line, F.col("kind")))).alias("groups"))
    matched = F.size("groups") > 1
    return candidates.withColumn("timestamp", F.when(matched, F.try_element_at("groups", F.lit(1))).otherwise(F.lit("")))


def parse_events(lines: DataFrame, line_column: str = "value") -> DataFrame:
    """Log lines (a string column and a ``seq`` giving file order) -> one row per
    GroupCoordinator line of a known kind: ``seq, kind, time_ms, time`` and the fields of
    ``EVENT_FIELDS`` plus ``partition`` (the coordinator's ``__consumer_offsets`` partition).
    Lines of no known kind, or whose timestamp cannot be read, are dropped."""
    return distinct_events(events_from_classified(classify_lines(lines, line_column)))


def events_from_classified(classified: DataFrame) -> DataFrame:
    """Classified lines (``classify_lines``) -> events (see ``parse_events``)."""
    groups, kind = F.col("groups"), F.col("kind")
    time_ms = F.unix_millis(F.try_to_timestamp(F.col("timestamp"), F.lit(TIMESTAMP_FORMAT)))
    matched = classified.where(kind.isNotNull() & (F.col("timestamp") != "")).withColumn("time_ms", time_ms)
    columns: list[Column] = [F.col("seq"), kind, F.col("time_ms"), F.timestamp_millis("time_ms").alias("time")]
    for field in (*EVENT_FIELDS, "prefix_partition", "suffix_partition"):
        text = F.nullif(_field_column(groups, kind, field), F.lit(""))
        if field in _INT_FIELDS:
            text = text.try_cast("int")
        elif field in _LONG_FIELDS:
            text = text.try_cast("bigint")
        columns.append(text.alias(field))
    events = matched.select(*columns).where(F.col("time_ms").isNotNull() & F.col("group").isNotNull())
    return events.withColumn("partition", F.coalesce("prefix_partition", "suffix_partition")).drop(
        "prefix_partition", "suffix_partition")


def distinct_events(events: DataFrame) -> DataFrame:
    """Events without repeats of the same line: a file given twice (a copy beside its rotated
    original, or an excerpt pasted twice) must not double the rebalances it shows."""
    return events.dropDuplicates([c for c in events.columns if c != "seq"])


def line_counts(classified: DataFrame) -> list[Column]:
    """Aggregates over classified lines for summary.json (used with ``Observation``)."""
    matched = F.col("kind").isNotNull() & (F.col("timestamp") != "")
    return [
        F.count(F.lit(1)).alias("lines_read"),
        F.sum(matched.cast("long")).alias("lines_matched"),
        F.sum(F.col("coordinator").cast("long")).alias("coordinator_lines"),
    ]


# --------------------------------------------------------------------------- rebalances

def _ordered(partition: str = "group") -> Window:
    return Window.partitionBy(partition).orderBy("time_ms", "seq")


def mark_rebalances(events: DataFrame) -> DataFrame:
    """Events + ``rebalance_no`` (starts so far in the group), ``starts``, ``closes`` and
    ``inside`` (the event belongs to the open rebalance ``rebalance_no``)."""
    kind = F.col("kind")
    before = _ordered().rowsBetween(Window.unboundedPreceding, -1)
    so_far = _ordered().rowsBetween(Window.unboundedPreceding, Window.currentRow)
    boundary = F.when(kind.isin(*BOUNDARIES), kind)
    marked = events.withColumn("previous_boundary", F.last(boundary, ignorenulls=True).over(before))
    open_before = F.coalesce(F.col("previous_boundary") == PREPARING, F.lit(False))
    marked = (
        marked.withColumn("starts", (kind == PREPARING) & ~open_before)
        .withColumn("closes", kind.isin(*CLOSERS) & open_before)
        .withColumn("inside", (kind == PREPARING) | open_before)
    )
    return marked.withColumn("rebalance_no", F.sum(F.col("starts").cast("int")).over(so_far))


def _members_sorted(condition: Column) -> Column:
    collected = F.collect_list(F.when(condition, F.struct("time_ms", "seq", "member")))
    return F.transform(F.array_sort(collected), lambda s: s["member"])


def rebalances_from_events(events: DataFrame) -> DataFrame:
    """Events -> one row per rebalance: ``group, generation`` (the new one; null if the log ends
    before it is known), ``start, end`` (timestamps; ``end`` null while still open),
    ``duration_ms, reason, members`` (null when unknown) and ``old_generation, leader, outcome``
    (``stable``, ``empty`` or ``open``), ``failed_members, left_members, partition``."""
    marked = mark_rebalances(events)
    kind = F.col("kind")
    order = F.struct("time_ms", "seq")
    after = _ordered().rowsBetween(1, Window.unboundedFollowing)
    next_start_ms = F.first(F.when(F.col("starts"), F.col("time_ms")), ignorenulls=True).over(after)
    # A departure just before a rebalance opens (same millisecond, outside any rebalance)
    # caused it and belongs to it; every other event belongs to the open rebalance, if any.
    departure = kind.isin(FAILED, LEFT)
    owned = marked.withColumn("next_start_ms", next_start_ms).withColumn(
        "owner_no",
        F.when(F.col("inside"), F.col("rebalance_no"))
        .when(departure & (F.col("time_ms") == F.col("next_start_ms")), F.col("rebalance_no") + 1),
    ).where(F.col("owner_no").isNotNull())

    inside = F.col("inside")
    members_value = F.when(kind == EMPTY, F.lit(0)).when(kind.isin(STABILIZED, ASSIGNMENT), F.col("members"))
    members_known = inside & ((kind == EMPTY) | (kind == STABILIZED)
                              | ((kind == ASSIGNMENT) & F.col("members").isNotNull()))
    start_order = F.when(inside, order)
    grouped = owned.groupBy("group", F.col("owner_no").alias("rebalance_no")).agg(
        F.min_by("time_ms", start_order).alias("start_ms"),
        F.min_by("old_generation", start_order).alias("old_generation"),
        F.min_by("reason", start_order).alias("reason"),
        F.min_by("partition", start_order).alias("partition"),
        F.max_by("generation", F.when(inside & kind.isin(STABILIZED, *CLOSERS) & F.col("generation").isNotNull(),
                                      order)).alias("generation"),
        F.max_by(members_value, F.when(members_known, order)).alias("members"),
        F.max_by("leader", F.when(inside & (kind == ASSIGNMENT), order)).alias("leader"),
        F.max(F.when(F.col("closes"), F.col("time_ms"))).alias("closed_ms"),
        F.max(F.when(inside & (kind == STABILIZED), F.col("time_ms"))).alias("stabilized_ms"),
        F.max(F.col("closes") & (kind == EMPTY)).alias("empty"),
        _members_sorted(kind == FAILED).alias("failed_members"),
        _members_sorted(kind == LEFT).alias("left_members"),
    )
    end_ms = F.coalesce("closed_ms", "stabilized_ms")
    return grouped.select(
        "group",
        "generation",
        F.timestamp_millis("start_ms").alias("start"),
        F.timestamp_millis(end_ms).alias("end"),
        (end_ms - F.col("start_ms")).alias("duration_ms"),
        "reason",
        "members",
        "old_generation",
        "leader",
        F.when(F.col("closed_ms").isNull(), F.lit("open")).when(F.col("empty"), F.lit("empty"))
        .otherwise(F.lit("stable")).alias("outcome"),
        "failed_members",
        "left_members",
        "partition",
        "start_ms",
        end_ms.alias("end_ms"),
    )


def client_of(member: Column) -> Column:
    """The client part of a member id (member ids are client.id + '-' + UUID)."""
    return F.regexp_replace(member, _MEMBER_UUID_SUFFIX, "")


# The reason Kafka gives when a new member's JoinGroup starts a rebalance (modern and 2.x
# coordinators): the only place a broker log names a joining member.
JOIN_REASON = r"^Adding new member (\S+) with group instance id"


def member_events_from_events(events: DataFrame) -> DataFrame:
    """Events -> ``group, member, time, kind`` (``failed`` by session timeout, ``left`` by
    LeaveGroup, ``joined`` when a new member's join started a rebalance; joins during a
    rebalance already under way are not logged by Kafka, so they cannot appear) plus ``client``
    and ``reason`` (the client's reason for leaving)."""
    kind = F.col("kind")
    departures = events.where(kind.isin(FAILED, LEFT)).select(
        "group",
        "member",
        "time",
        F.when(kind == FAILED, F.lit("failed")).otherwise(F.lit("left")).alias("kind"),
        client_of(F.col("member")).alias("client"),
        F.when(kind == LEFT, F.col("reason")).alias("reason"),
        "time_ms",
    )
    joiner = F.regexp_extract(F.col("reason"), JOIN_REASON, 1)
    joins = events.where((kind == PREPARING) & F.col("reason").rlike(JOIN_REASON)).select(
        "group",
        joiner.alias("member"),
        "time",
        F.lit("joined").alias("kind"),
        client_of(joiner).alias("client"),
        F.lit(None).cast("string").alias("reason"),
        "time_ms",
    )
    return departures.unionByName(joins)


def empty_periods_from_events(events: DataFrame) -> DataFrame:
    """Events -> one row per time a group was empty: ``group, generation, start, end``
    (the next rebalance's start; null if the log ends first) and ``duration_ms``."""
    kind = F.col("kind")
    after = _ordered().rowsBetween(1, Window.unboundedFollowing)
    next_prepare = F.first(F.when(kind == PREPARING, F.col("time_ms")), ignorenulls=True).over(after)
    relevant = events.where(kind.isin(PREPARING, EMPTY)).withColumn("next_prepare_ms", next_prepare)
    empties = relevant.where(kind == EMPTY)
    return empties.select(
        "group",
        "generation",
        F.col("time").alias("start"),
        F.timestamp_millis("next_prepare_ms").alias("end"),
        (F.col("next_prepare_ms") - F.col("time_ms")).alias("duration_ms"),
    )


def storms_from_rebalances(rebalances: DataFrame, rule: StormRule = StormRule()) -> DataFrame:
    """Rebalances -> storms: ``group, start, end, rebalances`` plus ``duration_ms``,
    ``failures``, ``leaves``, ``top_client`` (the client that failed most in the storm),
    ``top_client_failures`` and ``kind`` (``fail-rejoin loop`` when one client keeps failing
    and coming back, else ``burst``)."""
    ordered = Window.partitionBy("group").orderBy("start_ms", "generation")
    gap = F.col("start_ms") - F.lag("start_ms").over(ordered)
    new_cluster = F.when(gap.isNull() | (gap > rule.gap_ms), 1).otherwise(0)
    clustered = rebalances.withColumn("storm_no", F.sum(new_cluster).over(
        ordered.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
    storms = clustered.groupBy("group", "storm_no").agg(
        F.min("start_ms").alias("start_ms"),
        F.max(F.coalesce("end_ms", "start_ms")).alias("end_ms"),
        F.count(F.lit(1)).alias("rebalances"),
        F.sum(F.size("failed_members")).alias("failures"),
        F.sum(F.size("left_members")).alias("leaves"),
    ).where(F.col("rebalances") >= rule.min_rebalances)

    failing = (
        clustered.select("group", "storm_no", F.explode("failed_members").alias("member"))
        .withColumn("client", client_of(F.col("member")))
        .groupBy("group", "storm_no", "client").agg(F.count(F.lit(1)).alias("client_failures"))
        .groupBy("group", "storm_no")
        .agg(F.max_by("client", F.struct("client_failures", "client")).alias("top_client"),
             F.max("client_failures").alias("top_client_failures"))
    )
    joined = storms.join(failing, ["group", "storm_no"], "left")
    return joined.select(
        "group",
        F.timestamp_millis("start_ms").alias("start"),
        F.timestamp_millis("end_ms").alias("end"),
        "rebalances",
        (F.col("end_ms") - F.col("start_ms")).alias("duration_ms"),
        "failures",
        "leaves",
        "top_client",
        F.coalesce("top_client_failures", F.lit(0)).alias("top_client_failures"),
        F.when(F.coalesce("top_client_failures", F.lit(0)) >= rule.loop_failures, F.lit("fail-rejoin loop"))
        .otherwise(F.lit("burst")).alias("kind"),
    ).orderBy("group", "start")


# --------------------------------------------------------------------------- per-group findings

def group_findings(rebalances: DataFrame, member_events: DataFrame, storms: DataFrame,
                   empty_periods: DataFrame) -> DataFrame:
    """One row per group with what the advice rules need: counts, durations, generations,
    failure cadence (the spread of the intervals between a client's failures), old clients."""
    per_group = rebalances.groupBy("group").agg(
        F.count(F.lit(1)).alias("rebalances"),
        F.percentile_approx("duration_ms", 0.5).alias("median_duration_ms"),
        F.max("duration_ms").alias("max_duration_ms"),
        F.max(F.greatest("generation", "old_generation")).alias("max_generation"),
        F.min("start_ms").alias("first_ms"),
        F.max(F.coalesce("end_ms", "start_ms")).alias("last_ms"),
    )
    ordered = Window.partitionBy("group", "client").orderBy("time_ms")
    failures = member_events.where(F.col("kind") == "failed")
    intervals = failures.withColumn("interval_ms", F.col("time_ms") - F.lag("time_ms").over(ordered))
    cadence = (
        intervals.groupBy("group", "client").agg(
            F.count(F.lit(1)).alias("failures"),
            F.avg("interval_ms").alias("mean_interval_ms"),
            F.stddev_pop("interval_ms").alias("sd_interval_ms"),
        )
        .groupBy("group")
        .agg(
            F.sum("failures").alias("failures"),
            F.max_by(F.struct("client", "failures", "mean_interval_ms", "sd_interval_ms"), "failures")
            .alias("most_failing"),
        )
    )
    old_python = (
        member_events.withColumn("version", F.regexp_extract("client", r"kafka-python-(\d+\.\d+)", 1))
        .where(F.col("version") != "")
        .groupBy("group")
        .agg(F.min("version").alias("kafka_python_version"))
    )
    poll_timeouts = (
        member_events.where((F.col("kind") == "left") & F.lower(F.col("reason")).contains("poll timeout"))
        .groupBy("group").agg(F.count(F.lit(1)).alias("poll_timeout_leaves"))
    )
    leaves = member_events.where(F.col("kind") == "left").groupBy("group").agg(F.count(F.lit(1)).alias("leaves"))
    storm_summary = storms.groupBy("group").agg(
        F.count(F.lit(1)).alias("storms"),
        F.max("rebalances").alias("largest_storm"),
        F.max_by("kind", "rebalances").alias("largest_storm_kind"),
        F.max_by("top_client", "rebalances").alias("largest_storm_client"),
    )
    empties = empty_periods.groupBy("group").agg(
        F.count(F.lit(1)).alias("empty_periods"), F.max("duration_ms").alias("longest_empty_ms"))
    groups = per_group
    for extra in (cadence, old_python, poll_timeouts, leaves, storm_summary, empties):
        groups = groups.join(extra, "group", "full")
    return groups.fillna(0, subset=["rebalances", "failures", "poll_timeout_leaves", "leaves", "storms",
                                    "empty_periods"])


# --------------------------------------------------------------------------- the job

@dataclass
class LogsRun:
    """What ``run_logs`` produced, for the CLI to print."""

    out_dir: str
    summary: dict
    report: str


def read_lines(spark, files: list[str]) -> DataFrame:
    """Text lines of the given files (gzip read by extension), with ``seq`` in file order."""
    return spark.read.text(files).withColumn("seq", F.monotonically_increasing_id())


def run_logs(spark, paths: list[str], out_dir: str, *, storm_rule: StormRule = StormRule(),
             progress: bool | None = None) -> LogsRun:
    """Read broker logs, write the tables of the output contract, summary.json and the report."""
    import json

    from kafka_rebalance.pipeline import advice, report
    from kafka_rebalance.pipeline.io import StagedOutput, expand_log_paths
    from kafka_rebalance.pipeline.spark import spark_progress

    files = expand_log_paths(paths)
    with StagedOutput(out_dir) as out:
        classified = classify_lines(read_lines(spark, files))
        observation = Observation("lines")
        observed = classified.observe(observation, *line_counts(classified))
        events_path = str(out.path("events"))
        with spark_progress(spark, "reading logs", enabled=progress):
            distinct_events(events_from_classified(observed)).write.parquet(events_path)
        counts = observation.get
        events = spark.read.parquet(events_path).cache()

        rebalances = rebalances_from_events(events).cache()
        member_events = member_events_from_events(events).cache()
        empty_periods = empty_periods_from_events(events).cache()
        storms = storms_from_rebalances(rebalances, storm_rule).cache()
        with spark_progress(spark, "rebuilding rebalances", enabled=progress):
            rebalances.drop("start_ms", "end_ms").write.parquet(str(out.path("rebalances")))
            member_events.drop("time_ms").write.parquet(str(out.path("member_events")))
            storms.write.parquet(str(out.path("storms")))
            empty_periods.write.parquet(str(out.path("empty_periods")))
            findings = group_findings(rebalances, member_events, storms, empty_periods).toPandas()
        lines_read = int(counts.get("lines_read") or 0)
        lines_matched = int(counts.get("lines_matched") or 0)
        advice_items = advice.advise(findings, storm_rule)
        summary = {
            "lines_read": lines_read,
            "lines_matched": lines_matched,
            "lines_skipped": lines_read - lines_matched,
            "groups": int(events.select("group").distinct().count()),
            # GroupCoordinator lines of other kinds (loading metadata, joins) or cut short.
            "coordinator_lines_not_parsed": int(counts.get("coordinator_lines") or 0) - lines_matched,
            "rebalances": int(findings["rebalances"].sum()) if len(findings) else 0,
            "member_failures": int(findings["failures"].sum()) if len(findings) else 0,
            "storms": int(findings["storms"].sum()) if len(findings) else 0,
            "files": len(files),
            "advice": [item.as_dict() for item in advice_items],
        }
        out.write_text("summary.json", json.dumps(summary, indent=2) + "\n")
        figures = report.logs_figures(spark, rebalances, member_events, storms, findings)
        html = report.render_logs_report(summary, figures, advice_items, findings, storms)
        report.write_report(out, html, figures)
        events.unpersist()
    return LogsRun(out_dir=str(out.final), summary=summary, report=str(out.final / "report.html"))
