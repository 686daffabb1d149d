"""The soak's answer: how many schedules ran, what they exercised, which failed and where their
shrunk forms are; built once from ``summary.json``'s fields and the first violations, shown in the
terminal (``report.terminal``) and as JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# (summary field, words): what the schedules exercised, in the order told.
EXERCISED = (("joins", "joins"), ("leaves", "leaves"), ("crashes", "crashes"), ("pauses", "GC pauses"),
             ("stalls", "slow batches"), ("restarts", "static bounces"), ("topic_creations", "new pattern topics"),
             ("partition_increases", "partition increases"), ("failovers", "coordinator failovers"),
             ("upgrades", "upgrades"), ("downgrades", "downgrades"),
             ("cooperative_schedules", "cooperative schedules"), ("static_consumers", "static consumers"))
FAILURES_TOLD = 5


@dataclass(frozen=True)
class SoakFailure:
    """One broken invariant of one schedule, and how small the shrinker made it."""

    schedule: int
    invariant: str
    detail: str
    shrunk_events: int | None

    def text(self) -> str:
        shrunk = f" (shrunk to {self.shrunk_events} events)" if self.shrunk_events is not None else ""
        return f"schedule {self.schedule:,}: {self.invariant}{shrunk}: {self.detail}"

    def as_dict(self) -> dict[str, Any]:
        return {"schedule": self.schedule, "invariant": self.invariant, "detail": self.detail,
                "shrunk_events": self.shrunk_events}


@dataclass(frozen=True)
class SoakAnswer:
    schedules: int
    failing: int
    seed: int
    first: int
    wall_s: float
    master: str
    simulated_s: float
    by_invariant: dict[str, int]
    exercised: list[tuple[str, int]]
    failures: list[SoakFailure]  # the first few (``FAILURES_TOLD``), by schedule
    tables: str

    def headline(self) -> str:
        numbers = f"seed {self.seed}" + (
            f", schedules {self.first:,}-{self.first + self.schedules - 1:,}" if self.first else "")
        broken = ", ".join(f"{name} {count}" for name, count in sorted(self.by_invariant.items()))
        return (f"soak: {self.schedules:,} schedules ({numbers}), {self.failing:,} failing"
                f"{f' ({broken})' if broken else ''}, {self.wall_s:,.0f} s on {self.master}")

    def exercised_text(self) -> str:
        told = ", ".join(f"{count:,} {words}" for words, count in self.exercised if count)
        return f"{self.simulated_s:,.0f} simulated seconds" + (f"; {told}" if told else "")

    def as_dict(self) -> dict[str, Any]:
        return {"schedules": self.schedules, "failing": self.failing, "seed": self.seed, "first": self.first,
                "wall_s": self.wall_s, "master": self.master, "simulated_s": self.simulated_s,
                "violations_by_invariant": self.by_invariant, "exercised": dict(self.exercised),
                "failures": [f.as_dict() for f in self.failures], "tables": self.tables}


def soak_answer(summary: dict[str, Any], failures: list[dict[str, Any]], tables: str = "") -> SoakAnswer:
    """``summary``: the fields of summary.json; ``failures``: rows of the violations table
    (schedule_index, invariant, detail, shrunk_events), the first ones by schedule."""
    return SoakAnswer(
        schedules=int(summary.get("schedules") or 0), failing=int(summary.get("failing_schedules") or 0),
        seed=int(summary.get("seed") or 0), first=int(summary.get("first_schedule") or 0),
        wall_s=float(summary.get("wall_s") or 0.0), master=str(summary.get("master") or ""),
        simulated_s=float(summary.get("simulated_ms") or 0) / 1000,
        by_invariant={str(k): int(v) for k, v in (summary.get("violations_by_invariant") or {}).items()},
        exercised=[(words, int(summary.get(key) or 0)) for key, words in EXERCISED],
        failures=[SoakFailure(int(row["schedule_index"]), str(row["invariant"]), str(row.get("detail") or ""),
                              None if row.get("shrunk_events") is None else int(row["shrunk_events"]))
                  for row in failures[:FAILURES_TOLD]],
        tables=tables)
