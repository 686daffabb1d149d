"""``logs``: problems with the paths given are one line naming the path, exit 2, before Spark
starts. (A corrupt .gz inside a directory is the logs command's to skip and report, not bad input.)"""

from __future__ import annotations

import pytest

from tests.cli.fuzzing import assert_one_line_bad_input, run_cli


def test_missing_file_and_folder_without_logs(capsys, tmp_path):
    (tmp_path / "empty-folder").mkdir()
    out = tmp_path / "out"
    for path in (str(tmp_path / "missing.log"), str(tmp_path / "empty-folder")):
        assert_one_line_bad_input(run_cli(capsys, ["logs", path, "--out", str(out)]), path)
    assert not out.exists()


@pytest.mark.parametrize("args", [["logs"], ["logs", "x.log", "--storm-min", "1"]])
def test_bad_options_are_one_line(capsys, args):
    assert_one_line_bad_input(run_cli(capsys, args))
