"""Kafka's wire format through ``kio`` (Kafka's message schemas, every version, as generated
dataclasses with readers and writers): a request frame in, a response frame out.

A frame is an int32 size and that many bytes. A request starts with its header (api key, api
version, correlation id, client id; v1 or v2 as the API's version decides), then the body. A
response is its header (the correlation id; v0 or v1) and its body.

Responses are built from plain values (``build``): one handler per API fills a mapping of field
names, and the response class of the request's version keeps the fields it has; a field the
mapping leaves out gets its zero value (nullable: None), as Kafka's generated ``*Data`` classes
start. So a handler is written once for every version of its API.
"""

from __future__ import annotations

import datetime
import functools
import io
import struct
import types
import typing
import uuid
from collections.abc import Mapping
from dataclasses import MISSING, Field, dataclass, fields
from typing import Any, TypeVar, cast

from kio.index import UnknownAPIKey, UnknownEntity, load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError
from kio.static.protocol import Entity, RequestPayload

E = TypeVar("E", bound=Entity)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


class MalformedRequest(Exception):
    """The frame is not a request this broker can read: the connection is closed (Kafka's
    ``InvalidRequestException`` path in ``SocketServer.Processor.processCompletedReceives``)."""


class UnsupportedApi(Exception):
    """The api key or version is not one kio (so this broker) knows."""

    def __init__(self, api_key: int, api_version: int, correlation_id: int):
        super().__init__(f"api key {api_key} version {api_version}")
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


@dataclass(frozen=True, slots=True)
class Request:
    """One decoded request: its header's fields and its body (a kio request dataclass)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    body: RequestPayload


_PREFIX = struct.Struct(">hhi")


def decode_request(frame: bytes) -> Request:
    """The request in ``frame`` (the bytes after the size). Raises ``UnsupportedApi`` for a key
    or version kio has no schema for, ``MalformedRequest`` for bytes that do not parse or that
    leave bytes over."""
    if len(frame) < _PREFIX.size:
        raise MalformedRequest(f"frame of {len(frame)} bytes has no request header")
    api_key, api_version, correlation_id = _PREFIX.unpack_from(frame)
    try:
        schema = load_request_schema(api_key, api_version)
    except (UnknownAPIKey, UnknownEntity):
        raise UnsupportedApi(api_key, api_version, correlation_id) from None
    try:
        header, header_size = entity_reader(schema.__header_schema__)(frame, 0)
        body, body_size = entity_reader(schema)(frame, header_size)
    except (SerialError, ValueError, TypeError, OverflowError, UnicodeDecodeError) as error:
        raise MalformedRequest(f"api key {api_key} v{api_version}: {error}") from None
    if header_size + body_size != len(frame):
        raise MalformedRequest(f"api key {api_key} v{api_version}: "
                               f"{len(frame) - header_size - body_size} bytes after the request")
    return Request(api_key, api_version, correlation_id, header.client_id or "", body)


def encode_response(api_key: int, api_version: int, correlation_id: int, values: Mapping[str, object]) -> bytes:
    """The response frame (size prefix included) of ``values`` in the request's version."""
    schema = load_response_schema(api_key, api_version)
    header_schema = schema.__header_schema__
    out = io.BytesIO()
    out.write(b"\0\0\0\0")
    entity_writer(header_schema)(out, header_schema(correlation_id=correlation_id))  # type: ignore[arg-type]
    entity_writer(schema)(out, build(schema, values))
    frame = out.getbuffer()
    struct.pack_into(">i", frame, 0, len(frame) - 4)
    return bytes(frame)


def build(schema: type[E], values: Mapping[str, object]) -> E:
    """An instance of the kio dataclass ``schema``: each field from ``values`` when given (nested
    entities from mappings, tuples of them from sequences of mappings, milliseconds as
    timedeltas, error codes as kio's), else its default, else its zero value."""
    kwargs: dict[str, object] = {}
    for item in fields(schema):
        hint = _hints(schema)[item.name]
        if item.name in values:
            kwargs[item.name] = _convert(item, hint, values[item.name])
        elif item.default is not MISSING or item.default_factory is not MISSING:
            continue
        else:
            kwargs[item.name] = _zero(item, hint)
    return schema(**kwargs)


@functools.cache
def _hints(schema: type[Any]) -> dict[str, Any]:
    return typing.get_type_hints(schema)


def _nullable(hint: object) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)


def _is_tuple(hint: object) -> bool:
    """A tuple field, or an optional one."""
    return typing.get_origin(hint) is tuple or any(typing.get_origin(a) is tuple for a in typing.get_args(hint))


def _entity_of(hint: object) -> type[Any] | None:
    """The nested entity class of a field (itself, a tuple of it, either optional), if any."""
    if isinstance(hint, type) and hasattr(hint, "__type__"):
        return hint
    for argument in typing.get_args(hint):
        entity = _entity_of(argument)
        if entity is not None:
            return entity
    return None


def _convert(item: Field[Any], hint: object, value: object) -> object:
    kafka_type = item.metadata.get("kafka_type")
    if value is None:
        return None if _nullable(hint) else _zero(item, hint)
    if kafka_type is None:
        entity = _entity_of(hint)
        if entity is not None:
            if isinstance(value, Mapping):
                return build(entity, value)
            return tuple(build(entity, element) if isinstance(element, Mapping) else element
                         for element in cast(typing.Iterable[object], value))
        return tuple(cast(typing.Iterable[object], value))
    if _is_tuple(hint):
        return tuple(cast(typing.Iterable[object], value))
    if kafka_type == "error_code":
        return KioErrorCode(int(cast(int, value)))
    if kafka_type in ("timedelta_i32", "timedelta_i64") and isinstance(value, int):
        return datetime.timedelta(milliseconds=value)
    return value


def _zero(item: Field[Any], hint: object) -> object:
    if _nullable(hint):
        return None
    if typing.get_origin(hint) is tuple:
        return ()
    kafka_type = item.metadata.get("kafka_type")
    match kafka_type:
        case None:
            entity = _entity_of(hint)
            return build(entity, {}) if entity is not None else ()
        case "error_code":
            return KioErrorCode.none
        case "timedelta_i32" | "timedelta_i64":
            return datetime.timedelta(0)
        case "string":
            return ""
        case "bytes" | "records":
            return b""
        case "bool":
            return False
        case "float64":
            return 0.0
        case "uuid":
            return uuid.UUID(int=0)
        case "datetime_i64":
            return _EPOCH
        case _:
            return 0


def milliseconds(value: object) -> int:
    """A kio duration field (a timedelta) as Kafka's milliseconds."""
    if isinstance(value, datetime.timedelta):
        return int(value / datetime.timedelta(milliseconds=1))
    return int(cast(int, value))
