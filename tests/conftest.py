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

settings.register_profile("ci", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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

# Tests that share a session-wide process run on one pytest-xdist worker per process, so it starts
# once and never twice at a time: the local SparkSession and the S3 server on one ("jvm"); the
# standalone cluster (with an S3 server and a local SparkSession of its own, to compare with) on
# one ("cluster"), so that its minutes run beside the local session's tests, not after them. The
# broker is no group: Tansu starts in a fraction of a second, so each worker that runs a broker
# test starts its own, and the broker tests' minutes of waiting for rebalances spread over both
# workers. Tests that start their own Spark (the CLI on a terminal) are free to run beside them.
_SHARED_PROCESS_GROUPS = {"standalone": "cluster", "spark": "jvm", "s3_server": "jvm"}


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        for fixture, marker in _PROCESS_MARKERS.items():
            if fixture in fixtures:
                item.add_marker(marker)
        group = next((_SHARED_PROCESS_GROUPS[name] for name in _SHARED_PROCESS_GROUPS if name in fixtures), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
