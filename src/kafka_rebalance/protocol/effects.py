"""Outputs shared by every machine of the protocol layer.

Machines never read clocks: a machine that wants to be woken emits ``ArmTimer(timer,
deadline_ms)``; the driver hands ``timer`` (a frozen, hashable dataclass of the machine's own
events module) back to ``handle`` at ``deadline_ms``. Arming a timer that is already armed
replaces its deadline (timers compare by value); ``CancelTimer`` disarms it. Log records go
out as ``Log``.

``StateTable`` is the shared shape of Kafka's state enums with their valid previous states
(``ClassicGroupState``, ``ClassicMemberState``, ``ConsumerMemberState``, ``MemberAssignmentState``): ``table.check(current, target)`` raises
``IllegalStateTransition`` for a transition the table does not list.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Generic, TypeVar

from kafka_rebalance.protocol.errors import IllegalStateTransition
from kafka_rebalance.protocol.logrecords import LogRecord

TimerT = TypeVar("TimerT", bound=Hashable)
StateT = TypeVar("StateT", bound=Enum)


@dataclass(frozen=True, slots=True)
class ArmTimer(Generic[TimerT]):
    """Wake me with ``timer`` at ``deadline_ms`` (replacing the deadline if already armed)."""

    timer: TimerT
    deadline_ms: int


@dataclass(frozen=True, slots=True)
class CancelTimer(Generic[TimerT]):
    """Disarm ``timer`` (nothing happens if it is not armed)."""

    timer: TimerT


@dataclass(frozen=True, slots=True)
class Log:
    """A coordinator log record; ``protocol.logformat`` renders it in a Kafka log format."""

    record: LogRecord


class StateTable(Generic[StateT]):
    """Each state and the states it may be entered from."""

    __slots__ = ("name", "previous")

    def __init__(self, name: str, previous: Mapping[StateT, frozenset[StateT]]):
        self.name = name
        self.previous = dict(previous)

    def check(self, current: StateT, target: StateT) -> StateT:
        """``target`` if ``current -> target`` is allowed; raises IllegalStateTransition otherwise."""
        if current not in self.previous.get(target, frozenset()):
            raise IllegalStateTransition(f"{self.name}: {current.name} -> {target.name} is not a valid transition")
        return target
