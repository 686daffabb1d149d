"""The shortcuts that make ``parse_numbered`` cheap per line give what the plain regexes give:
the ISO timestamp read without ``TIMESTAMP``'s search, code fences without ``FENCE``, the
logger suffix cut without a search of the whole line, log4j lines unwrapped without
``clean``, and followers skipped with nothing to join."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.pipeline.logparse import layout
from kafka_rebalance.pipeline.logparse.catalogue import LOGGER_SUFFIX
from kafka_rebalance.pipeline.logparse.parse import (
    layout_strip_logger,
    parse_line,
    parse_lines,
    parse_numbered,
)
from tests.conftest import TEST_SYSLOG

REFERENCE = layout.SyslogReference(1_730_000_000_000)
# Pieces of every timestamp form TIMESTAMP knows, valid and not, and what sits around them.
TIME_PIECES = ["[", "]", " ", "x", "1", "\u0663", "\n", "\t", "INFO ", "kafka-1  | ", ",", '"', ":", "T",
               "2024-05-01 10:00:00,123", "2024-05-01T10:00:00Z", "2024-05-01T12:00:00.5+02:00", "2024-05-01",
               "2024-13-01 10:00:00", "2024-02-30T10:00:00", "10:00:00", ".123456789", " UTC", "-0530",
               "24/05/01 10:00:00", "24/05/01 10:00:00.5", "%7|1714557600.123|", "1714557600000,",
               '"1714557600000",', "May  1 10:00:00", "Dec 31 23:59:59", "Feb 29 10:00:00"]


def _reference_time(text: str) -> int | None:
    """``find_time`` as one search of ``TIMESTAMP`` (what it was before its ISO shortcut)."""
    match = layout.TIMESTAMP.search(text)
    if match is None:
        return None
    if match.group("syslog"):
        for later in layout.TIMESTAMP.finditer(text, match.end()):
            full = None if later.group("syslog") else layout.timestamp_ms(later, REFERENCE)
            if full is not None:
                return full
    return layout.timestamp_ms(match, REFERENCE)


@settings(max_examples=2000)
@given(st.lists(st.sampled_from(TIME_PIECES), min_size=1, max_size=8))
def test_find_time_reads_what_one_search_of_every_form_reads(pieces):
    text = "".join(pieces)
    assert layout.find_time(text, REFERENCE) == _reference_time(text)


def test_find_time_shortcut_cases():
    assert layout.find_time("[2024-05-01 10:00:00,123] INFO", REFERENCE) == 1714557600123
    assert layout.find_time("2024-05-01T12:00:00.5+02:00 INFO", REFERENCE) == 1714557600500
    assert layout.find_time("[2024-02-30 10:00:00,000] INFO", REFERENCE) is None  # no such day: no time, as before
    assert layout.find_time("[2024-05-01 10:00:00.123456789Z]", REFERENCE) == 1714557600123


@given(st.text(alphabet=" \t\u00a0\u2003\x1c`~>x", max_size=8))
def test_is_fence_is_the_fence_pattern(line):
    assert layout.is_fence(line) == bool(layout.FENCE.match(line))


LOGGER_PIECES = [" ", "(", ")", "kafka", "org.apache", "state.change", "io.confluent", ".", "$", "Group", "x", "\t",
                 "\u00a0", "Coordinator", "-", "\n"]


@settings(max_examples=1000)
@given(st.lists(st.sampled_from(LOGGER_PIECES), max_size=10),
       st.sampled_from(["", " (kafka.coordinator.group.GroupCoordinator)", "\t(org.apache.kafka.Foo$Bar)", " (x)"]))
def test_logger_suffix_is_cut_as_the_pattern_cuts_it(pieces, suffix):
    text = "Stabilized group g generation 5 (__consumer_offsets-3)" + "".join(pieces) + suffix
    expected = LOGGER_SUFFIX.sub("", text) if text.endswith(")") else text
    assert layout_strip_logger(text) == expected
    assert layout_strip_logger(text) == expected  # and again, once the suffix is remembered


@given(st.text(alphabet="[]{}\"',0123456789 \r\n\x1b>\u00a0Tx", max_size=12))
def test_log4j_shortcut_unwraps_as_clean_does(tail):
    line = "[" + tail
    assert layout.unwrap(line, REFERENCE) == (layout.clean(line), None, "text")


STABILIZED = ("[2024-05-01 10:00:00,456] INFO [GroupCoordinator 1]: Stabilized group g generation 4 "
              "(__consumer_offsets-7) with 2 members (kafka.coordinator.group.GroupCoordinator)")
PREPARING = ("[2024-05-01 10:00:00,123] INFO [GroupCoordinator 1]: Preparing to rebalance group g in state "
             "PreparingRebalance with old generation 3 (__consumer_offsets-7) (reason: Adding new member c-1) "
             "(kafka.coordinator.group.GroupCoordinator)")


def test_followers_only_complete_the_line_before() -> None:
    """A follower (the line after a gated one) that fails the gate is read only to complete a
    line that matched nothing; a gated line after an unmatched one is still read on its own."""
    cut = 100
    lines = [(0, STABILIZED, True), (1, "\tat kafka.Something", True),
             (2, PREPARING[:cut], True), (3, PREPARING[cut:], True),
             (4, "[2024-05-01 10:00:01,000] WARN [GroupCoordinator 1]: Member c-2 in group g nobody logs", True),
             (5, STABILIZED, True), (6, "``` INFO about a group", True), (7, "", True),
             (8, STABILIZED, False)]  # the next split's line: only ever completes the one before
    records = list(parse_numbered(lines, "x", syslog=TEST_SYSLOG))
    assert [(r["kind"], r["seq"]) for r in records] == [("stabilized", 0), ("preparing_rebalance", 2),
                                                        (None, 4), ("stabilized", 5)]
    alone = parse_line(PREPARING, TEST_SYSLOG)
    assert alone is not None and records[1] == {**alone, "source": "x", "seq": 2, "cluster": "default"}


def test_a_wrapped_line_after_an_unrecognised_one_across_a_fence() -> None:
    unrecognised = "[2024-05-01 10:00:01,000] WARN [GroupCoordinator 1]: Member c-2 in group g nobody logs"
    cut = 80
    records = list(parse_lines([unrecognised, "```", STABILIZED[:cut], STABILIZED[cut:]], syslog=TEST_SYSLOG))
    assert [(r["kind"], r["line_no"] if r["kind"] else None) for r in records] == [(None, None), ("stabilized", 3)]
