"""Bad input exits 2 with one line, before Spark starts; staged output never looks complete."""

from __future__ import annotations

import pytest

from kafka_rebalance.cli import main
from kafka_rebalance.model import InvalidInput
from kafka_rebalance.pipeline.io import StagedOutput


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


def test_logs_missing_file(capsys, tmp_path):
    code, out, err = run_cli(["logs", str(tmp_path / "nope.log"), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "nope.log: no such file" in err


def test_logs_empty_directory(capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    code, out, err = run_cli(["logs", str(tmp_path / "empty"), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "no log files" in err
    assert not (tmp_path / "o").exists()


def test_lab_unknown_parameter(capsys, tmp_path):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("runs:\n  - scenario: {name: s, topics: {t: 1}, consumers: [{id: c, subscribe: [t]}]}\n"
                     "    grid: {strategy: [range], sesion_timeout_ms: [10000]}\n")
    code, out, err = run_cli(["lab", str(sweep), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "runs[0].grid.sesion_timeout_ms: unknown sweep parameter" in err


def test_lab_missing_sweep_file(capsys, tmp_path):
    code, _, err = run_cli(["lab", str(tmp_path / "missing.yaml")], capsys)
    assert code == 2 and err.count("\n") == 1


def test_lab_invalid_scenario_in_sweep(capsys, tmp_path):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("runs:\n  - scenario: {name: s, topics: {t: 1}, consumers: [{id: c, subscribe: [t]}],"
                     " events: [{at_ms: 0, join: ghost}]}\n")
    code, _, err = run_cli(["lab", str(sweep)], capsys)
    assert code == 2 and "unknown consumer 'ghost'" in err and err.count("\n") == 1


def test_staged_output_appears_only_on_success(tmp_path):
    out_dir = tmp_path / "out"
    with pytest.raises(RuntimeError), StagedOutput(out_dir) as out:
        (out.path("simulations") / "part-0.parquet").parent.mkdir(parents=True, exist_ok=True)
        (out.path("simulations") / "part-0.parquet").write_text("half")
        raise RuntimeError("killed mid-run")
    assert list(out_dir.iterdir()) == []

    with StagedOutput(out_dir) as out:
        out.path("simulations").mkdir()
        (out.path("simulations") / "part-0.parquet").write_text("new")
        out.write_text("report.html", "<html></html>")
    assert sorted(p.name for p in out_dir.iterdir()) == ["report.html", "simulations"]
    # A second run replaces the tables of the first.
    with StagedOutput(out_dir) as out:
        out.path("simulations").mkdir()
        (out.path("simulations") / "part-1.parquet").write_text("newer")
    assert [p.name for p in (out_dir / "simulations").iterdir()] == ["part-1.parquet"]


def test_out_must_be_a_directory(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidInput):
        StagedOutput(tmp_path / "file")


def test_importing_the_package_and_cli_does_not_import_pyspark():
    import subprocess
    import sys

    code = ("import sys, kafka_rebalance\n"
            "from kafka_rebalance.cli import app\n"
            "app._register_commands()\n"
            "print('pyspark' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
