"""Helpers for the fuzz tests of every command's input: run the CLI in-process on a file, check
the answer is either success or exactly one line naming the user's path, with exit 2."""

from __future__ import annotations

import copy
import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from kafka_rebalance.cli import main


@dataclass
class Answer:
    code: int
    out: str
    err: str


def run_cli(capsys: pytest.CaptureFixture[str], args: list[str]) -> Answer:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    captured = capsys.readouterr()
    return Answer(exit_info.value.code, captured.out, captured.err)


def assert_one_line_bad_input(answer: Answer, *must_name: str) -> None:
    assert answer.code == 2, (answer.code, answer.err[-2000:])
    assert answer.out == ""
    assert answer.err.startswith("kafka-rebalance: ") and answer.err.endswith("\n"), answer.err
    assert answer.err.count("\n") == 1, answer.err
    assert "Traceback" not in answer.err and "Exception" not in answer.err, answer.err
    assert "internal error" not in answer.err, answer.err
    for name in must_name:
        assert name in answer.err, (name, answer.err)


def assert_success_or_bad_input(answer: Answer, path_name: str) -> None:
    """Either it worked (exit 0), or one line naming the file, exit 2."""
    if answer.code == 0:
        assert "Traceback" not in answer.err
        return
    assert_one_line_bad_input(answer)
    message = answer.err
    assert path_name in message or message.startswith("kafka-rebalance: --"), message
    assert ".staging-" not in message and "/tmp/tmp" not in message, message


# Values a new user (or a broken generator) puts where a number or a name belongs: numbers a machine
# cannot hold, negatives, non-finite floats, wrong types. Valid-but-large values that would take
# long to run are deliberately absent (the limits reject the out-of-bounds ones).
ODD_SCALARS = st.one_of(
    st.sampled_from([0, -1, 1, 2, -(2**31), 2**31, 2**63, 10**30, 10**400, 1.5, -0.0, 1e300, float("inf"),
                     float("-inf"), float("nan"), True, False, None, "", "x", "-1", "1e999", "\x00", "é" * 3,
                     "t0-0", "range", "cooperative-sticky"]),
    st.integers(min_value=-5, max_value=8),
    st.text(max_size=6),
)
ODD_VALUES = st.recursive(ODD_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                               st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                          max_leaves=6)


def paths_of(document: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (keys and indices) into a JSON-like document."""
    found = [prefix]
    if isinstance(document, dict):
        for key, value in document.items():
            found.extend(paths_of(value, (*prefix, key)))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            found.extend(paths_of(value, (*prefix, index)))
    return found


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> Any:
    """``base`` with one to three places replaced by odd values, deleted, or given an extra key."""
    document: Any = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        paths = paths_of(document)
        path = draw(st.sampled_from(paths))
        value = draw(ODD_VALUES)
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if not path:
            document = value if action == "replace" else document
            continue
        parent = document
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        if action == "replace":
            parent[last] = value
        elif action == "delete":
            del parent[last]
        elif isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=5))] = value
    return document


def encodings(document: Any) -> st.SearchStrategy[bytes]:
    """The document as a user might save it: JSON, YAML flow, gzip, truncated, with junk."""
    try:
        text = json.dumps(document, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(document)
    raw = text.encode("utf-8", "surrogatepass")
    return st.sampled_from([
        raw,
        gzip.compress(raw),
        gzip.compress(raw)[: max(12, len(gzip.compress(raw)) // 2)],
        raw[: len(raw) // 2],
        b"\xef\xbb\xbf" + raw,
        raw + b"\n\x00\x01",
        b"\xff\xfe" + raw,
    ])


def write(tmp: Path, name: str, data: bytes) -> str:
    path = tmp / name
    path.write_bytes(data)
    return str(path)
