"""``serve --log FILE``: the coordinator's ``Log`` records as lines of Kafka 4.x's broker log
(``protocol/logformat.py``'s modern format, what ``kafka-rebalance logs`` reads)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TextIO

from kafka_rebalance.protocol.classic.group import coordinator_partition
from kafka_rebalance.protocol.effects import Log
from kafka_rebalance.protocol.logformat import format_record


class CoordinatorLog:
    """Writes each record as one line, stamped with the wall-clock time it happened: records
    carry the event loop's milliseconds, so the epoch is the wall clock less the loop's time."""

    def __init__(self, out: TextIO, loop: asyncio.AbstractEventLoop, broker_id: int):
        self._out = out
        self._epoch = datetime.now(UTC) - timedelta(seconds=loop.time())
        self._broker_id = broker_id

    def write(self, log: Log) -> None:
        record = log.record
        line = format_record(record, broker_id=self._broker_id, partition=coordinator_partition(record.group_id),
                             epoch=self._epoch)
        if line is not None:
            self._out.write(line + "\n")
            self._out.flush()
