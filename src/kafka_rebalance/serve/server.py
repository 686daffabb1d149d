"""The TCP side: Kafka's frames on asyncio streams, one task per connection.

As Kafka's ``SocketServer`` mutes a channel while its request is processed, a connection's
requests are handled one at a time, in order, and each response is written before the next
request is read. A frame larger than ``max_request_bytes`` (``socket.request.max.bytes``) or of
negative size, a frame that does not parse, a version this broker does not serve: the
connection is closed (Kafka's ``InvalidReceiveException`` / ``InvalidRequestException``), except
an ApiVersions of an unknown version, answered in v0 with UNSUPPORTED_VERSION and the versions
this broker serves (``ApiVersionsRequest``'s rule, KIP-511). Whatever happens on one connection
ends at most that connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import struct
import threading
from collections.abc import Callable
from types import TracebackType
from typing import TypeVar

from kio.schema.errors import ErrorCode

from kafka_rebalance.serve.broker import NODE_ID, BrokerConfig, BrokerState
from kafka_rebalance.serve.codec import MalformedRequest, UnsupportedApi, decode_request, encode_response
from kafka_rebalance.serve.control import Action as ControlAction
from kafka_rebalance.serve.control import (
    AddPartitions,
    CoordinatorFailover,
    Delay,
    Drop,
    Expire,
    ForceRebalance,
    group_state,
    run_action,
)
from kafka_rebalance.serve.ctl import start_control, stop_control
from kafka_rebalance.serve.logfile import CoordinatorLog
from kafka_rebalance.serve.script import Script, ScriptRunner

T = TypeVar("T")
API_VERSIONS_KEY = 18
START_TIMEOUT_S = 10.0
logger = logging.getLogger(__name__)


class KafkaServer:
    """One broker's listener and its connections."""

    def __init__(self, state: BrokerState):
        self.state = state
        self._connection_ids = itertools.count(1)
        self._open: dict[asyncio.Task[None], asyncio.StreamWriter] = {}

    async def serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = f"c{next(self._connection_ids)}"
        task = asyncio.current_task()
        assert task is not None
        self._open[task] = writer
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                if not 0 <= size <= self.state.config.max_request_bytes:
                    raise MalformedRequest(f"frame size {size} (limit {self.state.config.max_request_bytes})")
                response = await self._respond(await reader.readexactly(size), connection)
                if response is not None:
                    writer.write(response)
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away
        except MalformedRequest as error:
            logger.info("closing %s: %s", connection, error)
        except asyncio.CancelledError:
            pass  # the broker stops
        except Exception as error:  # a request this broker cannot serve must not end the others
            logger.warning("closing %s after %s: %s", connection, type(error).__name__, error)
        finally:
            del self._open[task]
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def close_connections(self) -> None:
        """Ends every connection: a request waiting (a fetch, a JoinGroup) is dropped."""
        tasks = list(self._open)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _respond(self, frame: bytes, connection: str) -> bytes | None:
        try:
            request = decode_request(frame)
        except UnsupportedApi as unknown:
            return self._unsupported(unknown.api_key, unknown.api_version, unknown.correlation_id)
        if not self.state.supports(request.api_key, request.api_version):
            return self._unsupported(request.api_key, request.api_version, request.correlation_id)
        handler = self.state.apis[request.api_key][2]
        values = await handler(request, f"{connection}:{request.correlation_id}")
        if values is None:
            return None
        return encode_response(request.api_key, request.api_version, request.correlation_id, values)

    def _unsupported(self, api_key: int, api_version: int, correlation_id: int) -> bytes:
        if api_key != API_VERSIONS_KEY:
            raise MalformedRequest(f"api key {api_key} version {api_version} is not served")
        return encode_response(API_VERSIONS_KEY, 0, correlation_id,
                               self.state.api_versions_values(ErrorCode.unsupported_version))


async def run_broker(config: BrokerConfig, started: Callable[[BrokerState], None], stop: asyncio.Event,
                     script: Script | None = None, control_path: str | None = None) -> None:
    """Serves until ``stop`` is set; ``started`` gets the state, whose config has the bound port.
    ``script``'s events run from the start; ``control_path``: the control socket (``serve/ctl.py``)."""
    loop = asyncio.get_running_loop()
    holder: list[KafkaServer] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await holder[0].serve_connection(reader, writer)

    listener = await asyncio.start_server(accept, config.host, config.port, start_serving=False)
    bound = dataclasses.replace(config, port=listener.sockets[0].getsockname()[1])
    with contextlib.ExitStack() as files:
        log_sink = None
        if config.log_path is not None:
            out = files.enter_context(open(config.log_path, "a", encoding="utf-8"))
            log_sink = CoordinatorLog(out, loop, NODE_ID).write
        state = BrokerState(bound, loop, log_sink)
        holder.append(KafkaServer(state))
        control = await start_control(state, control_path) if control_path is not None else None
        async with listener:
            await listener.start_serving()
            if script is not None:
                ScriptRunner(state, script)
            started(state)
            await stop.wait()
            if control is not None and control_path is not None:
                stop_control(control, control_path)
            await holder[0].close_connections()
        state.groups.close()


