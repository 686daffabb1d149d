"""kafka-python's own assignor test suite (its test/consumer/test_assignors.py), run against our
drop-in classes. The file is not part of this repository: it is read at test time from
``$KAFKA_PYTHON_TEST_ASSIGNORS`` or from a kafka-python git mirror (``$KAFKA_PYTHON_REPO``),
and the test is skipped when neither is there. Its cases are also ported as facts in
test_kafka_python_assignors.py, which always runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("kafka")
pytest.importorskip("pytest_mock")

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
# Opt-in only: nothing outside the repository is read unless the environment names it.
MIRROR = Path(os.environ["KAFKA_PYTHON_REPO"]) if os.environ.get("KAFKA_PYTHON_REPO") else None


def _peer_suite(dest: Path) -> Path | None:
    given = os.environ.get("KAFKA_PYTHON_TEST_ASSIGNORS")
    target = dest / "test_assignors.py"
    if given and Path(given).is_file():
        shutil.copy(given, target)
        return target
    if MIRROR is not None and MIRROR.is_dir() and shutil.which("git"):
        for path in ("test/consumer/test_assignors.py", "test/test_assignors.py"):
            shown = subprocess.run(["git", "-C", str(MIRROR), "show", f"HEAD:{path}"], capture_output=True)
            if shown.returncode == 0:
                target.write_bytes(shown.stdout)
                return target
    return None


def test_kafka_python_suite_passes_against_our_assignors(tmp_path):
    suite = _peer_suite(tmp_path)
    if suite is None:
        pytest.skip("kafka-python's own suite is opt-in: set KAFKA_PYTHON_TEST_ASSIGNORS=path/to/test_assignors.py "
                    "or KAFKA_PYTHON_REPO=path/to/a/kafka-python/git/checkout")
    shutil.copy(HERE / "peer_conftest.py", tmp_path / "conftest.py")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(suite)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr
    print(f"kafka-python peer suite: {summary}")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    passed = int(re.search(r"(\d+) passed", summary).group(1))
    assert passed >= 150 and not re.search(r"\d+ (failed|errors?)\b", summary)
