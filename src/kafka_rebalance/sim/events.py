"""The simulators' own events: what their queues hold, in virtual time order.

A run reads as a sequence of these named things happening. Each is a frozen dataclass (but
``AppWakes``, a named tuple); the classic side (``sim.classic_side``) and the consumer-group
side (``sim.consumer_group``) dispatch them with ``match`` (an event nobody handles is an error). ``SimEvent`` is the classic
side's closed set, ``ConsumerGroupEvent`` the consumer-group simulator's; the scenario, the
application loop and the process life cycle are the same events in both. Timer events
(``CoordinatorTimerFires``, ``ConsumerTimerFires``) double as the keys of the armed-timer
table: arming the same timer again replaces its deadline, cancelling it removes it. They
compare by identity (cheap hashing on the hot path); each side keeps one per owner and timer,
so identity is value equality there.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from kafka_rebalance.protocol.classic.consumer_events import ConsumerTimer
from kafka_rebalance.protocol.classic.coordinator_events import (
    CoordinatorTimer,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    GroupResponse,
    RequestReceived,
)
from kafka_rebalance.protocol.modern.consumer import coordinator_events as ce
from kafka_rebalance.protocol.modern.consumer import member_events as me
from kafka_rebalance.protocol.modern.shard import ConsumerGroupTimer


class AppActivity(Enum):
    BATCH_DONE = "batch done"  # the application finished processing its batch and polls again
    IDLE_POLL = "idle poll"  # a caught-up application polls again
    CALLBACKS_DONE = "callbacks done"  # the rebalance listener returned (consumer-group simulator)


class Interruption(Enum):
    PAUSE = "pause"  # the whole process is frozen (a long GC pause)
    STALL = "stall"  # the poll loop is stuck; the heartbeat thread goes on


@dataclass(frozen=True, slots=True)
class RequestArrives:
    """A consumer's group request reaches broker ``broker_id`` (as the coordinator's input)."""

    broker_id: int
    received: RequestReceived


@dataclass(frozen=True, slots=True)
class FindCoordinatorArrives:
    """A consumer's FindCoordinator reaches a broker (any broker answers it)."""

    connection: str
    request: FindCoordinatorRequest


@dataclass(frozen=True, slots=True)
class ResponseArrives:
    connection: str
    response: GroupResponse | FindCoordinatorResponse


@dataclass(frozen=True, slots=True, eq=False)
class CoordinatorTimerFires:
    broker_id: int
    timer: CoordinatorTimer


@dataclass(frozen=True, slots=True, eq=False)
class ConsumerTimerFires:
    connection: str
    timer: ConsumerTimer


@dataclass(frozen=True, slots=True)
class ScenarioStep:
    """The scenario's event number ``index`` happens."""

    index: int


class AppWakes(NamedTuple):
    """The application loop of a consumer that processes records moves on (``token`` guards
    against wake-ups of a loop that was restarted since). The most frequent event of a run (every
    poll of a slow consumer): a named tuple, immutable as the others and cheaper to build."""

    connection: str
    token: int
    activity: AppActivity


@dataclass(frozen=True, slots=True)
class MetadataRefresh:
    """metadata.max.age.ms passed: the consumer refreshes its cluster metadata."""

    connection: str


@dataclass(frozen=True, slots=True)
class ProcessResumes:
    connection: str
    interruption: Interruption


@dataclass(frozen=True, slots=True)
class CoordinatorLoaded:
    """Broker ``broker_id`` finished reading ``__consumer_offsets`` partition ``partition``, a
    load begun when the partition's leadership moved for the ``leader_epoch``-th time."""

    broker_id: int
    partition: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class ProcessStarts:
    name: str


@dataclass(frozen=True, slots=True)
class GroupRequestArrives:
    """A consumer's request reaches the consumer group's coordinator (``sim.consumer_group``);
    with ``ignore_response`` its answer is not sent back (the leave heartbeat of an expired
    poll timer)."""

    connection: str
    request: ce.Request
    ignore_response: bool
    sent_ms: int  # when it left (a lost answer times the request out from then)


@dataclass(frozen=True, slots=True)
class RequestTimesOut:
    """request.timeout.ms has passed since a consumer-protocol member's heartbeat on ``wire`` (one
    of ``connection``'s connections) left, and its answer will never come: the request or its
    answer was lost."""

    connection: str
    wire: str


@dataclass(frozen=True, slots=True)
class GroupResponseArrives:
    """The group coordinator's answer reaches the consumer on ``connection`` (a classic
    coordinator's, to a classic member, before the group converts)."""

    connection: str
    response: ce.Response | GroupResponse


GroupTimer = ConsumerGroupTimer | CoordinatorTimer  # the consumer group's, or the classic coordinator's
MemberTimer = me.Timer | ConsumerTimer  # a classic member's, in a rolling upgrade


@dataclass(frozen=True, slots=True)
class GroupTimerFires:
    """A timer of the group's coordinator is due; one armed before the coordinator moved
    (an older ``coordinator_epoch``) is void."""

    coordinator_epoch: int
    timer: GroupTimer


@dataclass(frozen=True, slots=True, eq=False)
class MemberTimerFires:
    """A timer of the consumer on ``connection`` is due (also the key of its armed deadline:
    the simulator keeps one per consumer and timer, so identity is value equality there)."""

    connection: str
    timer: MemberTimer


DeferrableEvent = ResponseArrives | ConsumerTimerFires  # held while a process is paused (with AppWakes)
SimEvent = (RequestArrives | FindCoordinatorArrives | ResponseArrives | CoordinatorTimerFires | ConsumerTimerFires | ScenarioStep | AppWakes
            | MetadataRefresh | ProcessResumes | CoordinatorLoaded | ProcessStarts)
# held while a process is paused (with AppWakes)
ConsumerGroupDeferrable = GroupResponseArrives | MemberTimerFires | RequestTimesOut
ConsumerGroupEvent = (GroupRequestArrives | GroupResponseArrives | RequestTimesOut | GroupTimerFires | MemberTimerFires
                      | ScenarioStep | AppWakes | MetadataRefresh | ProcessStarts | ProcessResumes | CoordinatorLoaded)
