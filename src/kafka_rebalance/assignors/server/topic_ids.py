"""Kafka topic ids (``org.apache.kafka.common.Uuid``): parsing, ordering, and the stand-in id.

Kafka writes a Uuid as 22 characters of URL-safe base64 without padding and orders Uuids by
their two 64-bit halves compared as *signed* longs (``Uuid.compareTo``). The uniform assignor
breaks ties between topics by that order, so a topic without a given id needs a deterministic
stand-in: the first 16 bytes of SHA-256 of ``"kafka-rebalance/topic-id/" + name`` (UTF-8).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Sequence

import numpy as np

from kafka_rebalance.model import InvalidInput

DERIVED_ID_PREFIX = b"kafka-rebalance/topic-id/"


def parse_topic_id(text: str, where: str) -> bytes:
    """The 16 bytes of a base64 Uuid, as Kafka's ``Uuid.fromString`` accepts it."""
    if not isinstance(text, str) or not text or len(text) > 24:
        raise InvalidInput(where, f"expected a Kafka topic id (22 characters of URL-safe base64), got {text!r}")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise InvalidInput(where, f"{text!r} is not URL-safe base64") from None
    if len(raw) != 16:
        raise InvalidInput(where, f"{text!r} decodes to {len(raw)} bytes, a topic id has 16")
    return raw


def derived_topic_id(name: str) -> bytes:
    return hashlib.sha256(DERIVED_ID_PREFIX + name.encode("utf-8")).digest()[:16]


def format_topic_id(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def topic_id_keys(raw_ids: Sequence[bytes]) -> np.ndarray:
    """(T, 2) int64: each id's most and least significant halves as signed longs, so that a
    lexicographic sort of the rows is ``Uuid.compareTo`` order."""
    data = b"".join(raw_ids)
    return np.frombuffer(data, dtype=">i8").astype(np.int64).reshape(len(raw_ids), 2)
