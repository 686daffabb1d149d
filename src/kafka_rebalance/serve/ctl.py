"""The control socket of a running ``serve`` (``serve --control PATH``, ``serve ctl``): a unix
socket only this machine's users with access to PATH reach. One JSON object per line each way:
the request is an action in the script's words (``serve/control.py``), e.g.
``{"expire": {"group": "g", "client_id": "c1"}}``; the answer ``{"ok": true, "done": "..."}``
or ``{"ok": false, "error": "..."}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import stat
from typing import Any

from kafka_rebalance.model import InvalidInput
from kafka_rebalance.serve.broker import BrokerState
from kafka_rebalance.serve.control import ControlError, parse_action, run_action

MAX_LINE_BYTES = 64 * 1024
TIMEOUT_S = 10.0


async def start_control(state: BrokerState, path: str) -> asyncio.Server:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                writer.write(json.dumps(answer(state, line)).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, ValueError):
            pass  # the client went away, or sent a line over the limit
        finally:
            writer.close()

    if os.path.exists(path) and stat.S_ISSOCK(os.stat(path).st_mode):
        os.unlink(path)  # a previous serve's, left behind by a kill
    return await asyncio.start_unix_server(serve, path, limit=MAX_LINE_BYTES)


def stop_control(server: asyncio.Server, path: str) -> None:
    server.close()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def answer(state: BrokerState, line: bytes) -> dict[str, Any]:
    try:
        request = json.loads(line)
        if not isinstance(request, dict):
            raise InvalidInput("request", "expected a JSON object")
        return {"ok": True, "done": run_action(state, parse_action(request))}
    except json.JSONDecodeError as error:
        return {"ok": False, "error": f"request: not JSON ({error.msg})"}
    except InvalidInput as error:
        return {"ok": False, "error": str(error)}
    except ControlError as error:
        return {"ok": False, "error": str(error)}


def send(path: str, request: dict[str, Any]) -> dict[str, Any]:
    """One request to the control socket at ``path``, and its answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(TIMEOUT_S)
        connection.connect(path)
        connection.sendall(json.dumps(request).encode() + b"\n")
        received = b""
        while not received.endswith(b"\n"):
            chunk = connection.recv(MAX_LINE_BYTES)
            if not chunk:
                break
            received += chunk
    answered = json.loads(received)
    assert isinstance(answered, dict)
    return answered