class Broker:
    """The broker in a background thread with its own event loop, for tests and notebooks::

        with Broker() as broker:
            KafkaProducer(bootstrap_servers=broker.bootstrap)
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, num_partitions: int = 1,
                 group_initial_rebalance_delay_ms: int = 3000, max_request_bytes: int = 100 * 1024 * 1024,
                 retention_bytes: int = 64 * 1024 * 1024, log_path: str | None = None,
                 consumer_heartbeat_interval_ms: int = 5000, consumer_session_timeout_ms: int = 45000,
                 script: Script | None = None, control_path: str | None = None):
        self.script = script
        self.control_path = control_path
        self.config = BrokerConfig(host, port, num_partitions, retention_bytes, max_request_bytes,
                                   group_initial_rebalance_delay_ms, log_path, consumer_heartbeat_interval_ms,
                                   consumer_session_timeout_ms)
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._state: BrokerState | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.config.host}:{self.config.port}"

    def __enter__(self) -> Broker:
        self._thread = threading.Thread(target=self._run, name="kafka-rebalance-serve", daemon=True)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_S):
            raise RuntimeError(f"the broker did not start within {START_TIMEOUT_S} s")
        if self._error is not None:
            raise RuntimeError(f"the broker did not start: {self._error}") from self._error
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(START_TIMEOUT_S)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            await run_broker(self.config, self._started, self._stop, self.script, self.control_path)

        try:
            asyncio.run(main())
        except BaseException as error:  # reported to the thread that waits in __enter__
            self._error = error
        finally:
            self._ready.set()

    def _started(self, state: BrokerState) -> None:
        self.config = state.config
        self._state = state
        self._ready.set()

    def call(self, function: Callable[[BrokerState], T]) -> T:
        """``function(state)`` run on the broker's loop, whose alone the state is (a test's look
        at the coordinator's groups, say)."""
        assert self._loop is not None and self._state is not None, "the broker is not running"
        state = self._state

        async def run() -> T:
            return function(state)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(START_TIMEOUT_S)

    def create_topic(self, name: str, partitions: int) -> None:
        """A topic, before any client asks for it (so a group's first assignment sees its partitions)."""
        self.call(lambda state: state.create_topic(name, partitions))

    def group_state(self, group_id: str) -> tuple[str, int] | None:
        """(state, generation) of a classic group, (state, group epoch) of a consumer group, as the
        coordinator holds them; None: no such group."""
        return self.call(lambda state: group_state(state, group_id))

    # ------------------------------------------------------------------ rebalances on command (serve/control.py)

    def expire_member(self, group: str, *, client_id: str | None = None, instance_id: str | None = None,
                      member_id: str | None = None) -> str:
        """The member's session ends now (named by exactly one of the three)."""
        expire = Expire(group=group, client_id=client_id, instance_id=instance_id, member_id=member_id)
        return self.act(ControlAction(expire=expire))

    def force_rebalance(self, group: str) -> str:
        """A Stable classic group rebalances (its leader's rejoin, as Kafka sees it)."""
        return self.act(ControlAction(force_rebalance=ForceRebalance(group=group)))

    def delay_responses(self, api: str, delay_ms: int, for_ms: int) -> str:
        """``api``'s responses (``faults.GROUP_APIS``: join_group, heartbeat, ...) wait ``delay_ms``."""
        return self.act(ControlAction(delay=Delay(api=api, ms=delay_ms, for_ms=for_ms)))

    def drop_responses(self, api: str, for_ms: int) -> str:
        return self.act(ControlAction(drop=Drop(api=api, for_ms=for_ms)))

    def move_coordinator(self, error: str = "NOT_COORDINATOR", for_ms: int = 1000) -> str:
        """``error`` for ``for_ms``, then every group reloaded from its records."""
        return self.act(ControlAction(coordinator_failover=CoordinatorFailover(error=error, for_ms=for_ms)))

    def add_partitions(self, topic: str, count: int) -> str:
        return self.act(ControlAction(add_partitions=AddPartitions(topic=topic, count=count)))

    def set_server_assignor(self, name: str) -> str:
        """The consumer groups' default server assignor (``group.consumer.assignors``' first)."""
        return self.act(ControlAction(server_assignor=name))

    def act(self, action: ControlAction) -> str:
        """Any action of ``serve/control.py`` (a script event's action part); raises ``ControlError``."""
        return self.call(lambda state: run_action(state, action))
