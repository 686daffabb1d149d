"""What every coordinator log line shares, whichever coordinator writes it: log4j's time
format (``[%d]``, read as UTC), the virtual clock's instant 0, and the offsets topic a modern
prefix names. ``logformat`` (the classic coordinator's lines) and
``modern/consumer/logformat`` (a consumer group's) both build on it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

OFFSETS_TOPIC = "__consumer_offsets"

# Virtual time 0 of a simulation is printed as this instant unless a caller gives another.
DEFAULT_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


def format_timestamp(epoch_ms: int) -> str:
    """Kafka's log4j date: ``yyyy-MM-dd HH:mm:ss,SSS`` (we print UTC)."""
    moment = datetime(1970, 1, 1) + timedelta(milliseconds=epoch_ms)
    return f"{moment:%Y-%m-%d %H:%M:%S},{epoch_ms % 1000:03d}"


def epoch_ms(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int((moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1))
