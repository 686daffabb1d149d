"""Kafka consumer-group rebalancing: assignors, group protocol, simulator and Spark pipeline.

Layers (data flows one way): model -> assignors -> protocol -> sim -> pipeline / cli.
"""

from kafka_rebalance.assignors.api import assign

__all__ = ["assign"]
__version__ = "0.1.0"
