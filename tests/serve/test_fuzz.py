"""Bad bytes on one connection end at most that connection: random frames, mutated valid
frames, oversized and truncated frames, unknown APIs. After each, a second, well-behaved
connection still gets its ApiVersions answer, and the server keeps running."""

from __future__ import annotations

import socket
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("kio")

from kafka_rebalance.serve import Broker  # noqa: E402

pytestmark = pytest.mark.broker


def _api_versions_v3(correlation_id: int) -> bytes:
    """ApiVersions v3 (header v2: client id "fuzz"; client software "fuz" "0.1")."""
    body = struct.pack(">hhi", 18, 3, correlation_id) + struct.pack(">h", 4) + b"fuzz" + b"\x00"
    body += b"\x04fuz" + b"\x040.1" + b"\x00"
    return struct.pack(">i", len(body)) + body


# Valid requests to mutate: ApiVersions v3, Metadata v1 (all topics), FindCoordinator v1, Heartbeat v0.
VALID = [
    _api_versions_v3(7),
    struct.pack(">i", 14) + struct.pack(">hhih", 3, 1, 1, 4) + b"fuzz" + struct.pack(">i", -1),
    struct.pack(">i", 16) + struct.pack(">hhih", 10, 1, 2, 0) + struct.pack(">h", 1) + b"g" + b"\x00",
    struct.pack(">i", 25) + struct.pack(">hhih", 12, 0, 3, 0) + struct.pack(">h", 1) + b"g" + struct.pack(">i", 1)
    + struct.pack(">h", 4) + b"m-id",
]


def _read_response(sock: socket.socket) -> bytes:
    size = struct.unpack(">i", _read_exactly(sock, 4))[0]
    return _read_exactly(sock, size)


def _read_exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def _still_serves(bootstrap: str) -> None:
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(_api_versions_v3(99))
        response = _read_response(sock)
    correlation_id, error_code = struct.unpack_from(">ih", response)
    assert (correlation_id, error_code) == (99, 0)


def _send_and_drain(bootstrap: str, data: bytes) -> None:
    """Sends ``data``, half-closes, and reads whatever comes back until the server closes or goes quiet."""
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.settimeout(0.5)
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(65536):
                pass
        except (TimeoutError, ConnectionError):
            pass


@pytest.fixture(scope="module")
def fuzzed():
    with Broker(max_request_bytes=64 * 1024) as broker:
        yield broker


def _mutate(frame: bytes, data: st.DataObject) -> bytes:
    mutated = bytearray(frame)
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        position = data.draw(st.integers(0, max(len(mutated) - 1, 0)))
        if kind == "flip" and mutated:
            mutated[position] = data.draw(st.integers(0, 255))
        elif kind == "cut":
            del mutated[position:position + data.draw(st.integers(1, 8))]
        else:
            mutated[position:position] = data.draw(st.binary(min_size=1, max_size=8))
    return bytes(mutated)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_frames_harm_no_other_connection(fuzzed, data):
    frame = _mutate(data.draw(st.sampled_from(VALID)), data)
    _send_and_drain(fuzzed.bootstrap, frame)
    _still_serves(fuzzed.bootstrap)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=300))
def test_random_bytes_harm_no_other_connection(fuzzed, raw):
    _send_and_drain(fuzzed.bootstrap, raw)
    _still_serves(fuzzed.bootstrap)


def _connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=5)


def test_a_frame_over_the_limit_closes_only_its_connection(fuzzed):
    with _connect(fuzzed.bootstrap) as sock:
        sock.sendall(struct.pack(">i", 64 * 1024 + 1) + b"\0" * 16)
        assert sock.recv(16) == b""
    _still_serves(fuzzed.bootstrap)


def test_an_unknown_api_versions_version_is_answered_in_v0_with_unsupported_version(fuzzed):
    body = struct.pack(">hhih", 18, 99, 5, 0) + b"\x00\x00\x00"
    with _connect(fuzzed.bootstrap) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        response = _read_response(sock)
    correlation_id, error_code, count = struct.unpack_from(">ihi", response)
    assert (correlation_id, error_code) == (5, 35)
    keys = {struct.unpack_from(">h", response, 10 + 6 * i)[0] for i in range(count)}
    assert {0, 1, 3, 11, 14, 18, 68} <= keys


def test_an_unknown_api_key_closes_its_connection(fuzzed):
    body = struct.pack(">hhih", 999, 0, 5, 0)
    with _connect(fuzzed.bootstrap) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        assert sock.recv(16) == b""
    _still_serves(fuzzed.bootstrap)


def test_requests_on_one_connection_are_answered_in_order(fuzzed):
    with _connect(fuzzed.bootstrap) as sock:
        sock.sendall(b"".join(_api_versions_v3(i) for i in range(5)))
        assert [struct.unpack_from(">i", _read_response(sock))[0] for _ in range(5)] == list(range(5))
