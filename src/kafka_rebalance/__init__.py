"""Kafka consumer-group rebalancing: assignors, group protocol, simulator and Spark pipeline.

Layers (data flows one way): model -> assignors -> protocol -> sim -> pipeline / cli.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing typing is a fifth of a process start that needs only this name
if TYPE_CHECKING:
    from typing import Any

__all__ = ["assign"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # Imported on first use: a Spark worker reading logs never loads the assignors.
    if name == "assign":
        from kafka_rebalance.assignors.api import assign

        return assign
    raise AttributeError(f"module 'kafka_rebalance' has no attribute {name!r}")
