"""How much of each excerpt of ``tests/data/excerpts/`` ``kafka-rebalance logs`` finds, given
one excerpt at a time and all of them in one run: rebalances (group, generation) and joins
(group, member) against ``expected.json``, and how many runs ended in an error.

    .venv/bin/python benchmarks/logs_excerpts.py [--engine local|spark]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import pandas as pd
from click.testing import CliRunner

from kafka_rebalance.cli import cli, logs_cmd  # noqa: F401  (registers the command)

EXCERPTS = Path(__file__).resolve().parents[1] / "tests" / "data" / "excerpts"


def expected() -> dict[str, dict]:
    return json.loads((EXCERPTS / "expected.json").read_text())


def _found(out: Path) -> tuple[set[tuple], set[tuple]]:
    """(cluster, group, generation) of the rebalances, (group, member) of the joins."""
    rebalances = pd.read_parquet(out / "rebalances")
    keys = set()
    for row in rebalances.itertuples():
        generation = row.generation if pd.notna(row.generation) else (
            row.old_generation + 1 if pd.notna(row.old_generation) else None)
        if generation is not None:
            keys.add((row.cluster, row.group, int(generation)))
    events = pd.read_parquet(out / "member_events")
    joins = {(row.group, row.member) for row in events.itertuples() if row.kind in ("joined", "rejoined")}
    return keys, joins


def run(files: list[Path], out: Path, engine: str) -> tuple[int, str, set[tuple], set[tuple]]:
    result = CliRunner().invoke(cli, ["logs", *map(str, files), "--out", str(out), "--engine", engine, "--json"],
                                catch_exceptions=True)
    if result.exit_code != 0:
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            return 1, f"{type(result.exception).__name__}: {result.exception}", set(), set()
        text = (getattr(result, "stderr", "") or result.output or "").strip().splitlines()
        return result.exit_code, text[-1] if text else "", set(), set()
    keys, joins = _found(out)
    return 0, "", keys, joins


def measure(engine: str) -> dict:
    cases = expected()
    files = [EXCERPTS / name for name in cases]
    want_rebalances = {name: {tuple(r) for r in case["rebalances"]} for name, case in cases.items()}
    want_joins = {name: {tuple(j) for j in case["joins"]} for name, case in cases.items()}
    total_r = sum(len(v) for v in want_rebalances.values())
    total_j = sum(len(v) for v in want_joins.values())
    with tempfile.TemporaryDirectory() as root:
        alone_r = alone_j = alone_extra = 0
        errors = []
        for i, path in enumerate(files):
            code, message, keys, joins = run([path], Path(root) / f"alone-{i}", engine)
            if code:
                errors.append(f"{path.name}: exit {code}: {message}")
            found = {(group, generation) for _, group, generation in keys}
            alone_r += len(want_rebalances[path.name] & found)
            alone_extra += len(found - want_rebalances[path.name])
            alone_j += len(want_joins[path.name] & joins)
        code, message, keys, joins = run(files, Path(root) / "batch", engine)
        # a rebalance found in the batch counts for the excerpt whose story it is in (its cluster
        # names the input when nothing joined inputs into one cluster)
        by_input = {name: {(g, n) for c, g, n in keys if Path(c).name == name} for name in cases}
        batch_r = sum(len(want_rebalances[name] & by_input[name]) for name in cases)
        batch_extra = sum(len(by_input[name] - want_rebalances[name]) for name in cases) + len(
            {k for k in keys if Path(k[0]).name not in cases})
        batch_j = sum(len(want & joins) for want in want_joins.values())
    return {"excerpts": len(files), "errors_alone": errors, "batch_exit": code, "batch_error": message,
            "rebalances": total_r, "rebalances_alone": alone_r, "rebalances_batched": batch_r,
            "not_expected_alone": alone_extra, "not_expected_batched": batch_extra,
            "joins": total_j, "joins_alone": alone_j, "joins_batched": batch_j}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engine", default="local", choices=["local", "spark"])
    args = parser.parse_args()
    facts = measure(args.engine)
    share = lambda a, b: f"{a}/{b} ({100 * a / b:.0f}%)" if b else "-"  # noqa: E731
    print(f"{facts['excerpts']} excerpts, engine {args.engine}")
    print(f"  runs ending in an error (alone): {len(facts['errors_alone'])}")
    for line in facts["errors_alone"]:
        print(f"    {line[:150]}")
    print(f"  batched run exit status: {facts['batch_exit']} {facts['batch_error'][:120]}")
    print(f"  rebalances found   alone {share(facts['rebalances_alone'], facts['rebalances'])}"
          f"   batched {share(facts['rebalances_batched'], facts['rebalances'])}")
    print(f"  rebalances found that the excerpt does not show: alone {facts['not_expected_alone']}, "
          f"batched {facts['not_expected_batched']}")
    print(f"  joins found        alone {share(facts['joins_alone'], facts['joins'])}"
          f"   batched {share(facts['joins_batched'], facts['joins'])}")
    sys.exit(0)


if __name__ == "__main__":
    main()
