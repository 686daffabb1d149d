"""The commands' answers for a terminal: rich tables that fit its width (text wraps, a cause or a
member id is folded, never cut), colour only on a terminal, plain text (no colour, no box lines)
when the output goes to a file or a pipe. The same answer objects make the HTML reports."""

from __future__ import annotations

import io
import sys
from typing import TYPE_CHECKING, TextIO, cast

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from kafka_rebalance.pipeline.report.lab import LabAnswer
    from kafka_rebalance.pipeline.report.logs import GroupAnswer, LogsAnswer
    from kafka_rebalance.pipeline.report.soak import SoakAnswer

SEVERITY_STYLES = {"problem": "bold red", "note": "yellow"}
INDENT = 2
CAUSE_MIN_WIDTH = 16
# Groups told in the terminal (most rebalances first); the report and --json tell more.
TERMINAL_GROUPS = 10


class _TrimmedLines(io.TextIOBase):
    """Writes whole lines to ``stream`` without the spaces a table pads them with."""

    def __init__(self, stream: TextIO):
        super().__init__()
        self._stream = stream
        self._partial = ""

    def write(self, text: str) -> int:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        if lines:
            self._stream.write("".join(line.rstrip() + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()


def console_for(stream: TextIO | None = None, *, width: int | None = None, terminal: bool | None = None) -> Console:
    """A console on ``stream`` (stdout): rich when it is a terminal, plain text otherwise (no
    colour, no box lines, no trailing spaces). Without a terminal the width is $COLUMNS, else 80."""
    stream = stream if stream is not None else sys.stdout
    is_terminal = stream.isatty() if terminal is None else terminal
    target = stream if is_terminal else cast(TextIO, _TrimmedLines(stream))
    return Console(file=target, width=width, force_terminal=is_terminal, no_color=not is_terminal,
                   highlight=False, emoji=False, soft_wrap=False)


def _plain(console: Console) -> bool:
    return not console.is_terminal


def table_for(console: Console, title: str | None = None) -> Table:
    """A table for ``console``: box lines and bold titles on a terminal, bare columns otherwise."""
    plain = _plain(console)
    return Table(title=title, title_justify="left", box=None if plain else box.SIMPLE_HEAD, show_edge=False,
                 pad_edge=False, expand=False, header_style="" if plain else "bold", padding=(0, 1))


def _say(console: Console, text: str, style: str = "", indent: int = 0, *, path: bool = False) -> None:
    """A paragraph, wrapped at the console's width (long words folded) with a hanging indent.
    A ``path`` line is never broken (to be copied whole; the terminal wraps it if it must)."""
    paragraph = Text(text, style="" if _plain(console) else style)
    if path:
        console.print(Text(" " * indent) + paragraph, soft_wrap=True)
        return
    for line in paragraph.wrap(console, max(console.width - indent, 1), overflow="fold"):
        line.rstrip()
        console.print(Text(" " * indent) + line if indent else line, soft_wrap=True)


# --------------------------------------------------------------------------- logs

def print_logs_answer(answer: LogsAnswer, console: Console) -> None:
    summary = answer.summary
    if summary["lines_matched"] == 0:
        _say(console, f"read {summary['lines_read']:,} lines from {summary['files']} input(s): none is a Kafka "
                      "group-membership message this tool knows (broker GroupCoordinator, Java consumer, Spring "
                      "Kafka, kafka-python, librdkafka debug, Kafka Streams). The input starts with:")
        for line in summary.get("sample_lines", []):
            _say(console, line[:160], indent=2)
    else:
        _say(console, f"read {summary['lines_read']:,} lines from {summary['files']} input(s): "
                      f"{summary['lines_matched']:,} understood, {summary['lines_unrecognised']:,} about groups but "
                      "not understood")
        _say(console, f"{summary['groups']:,} group(s), {summary['rebalances']:,} rebalance(s) "
                      f"({summary['open_rebalances']:,} never completed), {summary['client_rebalances']:,} "
                      f"client-side, {summary['member_failures']:,} member failure(s), {summary['storms']:,} "
                      "storm(s)", style="bold")
    for item in summary.get("skipped_inputs", []):
        _say(console, f"skipped {item['path']}: {item['why']}", indent=2)
    for group in answer.groups[:TERMINAL_GROUPS]:
        console.print()
        print_group(group, console)
    console.print()
    more = answer.more_groups + max(len(answer.groups) - TERMINAL_GROUPS, 0)
    if more:
        _say(console, f"{more:,} more group{'s' if more != 1 else ''} in {answer.report}", style="bold", path=True)
    _say(console, f"wrote the tables and the report to {answer.tables}/; open {answer.report}", path=True)


def print_group(group: GroupAnswer, console: Console) -> None:
    """A group: title and numbers, its rebalances (start, generation old -> new, length, outcome,
    cause with its member), then its findings with their advice."""
    shown = len(group.rebalances)
    days = sorted({r.start[:10] for r in group.rebalances if r.start})
    title = f"Group {group.group}: {group.rebalance_count:,} rebalance{'s' if group.rebalance_count != 1 else ''}"
    if group.rebalance_count > shown:
        title += f", the latest {shown}"
    if len(days) == 1:
        title += f", on {days[0]} (UTC)"
    _say(console, title, style="bold cyan")
    if group.number_text():
        _say(console, group.number_text(), indent=2)
    if group.rebalances:
        rows = [(r.start[11:] if len(days) == 1 else r.start[:19], r.generations(), r.length, r.outcome,
                 r.cause_title, r.cause_member, r.during) for r in group.rebalances]
        headers = ("start", "generation", "length", "outcome")
        widths = [max(len(headers[c]), *(len(row[c]) for row in rows)) for c in range(4)]
        # What is left of the line is the cause's: its words wrap, its member id breaks after dashes.
        cause_width = max(CAUSE_MIN_WIDTH, console.width - sum(widths) - len(widths) - INDENT)
        table = table_for(console)
        for header, width in zip(headers, widths, strict=True):
            table.add_column(header, overflow="fold", min_width=min(width, cause_width))
        table.add_column("cause", overflow="fold", max_width=cause_width)
        for start, generations, length, outcome, cause, member, during in rows:
            told = cause + (f"\n({wrap_id(member, cause_width - 2)})" if member else "")
            if during:
                told += "\nwhile open: " + "; ".join(during)
            table.add_row(start, generations, length, outcome, told)
        console.print(Padding(table, (0, 0, 0, INDENT), expand=False))
    for finding in group.findings:
        _say(console, f"{finding.severity}: {finding.finding}", style=SEVERITY_STYLES.get(finding.severity, ""),
             indent=INDENT)
        _say(console, finding.advice, indent=2 * INDENT)


def wrap_id(identifier: str, width: int) -> str:
    """A long id on lines of at most ``width``, broken after its dashes where it can be (a member
    id is ``client.id-UUID``), so every line is a readable piece of it."""
    width = max(width, 1)
    lines: list[str] = []
    line = ""
    for piece in identifier.replace("-", "-\0").split("\0"):
        if line and len(line) + len(piece) > width:
            lines.append(line)
            line = ""
        while len(piece) > width:  # a piece longer than a line: cut it
            lines.append(piece[:width])
            piece = piece[width:]
        line += piece
    if line:
        lines.append(line)
    return "\n".join(lines)


# --------------------------------------------------------------------------- lab

def print_lab_answer(answer: LabAnswer, console: Console) -> None:
    totals = ", ".join(f"{value:,} {words}" for words, value in answer.totals)
    _say(console, f"sweep {answer.sweep}: {totals}", style="bold")
    if answer.checks:
        console.print()
        _say(console, "What the sweep shows", style="bold cyan")
        for passed, text in answer.checks:
            mark = ("ok" if passed else "NO") if _plain(console) else ("✓" if passed else "✗")
            _say(console, f"{mark} {text}", style="green" if passed else "bold red", indent=2)
    for question, lines in (("Should we migrate to KIP-848?", answer.migration.sentences()),
                            ("Does load-aware assignment pay off?", answer.load_aware.sentences())):
        if lines:
            console.print()
            _say(console, question, style="bold cyan")
            for line in lines:
                overall = line.startswith("Overall: ")
                _say(console, f"- {line}", style="bold" if overall else "", indent=2)
    if answer.failed_runs:
        console.print()
        _say(console, "Failed runs", style="bold red")
        for line in answer.failed_runs:
            _say(console, line, indent=2)
    console.print()
    _say(console, f"wrote the tables and the report to {answer.tables}/; open {answer.report}", path=True)


# --------------------------------------------------------------------------- soak

def print_soak_answer(answer: SoakAnswer, console: Console) -> None:
    _say(console, answer.headline(), style="bold red" if answer.failing else "bold green")
    _say(console, f"exercised: {answer.exercised_text()}", indent=2)
    for failure in answer.failures:
        _say(console, failure.text(), style="red", indent=2)
    more = sum(answer.by_invariant.values()) - len(answer.failures)
    if more > 0:
        _say(console, f"{more:,} more in {answer.tables}/violations (each with its shrunk schedule)", indent=2,
             path=True)
    _say(console, f"tables in {answer.tables}/", path=True)
