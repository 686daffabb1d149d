"""The paste path stays light: ``kafka-rebalance logs -`` answers a paste (tables, terminal
answer, report with its figures) without starting Spark and without importing pyspark or
matplotlib (whose import alone took about half of the paste's time), nor pandas (a quarter of
it: the report computes with pyarrow and numpy, and the command refuses pandas, which pyarrow
would otherwise import on its first array). Checked in a fresh interpreter, by the modules it
loaded, not by timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data" / "logs"

# Runs the CLI, then prints the heavy modules it loaded (after the answer, on its own line).
_PROBE = """
import sys
from kafka_rebalance.cli.app import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    assert not exit.code, exit.code
heavy = sorted({name.split('.')[0] for name in sys.modules} & {'pyspark', 'py4j', 'matplotlib', 'pandas'})
print('\\nMODULES ' + json.dumps(heavy))
""".replace("import sys\n", "import json, sys\n", 1)


def test_a_paste_is_answered_without_spark_matplotlib_or_pandas(tmp_path):
    paste = (DATA / "paste-docker-compose.md").read_text()
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", _PROBE, "logs", "-", "--out", str(out), "--quiet"],
                          input=paste, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    answer, _, modules = done.stdout.rpartition("\nMODULES ")
    assert json.loads(modules) == []
    assert "notifier" in answer  # the terminal answer was printed
    report = (out / "report.html").read_text()
    assert report.count("<svg") == 3 and '<g id="axes_1">' in report  # the figures, drawn
    assert json.loads((out / "summary.json").read_text())["engine"] == "local"
    for figure in ("rebalance_timeline", "rebalance_durations", "storms"):
        assert (out / "figures" / f"{figure}.csv").exists()


def test_pandas_is_refused_only_while_the_command_runs():
    """Inside ``without_pandas`` pyarrow builds arrays and ``import pandas`` fails; after it the
    import works again, and where pandas was imported already the refusal changes nothing."""
    probe = ("import sys, pyarrow as pa\n"
             "from kafka_rebalance.pipeline.without_pandas import without_pandas\n"
             "with without_pandas():\n"
             "    assert pa.array([1, None]).to_pylist() == [1, None]\n"
             "    try:\n        import pandas\n    except ModuleNotFoundError:\n        print('refused')\n"
             "import pandas\n"
             "with without_pandas():\n    import pandas.api.types\n"
             "print('imported', 'pandas' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.split() == ["refused", "imported", "True"]
