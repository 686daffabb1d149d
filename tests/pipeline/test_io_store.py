"""``pipeline.io`` for stores: URLs joined and listed like folders, a store's file read ahead
of its reader (any reads and seeks give the file's bytes), and the scan of a file through a
URL (``file://``, read by the same code as ``s3://``) giving what the scan of its path gives,
split anywhere. The S3 server's own tests are in ``test_logs_s3.py``."""

from __future__ import annotations

import gzip

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.model import InvalidInput
from kafka_rebalance.pipeline.io import (
    ReadAhead,
    StagedOutput,
    expand_log_paths,
    join,
    open_input,
    read_parquet_parts,
    sizes_of,
)
from kafka_rebalance.pipeline.logparse.scan import Split, plan_splits
from tests.pipeline.logs.line_reader import scan

LOG = "\n".join(
    f"[2024-05-01 10:00:{i % 60:02d},123] INFO [GroupCoordinator 1]: Stabilized group g{i % 7} generation {i} "
    f"(__consumer_offsets-7) with 2 members (kafka.coordinator.group.GroupCoordinator)\nnoise line {i}"
    for i in range(400)).encode() + b"\n"


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=5000), chunk=st.integers(1, 6000),
       steps=st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 5200)), st.integers(0, 3000)), max_size=30))
def test_read_ahead_gives_the_files_bytes_whatever_the_reads_and_seeks(data, chunk, steps):
    reader = ReadAhead(pa.BufferReader(data), chunk)
    position = 0
    for seek_to, size in steps:
        if seek_to is not None:
            position = min(seek_to, len(data))
            reader.seek(position)
        got = reader.read(size)
        assert got == data[position:position + size]
        position += len(got)
    reader.close()
    assert reader.closed


def test_read_ahead_raises_what_the_store_raised():
    class Failing:
        def read(self, size):
            raise OSError("AWS Error NETWORK_CONNECTION during GetObject operation")

        def close(self):
            pass

    with pytest.raises(OSError, match="NETWORK_CONNECTION"):
        ReadAhead(Failing()).read(10)


@pytest.mark.parametrize("split_bytes", [97, 1000, 1 << 20])
def test_the_scan_through_a_url_is_the_scan_of_the_path(tmp_path, split_bytes):
    path = tmp_path / "server.log"
    path.write_bytes(LOG)
    url = path.as_uri()

    def lines(location: str) -> list[tuple[int, str, bool]]:
        splits = plan_splits([(location, len(LOG))], split_bytes)
        return [line for split in splits for line in scan(split, block_bytes=300)]

    assert lines(url) == lines(str(path)) and len(lines(str(path))) == 800


def test_a_gz_through_a_url_reads_as_the_gz(tmp_path):
    path = tmp_path / "server.log.gz"
    path.write_bytes(gzip.compress(LOG))
    assert list(scan(Split(path.as_uri()))) == list(scan(Split(str(path))))
    with open_input(path.as_uri()) as fh:
        assert fh.read() == LOG


