"""Shared test helpers."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
# Every file a test reads lives in the repository (tests/data/README.md says where each came from).
DATA = ROOT / "tests" / "data"
# Benchmarks own the workload generators that some tests replay.
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.insert(0, str(ROOT / "benchmarks"))

# Every JVM the tests start (the local SparkSession, the Spark commands run as a user runs them,
# the standalone master, workers and executors) runs short jobs, for which C2's background
# compilation and G1's threads cost more CPU than they save: the C1 compiler alone and the serial
# collector take about 40% less (the lab's test sweeps on local[2]: 48 -> 26 CPU-seconds). The
# launcher notes the variable on its stderr, which Spark's commands send to their log file with
# the rest of the JVM's output. Set it yourself to run the tests with other options.
os.environ.setdefault("JDK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")

settings.register_profile("ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("stress", max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


def _test_syslog():  # type: ignore[no-untyped-def]
    from kafka_rebalance.pipeline.logparse.layout import SyslogReference

    # Year-less syslog times in tests are placed as a run on this day would place them (a
    # fixed day: no test depends on the wall clock).
    return SyslogReference.from_year_option("2026-11-26")


TEST_SYSLOG = _test_syslog()


# A test that uses a session-wide process carries that process's marker, whether or not its module
# says so, so that one marker expression leaves out every test needing a JVM, the S3 server, a
# standalone cluster or a broker (``make test-fast``).
_PROCESS_MARKERS = {"spark": "spark", "s3_server": "s3", "standalone": "cluster", "broker": "broker"}


def pytest_itemcollected(item: pytest.Item) -> None:
    """As each test is collected, so before ``-m`` deselects by marker."""
    fixtures = set(getattr(item, "fixturenames", ()))
    for fixture, marker in _PROCESS_MARKERS.items():
        if fixture in fixtures:
            item.add_marker(marker)


# ``make test`` deals whole files to its four pytest-xdist workers (``--dist loadfile``), so a
# module's fixture (the packaging test's venv, a lab run several tests read) is built once. Each
# worker that needs a session-wide process (the local SparkSession, the S3 server, the broker)
# starts its own. (``--dist loadgroup`` with ``xdist_group`` markers would keep them on one worker,
# but pytest-xdist 3.8 tags a test's group on a node id that pytest 9 no longer reads: no group
# was ever formed.)

# With ``--no-loadscope-reorder`` (the Makefile's), files are dealt to the workers in collection
# order, each to the first worker free (by default pytest-xdist deals the files with the most
# tests first). The files that start a cluster, a JVM or a broker take 10-100 s each; dealt last,
# one of them ran alone on one worker while the others sat idle. So they are dealt first, the
# longest kinds first, and the short files even the workers out at the end.
_DEALT_FIRST = ("cluster", "spark", "broker", "s3", "slow")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        path = item.nodeid.split("::", 1)[0]
        names = {mark.name for mark in item.iter_markers()}
        kind = min((at for at, name in enumerate(_DEALT_FIRST) if name in names), default=len(_DEALT_FIRST))
        rank[path] = min(rank.get(path, kind), kind)
        first_seen.setdefault(path, index)

    def dealt(item: pytest.Item) -> tuple[int, int]:
        path = item.nodeid.split("::", 1)[0]
        return rank[path], first_seen[path]

    items.sort(key=dealt)
