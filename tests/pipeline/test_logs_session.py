"""A ``logs`` run's Spark session (``logs.logs_session``), which the command and the benchmarks
start alike: the logs class archive, worker daemon and shuffle settings, and the caller's own."""

from __future__ import annotations

from kafka_rebalance.pipeline import logs, spark


def test_the_command_and_the_benchmarks_start_the_same_session(monkeypatch):
    calls: list[tuple[str | None, str, dict[str, object]]] = []

    def build_session(master: str | None, app_name: str, **settings: object) -> str:
        calls.append((master, app_name, settings))
        return "a session"

    monkeypatch.setattr(spark, "build_session", build_session)

    assert logs.logs_session("local[2]", quiet=False, extra_conf={"spark.eventLog.enabled": "true"}) == "a session"
    assert calls == [("local[2]", "kafka-rebalance logs", {
        "quiet": False, "class_archive": logs.LOGS_CLASS_ARCHIVE, "worker_daemon": logs.LOGS_WORKER_DAEMON,
        "extra_conf": {**logs.LOGS_SPARK_CONF, "spark.eventLog.enabled": "true"}})]
