"""``kafka-rebalance logs`` answers in the terminal: per group (most rebalances first, ten groups,
then how many more) each rebalance with its cause and member, then the findings with their
advice; plain text off a terminal, rich on one, JSON with ``--json``; within 80 columns and
wider; nothing cut. On our own fixtures (tests/data/logs)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafka_rebalance.cli import cli, logs_cmd  # noqa: F401  (importing logs_cmd registers the command)
from kafka_rebalance.pipeline.report.terminal import console_for, print_logs_answer, wrap_id
from tests.conftest import TEST_SYSLOG

DATA = Path(__file__).resolve().parents[2] / "data" / "logs"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run(args: list[str], columns: int) -> str:
    result = CliRunner().invoke(cli, ["logs", *args], env={"COLUMNS": str(columns)}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def squeezed(text: str) -> str:
    return "".join(text.split())


def told_in_text(rebalance: dict, text: str) -> bool:
    """The rebalance's row, cause and member whole: cells wrap onto lines of their own column, so
    without whitespace a row reads start, generations, length, outcome, cause, (member) in a row."""
    old, new = rebalance["old_generation"], rebalance["generation"]
    generations = "-" if old is None and new is None else f"{'?' if old is None else old}->{'?' if new is None else new}"
    member = f"({rebalance['cause_member']})" if rebalance["cause_member"] else ""
    rest = generations + rebalance["length"] + rebalance["outcome"] + rebalance["cause_title"] + member
    # the time of day with milliseconds when the group's rebalances fall on one day, else date and time
    starts = (rebalance["start"][11:], rebalance["start"][:19]) if rebalance["start"] else ("",)
    return any(squeezed(start + rest) in squeezed(text) for start in starts)


@pytest.fixture(scope="module")
def every_fixture(tmp_path_factory) -> tuple[dict, dict[int, str]]:
    """The answer as JSON and as plain text at 80 and 160 columns."""
    out = tmp_path_factory.mktemp("logs") / "out"
    # one cluster's broker and client logs: labelled so, they complete each other's story
    document = json.loads(run([str(DATA), "--cluster", "shop", "--out", str(out), "--json"], 80))
    texts = {width: run([str(DATA), "--cluster", "shop", "--out", str(out)], width) for width in (80, 160)}
    return document, texts


def test_json_holds_the_groups_with_their_rebalances_causes_and_findings(every_fixture):
    document, _ = every_fixture
    assert document["groups"] == 10 and document["rebalances"] == 14 and document["engine"] == "local"
    told = document["top_groups"]
    assert len(told) == 10 and document["more_groups"] == 0  # ten groups in all
    counts = [g["rebalance_count"] for g in told]
    assert counts == sorted(counts, reverse=True)
    billing = next(g for g in told if g["group"] == "billing")
    poll = next(r for r in billing["rebalances"] if r["generation"] == 19)
    assert (poll["old_generation"], poll["cause"], poll["cause_member"], poll["length"]) == (
        18, "poll_timeout", "consumer-billing-2-7d3f0c4e-5a1b-4c2d-9e8f-102030405060", "3.0 s")
    assert any("consumer poll timeout has expired" in line for e in poll["evidence"] for line in e["lines"])
    assert billing["findings"][0]["severity"] == "problem"
    assert "max.poll.interval.ms" in billing["findings"][0]["advice"]
    assert billing["numbers"]["poll_timeout_leaves"] == 1
    assert document["report"].endswith("report.html") and Path(document["report"]).exists()


@pytest.mark.parametrize("width", [80, 160])
def test_plain_text_tells_every_rebalance_and_finding_within_the_width(every_fixture, width):
    document, texts = every_fixture
    text = texts[width]
    assert not ANSI.search(text) and "─" not in text  # plain: no colour, no box lines
    paths = (document["tables"], document["report"])  # a path is never broken: it may be longer
    assert all(len(line) <= width and line == line.rstrip() for line in text.splitlines()
               if not any(path in line for path in paths))
    for group in document["top_groups"]:
        assert f"Group {group['group']}: {group['rebalance_count']} rebalance" in text
        for rebalance in group["rebalances"]:
            assert told_in_text(rebalance, text), (width, rebalance)
        for finding in group["findings"]:
            assert squeezed(f"{finding['severity']}: {finding['finding']}") in squeezed(text)
            assert squeezed(finding["advice"]) in squeezed(text)
    order = [text.index(f"Group {g['group']}:") for g in document["top_groups"]]
    assert order == sorted(order)
    assert f"open {document['report']}" in text


def test_a_narrow_terminal_wraps_a_member_id_after_its_dashes(every_fixture):
    _, texts = every_fixture
    narrow = texts[80]
    # the cause column is too narrow for the whole id: it breaks after a dash, and is all there
    assert "(consumer-billing-2-7d3f0c4e-5a1b-4c2d-9e8f-102030405060)" not in narrow
    assert "(consumer-billing-2-7d3f0c4e-5a1b-" in narrow
    assert "(consumer-billing-2-7d3f0c4e-5a1b-4c2d-9e8f-102030405060)" in texts[160]


def test_ten_groups_then_how_many_more(tmp_path):
    """24 groups: the terminal tells the ten with most rebalances and counts the rest; the
    report and --json tell twenty, the first ten the same."""
    text = (DATA / "broker-3.9.log").read_text()
    many = tmp_path / "many.log"
    many.write_text("".join(text.replace("billing", f"billing{i:02d}").replace("reports", f"reports{i:02d}")
                            for i in range(12)))
    out = tmp_path / "out"
    document = json.loads(run([str(many), "--out", str(out), "--json"], 80))
    assert document["groups"] == 24 and len(document["top_groups"]) == 20 and document["more_groups"] == 4
    plain = run([str(many), "--out", str(out)], 80)
    assert plain.count("\nGroup ") == 10 and f"14 more groups in {out.resolve()}/report.html" in plain
    told = [line.split(":")[0][len("Group "):] for line in plain.splitlines() if line.startswith("Group ")]
    assert told == [g["group"] for g in document["top_groups"][:10]]
    html = (out / "report.html").read_text()
    for group in document["top_groups"]:  # the report tells the same groups
        assert f"<h2>Group {group['group']}</h2>" in html


def test_on_a_terminal_the_answer_is_rich_and_fits(every_fixture, tmp_path):
    from kafka_rebalance.pipeline.logs import run_logs

    answer = run_logs(None, [str(DATA)], str(tmp_path / "out"), engine="local", progress=False,
                      clusters={str(DATA): "shop"}, syslog=TEST_SYSLOG).answer
    for width in (80, 120):
        stream = io.StringIO()
        print_logs_answer(answer, console_for(stream, width=width, terminal=True))
        shown = stream.getvalue()
        assert ANSI.search(shown)  # colour on a terminal
        plain = ANSI.sub("", shown)
        assert all(len(line) <= width for line in plain.splitlines() if answer.tables not in line)
        for group in answer.groups:
            for rebalance in group.rebalances:
                assert told_in_text(rebalance.as_dict(), plain)


def test_nothing_recognised_is_still_an_answer(tmp_path):
    text = run([str(DATA / "nothing-about-groups.log"), "--out", str(tmp_path / "o")], 80)
    assert "none is a Kafka group-membership message" in text and "Group " not in text


@pytest.mark.parametrize("width", [1, 5, 17, 40])
def test_wrap_id_keeps_every_character_in_lines_of_the_width(width):
    identifier = "consumer-billing-2-7d3f0c4e-5a1b-4c2d-9e8f-102030405060"
    lines = wrap_id(identifier, width).split("\n")
    assert "".join(lines) == identifier and all(len(line) <= width for line in lines)