def test_urls_listed_as_folders_are(tmp_path):
    (tmp_path / "logs" / "nested").mkdir(parents=True)
    for name in ("a.log", "nested/b.log.gz", ".hidden.log", "_SUCCESS", "nested/.tmp/c.log"):
        (tmp_path / "logs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "logs" / name).write_text("x\n")
    base = (tmp_path / "logs").as_uri()
    assert expand_log_paths([base + "/"]) == [f"{base}/a.log", f"{base}/nested/b.log.gz"]
    assert sizes_of([f"{base}/a.log"]) == {f"{base}/a.log": 2}
    with pytest.raises(FileNotFoundError):
        expand_log_paths([f"{base}/missing/"])
    (tmp_path / "logs" / "only-hidden").mkdir()
    (tmp_path / "logs" / "only-hidden" / ".x.log").write_text("x\n")
    with pytest.raises(InvalidInput, match="no log files"):
        expand_log_paths([(tmp_path / "logs" / "only-hidden").as_uri()])
    with pytest.raises(InvalidInput):
        expand_log_paths(["nosuchscheme://bucket/logs/"])


def test_join_paths_and_urls():
    assert join("s3://bucket/out/", "events", "part-0.parquet") == "s3://bucket/out/events/part-0.parquet"
    assert join("out", "events") == "out/events"


def test_staged_output_through_a_url_appears_on_commit_only(tmp_path):
    url = (tmp_path / "out").as_uri()
    with StagedOutput(url) as out:
        out.write_text("summary.json", "{}")
        out.write_text("figures/a.csv", "x")
        assert not (tmp_path / "out" / "summary.json").exists()
    assert (tmp_path / "out" / "summary.json").read_text() == "{}"
    assert (tmp_path / "out" / "figures" / "a.csv").read_text() == "x"
    assert [p.name for p in (tmp_path / "out").iterdir() if p.name.startswith(".")] == []
    with pytest.raises(RuntimeError), StagedOutput(url) as out:
        out.write_text("summary.json", "half")
        raise RuntimeError
    assert (tmp_path / "out" / "summary.json").read_text() == "{}"
    assert [p.name for p in (tmp_path / "out").iterdir() if p.name.startswith(".")] == []


def test_a_table_of_parquet_parts_reads_as_pyarrows_dataset_reads_it(tmp_path):
    """Parts in name order (``part-00010`` after ``part-00002``), ``_SUCCESS`` and ``.crc`` files
    left out, the columns asked for; locally and through a ``file://`` URL."""
    import pyarrow.parquet as pq

    folder = tmp_path / "rebalances"
    folder.mkdir()
    for number, rows in ((10, [5, 6]), (2, [1, 2, 3]), (3, [4])):
        pq.write_table(pa.table({"group": [f"g{r}" for r in rows], "generation": rows}),
                       folder / f"part-{number:05d}.parquet")
    (folder / "_SUCCESS").write_bytes(b"")
    (folder / ".part-00002.parquet.crc").write_bytes(b"not parquet")
    expected = pq.read_table(folder, columns=["generation"])
    for location in (str(folder), folder.as_uri()):
        table = read_parquet_parts(location, ["generation"])
        assert table.equals(expected)
        assert table.column("generation").to_pylist() == [1, 2, 3, 4, 5, 6]
    with pytest.raises(FileNotFoundError):
        read_parquet_parts(str(tmp_path / "missing"))


def test_on_a_store_the_marker_goes_first_and_comes_last(tmp_path, monkeypatch):
    """Objects are copied one by one: a reader must not take the old summary for the new tables'.
    The command's marker (``summary.json``; the lab's ``lab.json``) is deleted before any copy and
    copied after every other entry."""
    import pyarrow.fs as pafs

    from kafka_rebalance.pipeline import io

    class Watched:
        def __init__(self) -> None:
            self.local, self.calls = pafs.LocalFileSystem(), []

        def __getattr__(self, name: str):
            return getattr(self.local, name)

        def copy_file(self, source: str, target: str) -> None:
            self.calls.append(("copy", target.rsplit("/out/", 1)[1]))
            self.local.copy_file(source, target)

        def delete_file(self, path: str) -> None:
            self.calls.append(("delete", path.rsplit("/out/", 1)[1]))
            self.local.delete_file(path)

    watched = Watched()
    monkeypatch.setattr(io, "resolve", lambda location: (watched, location.split("://", 1)[1]))
    url = (tmp_path / "out").as_uri()
    for marker in ("summary.json", "lab.json"):
        (tmp_path / "out").mkdir(exist_ok=True)
        (tmp_path / "out" / marker).write_text("old")
        watched.calls.clear()
        with io.StagedOutput(url, marker=marker) as out:
            out.write_text(marker, "new")
            out.write_text("report.html", "<p>")
            out.write_text("simulations/part-00000.parquet", "rows")
        assert watched.calls[0] == ("delete", marker) and watched.calls[-1] == ("copy", marker)
        assert {call for call in watched.calls if call[0] == "copy"} == {
            ("copy", marker), ("copy", "report.html"), ("copy", "simulations/part-00000.parquet")}
        assert (tmp_path / "out" / marker).read_text() == "new"
