"""Faults on the group APIs' responses: for a while, one API's responses
are delayed or dropped.

The request still reaches the coordinator (its effects happen); only its answer is late or never
written. A dropped response holds its connection as a lost TCP segment would: the connection's
next request is not read (requests are answered in order), so the client's request timeout ends
that connection, as it would against a broker whose answer never came.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from kafka_rebalance.serve.codec import Request
from kafka_rebalance.serve.groups import Values

Handler = Callable[[Request, str], Awaitable[Values | None]]

# The group APIs whose responses a fault can delay or drop, by the name the script uses.
GROUP_APIS: dict[int, str] = {8: "offset_commit", 9: "offset_fetch", 10: "find_coordinator", 11: "join_group",
                              12: "heartbeat", 13: "leave_group", 14: "sync_group", 15: "describe_groups",
                              16: "list_groups", 42: "delete_groups", 68: "consumer_group_heartbeat",
                              69: "consumer_group_describe"}


@dataclass(frozen=True, slots=True)
class ResponseFault:
    """``delay_ms`` > 0: each response waits that long; None: responses are dropped."""

    delay_ms: int | None
    until: float  # loop time


class ResponseFaults:
    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.active: dict[str, ResponseFault] = {}

    def delay(self, api: str, delay_ms: int, for_ms: int) -> None:
        self.active[api] = ResponseFault(delay_ms, self.loop.time() + for_ms / 1000)

    def drop(self, api: str, for_ms: int) -> None:
        self.active[api] = ResponseFault(None, self.loop.time() + for_ms / 1000)

    def wrap(self, api: str, handler: Handler) -> Handler:
        """``handler`` with this API's faults applied to its responses."""

        async def answer(request: Request, connection: str) -> Values | None:
            values = await handler(request, connection)
            fault = self.active.get(api)
            if fault is None or self.loop.time() >= fault.until:
                return values
            if fault.delay_ms is None:
                await self.loop.create_future()  # never answered: the broker's stop cancels it
            else:
                await asyncio.sleep(fault.delay_ms / 1000)
            return values

        return answer
