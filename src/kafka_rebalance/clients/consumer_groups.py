"""ConsumerGroupDescribe (KIP-848) for ``describe``: aiokafka has no such request, so it is sent
with ``kio`` (Kafka's message schemas; the ``serve`` extra) on a connection of its own.

The broker's ApiVersions is asked first and ConsumerGroupDescribe sent only to a broker that
lists it: a broker given an API it does not know may close the connection or worse (Tansu's
worker threads panic on frames they cannot read). Plaintext only: with SASL or SSL options the
caller does not ask.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import struct
from typing import Any

CONSUMER_GROUP_DESCRIBE = 69
CLIENT_ID = "kafka-rebalance-describe"
MAX_RESPONSE_BYTES = 64 * 1024 * 1024


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer
        self.correlation_id = 0

    async def ask(self, request: Any) -> Any:
        from kio.index import load_response_schema
        from kio.serial import entity_reader, entity_writer
        from kio.static.primitive import i16, i32

        self.correlation_id += 1
        header = request.__header_schema__
        out = io.BytesIO()
        entity_writer(header)(out, header(request_api_key=i16(request.__api_key__),
                                          request_api_version=i16(request.__version__),
                                          correlation_id=i32(self.correlation_id), client_id=CLIENT_ID))
        entity_writer(type(request))(out, request)
        self.writer.write(struct.pack(">i", out.tell()) + out.getvalue())
        await self.writer.drain()
        (size,) = struct.unpack(">i", await self.reader.readexactly(4))
        if not 0 <= size <= MAX_RESPONSE_BYTES:
            raise ConnectionError(f"response of {size} bytes")
        frame = await self.reader.readexactly(size)
        schema = load_response_schema(request.__api_key__, request.__version__)
        response_header, used = entity_reader(schema.__header_schema__)(frame, 0)
        if response_header.correlation_id != self.correlation_id:
            raise ConnectionError("response out of order")
        return entity_reader(schema)(frame, used)[0]

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()


async def _connect(host: str, port: int) -> _Connection:
    reader, writer = await asyncio.open_connection(host, port)
    return _Connection(reader, writer)


async def _supports_describe(connection: _Connection) -> bool:
    from kio.schema.api_versions.v0.request import ApiVersionsRequest

    versions = await connection.ask(ApiVersionsRequest())
    return any(int(k.api_key) == CONSUMER_GROUP_DESCRIBE and int(k.min_version) == 0 for k in versions.api_keys)


async def describe_consumer_group(bootstrap: str, group: str) -> Any | None:
    """The group as ConsumerGroupDescribe v0 answers it (kio's ``DescribedGroup``), or None: the
    broker does not serve ConsumerGroupDescribe, or has no consumer group of that id, or kio is
    not installed."""
    try:
        from kio.schema.consumer_group_describe.v0.request import ConsumerGroupDescribeRequest
        from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
        from kio.schema.types import GroupId
        from kio.static.primitive import i8
    except ImportError:
        return None
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    connection = await _connect(host, int(port))
    try:
        if not await _supports_describe(connection):
            return None
        found = await connection.ask(FindCoordinatorRequest(key_type=i8(0), coordinator_keys=(group,)))
        (coordinator,) = found.coordinators
        if int(coordinator.error_code) != 0:
            return None
    finally:
        await connection.close()
    connection = await _connect(coordinator.host, int(coordinator.port))
    try:
        answer = await connection.ask(ConsumerGroupDescribeRequest(group_ids=(GroupId(group),),
                                                                   include_authorized_operations=False))
    finally:
        await connection.close()
    (described,) = answer.groups
    # A consumer group that exists has a group epoch (Tansu answers any id without an error).
    exists = int(described.error_code) == 0 and (int(described.group_epoch) > 0 or described.members)
    return described if exists else None
