"""No input crashes ``logs``: logs built from the corpus' own lines, then cut, shuffled, stripped
of their times, repeated, mixed, padded with binary noise, empty and very long lines. Every
outcome is an answer (exit 0) or one line naming the input (exit 2)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_rebalance.cli import cli, logs_cmd  # noqa: F401  (importing logs_cmd registers the command)
from kafka_rebalance.pipeline.advice import advise
from kafka_rebalance.pipeline.logparse.local_engine import analyse_local
from tests.conftest import TEST_SYSLOG
from tests.pipeline.logs.test_alone_or_batched import _clean  # NaN and NA alike, arrays as tuples

DATA = Path(__file__).resolve().parents[2] / "data"
LINES = [line.rstrip("\n") for directory in ("excerpts", "logs") for path in sorted((DATA / directory).iterdir())
         if path.suffix != ".json" for line in path.read_text().splitlines()]
TIME = re.compile(r"^\s*(?:\[?\d{4}-\d{2}-\d{2}[T ][\d:.,]+Z?\]?|\w{3} +\d+ [\d:]+)\s*")


def _drop_time(line: str) -> str:
    return TIME.sub("", line, count=1)


@st.composite
def damaged_line(draw: st.DrawFn) -> str:
    line = draw(st.sampled_from(LINES))
    what = draw(st.sampled_from(["keep", "keep", "cut", "cut_in_time", "no_time", "empty", "long", "noise", "two"]))
    if what == "cut":
        return line[: draw(st.integers(0, len(line)))]
    if what == "cut_in_time":
        return line[: draw(st.integers(0, min(len(line), 25)))]
    if what == "no_time":
        return _drop_time(line)
    if what == "empty":
        return draw(st.sampled_from(["", " ", "\t", "\r"]))
    if what == "long":
        return (line + " ") * draw(st.integers(50, 400))
    if what == "noise":
        noise = draw(st.binary(min_size=1, max_size=64)).decode("latin-1").replace("\x00", "")
        at = draw(st.integers(0, len(line)))
        return line[:at] + noise + line[at:]
    if what == "two":
        return line + " " + _drop_time(draw(st.sampled_from(LINES)))
    return line


damaged_log = st.lists(damaged_line(), min_size=0, max_size=40).map("\n".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged_log, st.lists(damaged_log, max_size=2), st.integers(0, 3000))
def test_any_damaged_log_gets_an_answer_from_the_reader_and_the_story(tmp_path_factory, text, others, cut):
    """The whole analysis but the report, fast: several inputs, one truncated anywhere."""
    root = tmp_path_factory.mktemp("fuzz")
    inputs = []
    for i, body in enumerate([text[:cut] if cut else text, *others]):
        path = root / f"in-{i}.log"
        path.write_text(body, encoding="utf-8", errors="surrogateescape")
        inputs.append((str(path), f"c{i % 2}"))
    result = analyse_local(inputs, syslog=TEST_SYSLOG)
    advise(result.findings)
    assert result.lines_read >= 0


def run(args: list[str], stdin: str | bytes | None = None):
    result = CliRunner().invoke(cli, ["logs", *args], input=stdin, catch_exceptions=True)
    # an exception other than the exit of a finished command is a crash
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged_log, st.booleans(), st.binary(max_size=64))
def test_the_command_answers_or_names_the_input(tmp_path_factory, text, as_file, noise):
    """End to end, report included: exit 0 with tables, or exit 2 with one line naming the input."""
    root = tmp_path_factory.mktemp("cli")
    data = text.encode("utf-8", "surrogateescape") + noise
    if as_file:
        path = root / "damaged.log"
        path.write_bytes(data)
        result = run([str(path), "--out", str(root / "out")])
    else:
        result = run(["-", "--out", str(root / "out")], data)
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        named = str(path) if as_file else "standard input"
        assert len(lines) == 1 and named in lines[0], result.stderr
        # a named file is bad when binary; any input, when it holds nothing but blanks
        assert as_file or not data.decode("utf-8", errors="replace").strip(), result.stderr
        assert not (root / "out" / "rebalances").exists()
    else:
        assert (root / "out" / "report.html").exists() and (root / "out" / "rebalances").exists()


@pytest.mark.spark
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(damaged_log, min_size=1, max_size=3))
def test_spark_answers_damaged_logs_as_the_local_engine_does(spark, tmp_path_factory, texts):
    """A few damaged logs on Spark too (its scan reads byte ranges, not lines): an answer, the
    same rows as the local engine's."""
    import pandas as pd

    from kafka_rebalance.pipeline.logparse.schemas import STORY_TABLES
    from kafka_rebalance.pipeline.logs import run_logs

    root = tmp_path_factory.mktemp("spark-fuzz")
    files = []
    for i, text in enumerate(texts):
        path = root / f"damaged-{i}.log"
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        files.append(str(path))
    tables = {}
    for engine in ("spark", "local"):
        run_logs(spark if engine == "spark" else None, files, str(root / engine), engine=engine, progress=False, syslog=TEST_SYSLOG)
        tables[engine] = {t: pd.read_parquet(root / engine / t).drop(columns=["evidence_sources"], errors="ignore")
                          for t in STORY_TABLES}
    for table in STORY_TABLES:
        spark_rows, local_rows = (sorted((tuple(_clean(v) for v in row)
                                          for row in tables[e][table].itertuples(index=False, name=None)), key=repr)
                                  for e in ("spark", "local"))
        assert spark_rows == local_rows, table


def test_a_lone_carriage_return_is_no_line_break_in_a_file_as_on_stdin(tmp_path):
    """A file's lines end at "\\n" only, as a paste's and as the Spark engine's byte scan cut
    them: a "\\r" inside a line stays in it (found by the Spark-vs-local fuzz test above)."""
    from kafka_rebalance.pipeline.logparse.inputs import STDIN, read_text_lines

    text = ("\x01\r[2016-09-12 11:02:17,310] INFO [GroupCoordinator 0]: Preparing to restabilize group clicks "
            "with old generation 3 (kafka.coordinator.GroupCoordinator)\nsecond\r\nthird")
    path = tmp_path / "cr.log"
    path.write_bytes(text.encode())
    assert list(read_text_lines(str(path))) == list(read_text_lines(STDIN, text)) == [
        text.split("\n")[0] + "\n", "second\r\n", "third"]
