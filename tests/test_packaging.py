"""The core installs without extras: build a wheel, install it into a fresh venv with no
extras (dependencies may come from PyPI), and run `assign` and `simulate` from there; a command
whose extra is missing says which extra to install, in one line, exit 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv

import pytest

from tests.conftest import ROOT

# Building the wheel and installing it with its dependencies into a fresh venv costs a minute.
pytestmark = pytest.mark.slow

TIMEOUT_S = 400
SNAPSHOT = {"topics": {"t": 4}, "members": [{"member_id": "a", "topics": ["t"]}, {"member_id": "b", "topics": ["t"]}]}
SCENARIO = {"name": "tiny", "group": "g", "topics": {"t": 2}, "consumers": [{"id": "c1", "strategies": ["cooperative-sticky"], "subscribe": ["t"]}],
            "events": [{"at_ms": 0, "join": "c1"}], "end_ms": 10000, "seed": 1}


def clean_env() -> dict[str, str]:
    """No PYTHONPATH: the fresh venv must use only what the wheel installed."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


@pytest.fixture(scope="module")
def core_venv(tmp_path_factory):
    where = tmp_path_factory.mktemp("wheel")
    # Build from a copy: an in-tree build leaves an egg-info behind in src/.
    source = where / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.egg-info", "build", "dist", "lab-out", "out",
                                                                ".hypothesis", "tests", "benchmarks", "node_modules"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(where), str(source)],
                           capture_output=True, text=True, timeout=TIMEOUT_S, env=clean_env())
    if built.returncode != 0:
        pytest.fail(f"building the wheel failed: {built.stderr[-2000:]}")
    wheel = next(where.glob("kafka_rebalance-*.whl"))
    env_dir = where / "venv"
    # No pip of its own (ensurepip costs seconds): the test's pip installs into it (``--python``).
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    # Not compiled at install: the commands below compile the few modules they import (the module 23 -> 19 s).
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-compile", str(wheel)],
                               capture_output=True, text=True, timeout=TIMEOUT_S, env=clean_env())
    if installed.returncode != 0:
        pytest.skip(f"could not install the wheel's dependencies (offline?): {installed.stderr[-500:]}")
    return env_dir


def run(env_dir, *args, stdin=None):
    return subprocess.run([str(env_dir / "bin" / "kafka-rebalance"), *args], input=stdin, capture_output=True, text=True, timeout=120, env=clean_env())


def test_core_install_has_no_spark_or_kafka(core_venv):
    listed = subprocess.run([sys.executable, "-m", "pip", "--python", str(core_venv / "bin" / "python"), "list", "--format=json"],
                            capture_output=True, text=True, check=True, env=clean_env())
    names = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert {"numpy", "pyarrow", "pydantic", "click", "rich"} <= names
    assert not names & {"pyspark", "pandas", "matplotlib", "kafka-python", "aiokafka"}


def test_assign_and_simulate_run_from_the_core_install(core_venv):
    assigned = run(core_venv, "assign", "-", stdin=json.dumps(SNAPSHOT))
    assert assigned.returncode == 0, assigned.stderr
    assert json.loads(assigned.stdout)["assignment"] == {"a": ["t-0", "t-1"], "b": ["t-2", "t-3"]}
    simulated = run(core_venv, "simulate", "-", "--json", stdin=json.dumps(SCENARIO))
    assert simulated.returncode == 0, simulated.stderr
    assert json.loads(simulated.stdout)["final_assignment"] == {"c1": ["t-0", "t-1"]}


@pytest.mark.parametrize(("args", "extra"), [(["describe", "--bootstrap-server", "127.0.0.1:1"], "kafka"), (["lab", "--out", "x"], "spark")])
def test_missing_extra_is_one_line_exit_2(core_venv, args, extra, tmp_path):
    result = subprocess.run([str(core_venv / "bin" / "kafka-rebalance"), *args], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=clean_env())
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and f"kafka-rebalance[{extra}]" in result.stderr, result.stderr
