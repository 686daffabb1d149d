"""What ``logs`` answers and writes beside its tables for the excerpt corpus and our own fixtures,
pinned byte for byte: report.html (but the minute it was generated), every figure's CSV, the
``--json`` answer (but the stage timings) and the plain terminal answer, under
``tests/data/report/CASE/``. The report computes its answer, figures and sections from the
tables with pyarrow and numpy; these files were written by the code that read them as pandas
frames, so numbers, times, row orders and missing values are shown as they always were.
Written by ``python -m tests.pipeline.logs.test_report_golden`` from the code on the path."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "data"
GOLDEN = DATA / "report"
# case -> (inputs, --cluster labels): the excerpt corpus, each input its own cluster (so groups
# are shown as file/group); our fixtures as one cluster's logs (client-side rebalances too).
CASES: dict[str, tuple[list[str], dict[str, str] | None]] = {
    "excerpts": (sorted(str(p) for folder in ("excerpts", "excerpts-edges") for p in (DATA / folder).iterdir()
                        if p.name != "expected.json"), None),
    "shop": ([str(DATA / "logs")], {str(DATA / "logs"): "shop"}),
}


def outputs(case: str, out: Path) -> dict[str, str]:
    """The case's report.html, figures/*.csv, answer.json and terminal.txt, with the run's own
    paths and moment written as OUT, DATA and TIME."""
    from kafka_rebalance.pipeline.logs import run_logs
    from kafka_rebalance.pipeline.report.terminal import console_for, print_logs_answer
    from tests.conftest import TEST_SYSLOG

    inputs, clusters = CASES[case]
    run = run_logs(None, inputs, str(out), engine="local", progress=False, clusters=clusters, syslog=TEST_SYSLOG)
    answer = run.answer.as_dict()
    del answer["seconds"]
    terminal = io.StringIO()
    print_logs_answer(run.answer, console_for(terminal, width=100, terminal=False))
    files = {"report.html": (out / "report.html").read_text(), "answer.json": json.dumps(answer, indent=2, default=str),
             "terminal.txt": terminal.getvalue()}
    files.update({f"figures/{p.name}": p.read_text() for p in sorted((out / "figures").iterdir())})

    def neutral(text: str) -> str:
        text = text.replace(str(out.resolve()), "OUT").replace(str(out), "OUT").replace(str(DATA), "DATA")
        return re.sub(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "generated TIME", text)

    return {name: neutral(text) for name, text in files.items()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_report_answer_and_figures_are_the_pinned_ones(case: str, tmp_path: Path) -> None:
    got = outputs(case, tmp_path / "out")
    pinned = {str(p.relative_to(GOLDEN / case)): p.read_text() for p in sorted((GOLDEN / case).rglob("*"))
              if p.is_file()}
    assert sorted(got) == sorted(pinned)
    for name, text in got.items():
        assert text == pinned[name], f"{case}/{name} differs from the pinned one"


if __name__ == "__main__":  # write the golden files from the code on the path
    import tempfile

    for case in CASES:
        with tempfile.TemporaryDirectory() as scratch:
            for name, text in outputs(case, Path(scratch) / "out").items():
                (GOLDEN / case / name).parent.mkdir(parents=True, exist_ok=True)
                (GOLDEN / case / name).write_text(text)
    sys.exit(0)
