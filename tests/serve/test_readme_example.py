"""The README's example of ``serve``: its code block, run as the test it is."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("kio")
pytest.importorskip("kafka")
pytestmark = pytest.mark.broker

README = Path(__file__).resolve().parents[2] / "README.md"
MARKER = "<!-- serve-example -->\n```python\n"


def test_the_readme_example_passes():
    text = README.read_text(encoding="utf-8")
    start = text.index(MARKER) + len(MARKER)
    code = text[start:text.index("```", start)]
    namespace: dict[str, object] = {"__name__": "readme_example"}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - the project's own README
    test = namespace["test_a_forced_cooperative_rebalance_revokes_nothing"]
    assert callable(test)
    test()
