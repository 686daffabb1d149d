"""Kafka consumer-group rebalancing: assignors, group protocol, simulator and Spark pipeline.

Layers (data flows one way): model -> assignors -> protocol -> sim -> pipeline / cli.
"""

from typing import Any

__all__ = ["assign"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # Imported on first use: a Spark worker reading logs never loads the assignors.
    if name == "assign":
        from kafka_rebalance.assignors.api import assign

        return assign
    raise AttributeError(f"module 'kafka_rebalance' has no attribute {name!r}")
