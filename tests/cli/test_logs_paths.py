"""``logs``: problems with the paths given are one line naming the path, exit 2, before Spark starts."""

from __future__ import annotations

import gzip

import pytest

from tests.cli.fuzzing import assert_one_line_bad_input, run_cli


def test_missing_file_folder_without_logs_and_corrupt_gzip(capsys, tmp_path):
    (tmp_path / "empty-folder").mkdir()
    truncated = tmp_path / "server.log.1.gz"
    truncated.write_bytes(gzip.compress(b"[2024-01-01 00:00:00,000] INFO hello\n" * 200)[:60])
    not_gzip = tmp_path / "server.log.2.gz"
    not_gzip.write_text("plain text named .gz\n")
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "server.log").write_text("[2024-01-01 00:00:00,000] INFO hello\n")
    (folder / "server.log.3.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    out = tmp_path / "out"
    cases = {
        str(tmp_path / "missing.log"): "no such file",
        str(tmp_path / "empty-folder"): "no log files",
        str(truncated): "corrupt gzip file",
        str(not_gzip): "corrupt gzip file",
        str(folder): "corrupt gzip file",
    }
    for path, problem in cases.items():
        answer = run_cli(capsys, ["logs", path, "--out", str(out)])
        expected = str(folder / "server.log.3.gz") if path == str(folder) else path
        assert_one_line_bad_input(answer, expected, problem)
    assert not out.exists()


@pytest.mark.parametrize("args", [["logs"], ["logs", "x.log", "--storm-min", "1"], ["logs", "x.log", "--storm-gap", "-5"]])
def test_bad_options_are_one_line(capsys, args):
    assert_one_line_bad_input(run_cli(capsys, args))
