"""Data flows one way: model -> assignors -> protocol -> sim -> pipeline / cli. A layer may
import only layers to its left (docs/architecture.md); clients and serve sit beside sim."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "src" / "kafka_rebalance"
ORDER = ["model", "assignors", "protocol", "sim", "clients", "serve", "pipeline", "cli"]
# pipeline and cli sit side by side at the top; only cli may import pipeline.
ALLOWED = {layer: set(ORDER[: i + 1]) for i, layer in enumerate(ORDER)}
ALLOWED["pipeline"] = {"model", "assignors", "protocol", "sim", "pipeline"}
# clients (real Kafka clients) sits beside sim: model, assignors and protocol only; only cli imports it.
ALLOWED["clients"] = {"model", "assignors", "protocol", "clients"}
# serve (a Kafka broker around our coordinator) sits beside sim too: model, assignors, protocol; only cli imports it.
ALLOWED["serve"] = {"model", "assignors", "protocol", "serve"}


def _imported_layers(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "kafka_rebalance" and len(parts) > 1 and parts[1] in ORDER:
                yield parts[1], node.lineno


@pytest.mark.parametrize("layer", ORDER)
def test_layers_import_only_lower_layers(layer):
    offenders = [
        f"{path.relative_to(PACKAGE)}:{line} imports {imported}"
        for path in sorted((PACKAGE / layer).rglob("*.py"))
        for imported, line in _imported_layers(path)
        if imported not in ALLOWED[layer]
    ]
    assert not offenders


def test_importing_the_package_does_not_start_spark():
    import subprocess
    import sys

    code = "import sys, kafka_rebalance, kafka_rebalance.sim, kafka_rebalance.cli; print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
