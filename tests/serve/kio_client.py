"""A Kafka client of one connection written with kio, for tests that look at single requests."""

from __future__ import annotations

import io
import socket
import struct

from kio.index import load_request_schema, load_response_schema
from kio.schema.index import api_key_map
from kio.serial import entity_reader, entity_writer

from kafka_rebalance.serve.codec import build


class Client:
    """One connection: ``ask(request)`` writes it with a header and reads the response."""

    def __init__(self, bootstrap: str):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.correlation_id = 0

    def ask(self, request):
        self.correlation_id += 1
        header_schema = request.__header_schema__
        out = io.BytesIO()
        entity_writer(header_schema)(out, header_schema(request_api_key=request.__api_key__,
                                                        request_api_version=request.__version__,
                                                        correlation_id=self.correlation_id, client_id="test"))
        entity_writer(type(request))(out, request)
        self.sock.sendall(struct.pack(">i", out.tell()) + out.getvalue())
        size = struct.unpack(">i", self._read(4))[0]
        frame = self._read(size)
        schema = load_response_schema(request.__api_key__, request.__version__)
        header, used = entity_reader(schema.__header_schema__)(frame, 0)
        assert header.correlation_id == self.correlation_id
        return entity_reader(schema)(frame, used)[0]

    def _read(self, count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = self.sock.recv(count - len(data))
            assert chunk, "connection closed"
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()


def kio_request(api: str, version: int, values: dict):
    key = next(k for k, name in api_key_map.items() if name == api)
    return build(load_request_schema(key, version), values)
