"""Rebalances on command: the faults a script, ``serve ctl`` and the
``Broker`` methods force on a running broker, one action at a time.

An action is one mapping in the scenario's words (``docs/scenario.md``)::

    expire: {group: g, client_id: c1}          # or instance_id / member_id
    force_rebalance: {group: g}
    delay: {api: heartbeat, ms: 500, for_ms: 5000}
    drop: {api: sync_group, for_ms: 5000}
    coordinator_failover: {error: NOT_COORDINATOR, for_ms: 2000}   # or COORDINATOR_LOAD_IN_PROGRESS
    add_partitions: {topic: t0, count: 6}
    server_assignor: range

What needs the coordinator goes through its entry point: an expired member is its session timer
fired now (a classic ``SessionExpired``, a consumer group's ``SessionTimeout``); a forced
rebalance of a classic group is the coordinator's ``RebalanceRequested`` input, which takes a
Stable group to PreparingRebalance as Kafka's ``prepareRebalance`` does, and every member learns
it from its next heartbeat (REBALANCE_IN_PROGRESS) and rejoins with what it owns.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kafka_rebalance.model import InvalidInput
from kafka_rebalance.protocol.classic import coordinator_events as cl
from kafka_rebalance.protocol.classic.group import GroupState
from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.modern.consumer import coordinator_events as ce
from kafka_rebalance.protocol.modern.shard import ConsumerGroupTimer
from kafka_rebalance.serve.broker import BrokerState
from kafka_rebalance.serve.faults import GROUP_APIS

FORCED_REASON = "forced by kafka-rebalance serve"


class ControlError(Exception):
    """An action this broker cannot carry out now (one line, for ``serve ctl`` and the script)."""


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Expire(StrictModel):
    group: str
    client_id: str | None = None
    instance_id: str | None = None
    member_id: str | None = None

    @model_validator(mode="after")
    def _one_key(self) -> Expire:
        if [self.client_id, self.instance_id, self.member_id].count(None) != 2:
            raise ValueError("name the member by exactly one of client_id, instance_id, member_id")
        return self


class ForceRebalance(StrictModel):
    group: str


class Delay(StrictModel):
    api: Literal[tuple(GROUP_APIS.values())]  # type: ignore[valid-type]
    ms: int = Field(gt=0)
    for_ms: int = Field(gt=0)


class Drop(StrictModel):
    api: Literal[tuple(GROUP_APIS.values())]  # type: ignore[valid-type]
    for_ms: int = Field(gt=0)


class CoordinatorFailover(StrictModel):
    error: Literal["NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS"] = "NOT_COORDINATOR"
    for_ms: int = Field(default=1000, ge=0)


class AddPartitions(StrictModel):
    topic: str
    count: int = Field(gt=0)


class Action(StrictModel):
    """Exactly one of the fields."""

    expire: Expire | None = None
    force_rebalance: ForceRebalance | None = None
    delay: Delay | None = None
    drop: Drop | None = None
    coordinator_failover: CoordinatorFailover | None = None
    add_partitions: AddPartitions | None = None
    server_assignor: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Action:
        named = [name for name in ACTION_NAMES if getattr(self, name) is not None]
        if len(named) != 1:
            raise ValueError(f"one action of {', '.join(ACTION_NAMES)} (got {', '.join(named) or 'none'})")
        return self


ACTION_NAMES = ("expire", "force_rebalance", "delay", "drop", "coordinator_failover", "add_partitions",
                "server_assignor")


def parse_action(source: str | dict[str, Any]) -> Action:
    """An action from its YAML/JSON text or mapping; bad input raises ``InvalidInput``."""
    data = yaml.safe_load(source) if isinstance(source, str) else source
    try:
        return Action.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "action"
        raise InvalidInput(where, first["msg"]) from None


def run_action(state: BrokerState, action: Action) -> str:
    """Carries ``action`` out on the broker's loop; returns what it did, in one line."""
    if action.expire is not None:
        return expire_member(state, action.expire)
    if action.force_rebalance is not None:
        return force_rebalance(state, action.force_rebalance.group)
    if action.delay is not None:
        state.response_faults.delay(action.delay.api, action.delay.ms, action.delay.for_ms)
        return f"{action.delay.api} responses delayed {action.delay.ms} ms for {action.delay.for_ms} ms"
    if action.drop is not None:
        state.response_faults.drop(action.drop.api, action.drop.for_ms)
        return f"{action.drop.api} responses dropped for {action.drop.for_ms} ms"
    if action.coordinator_failover is not None:
        return coordinator_failover(state, action.coordinator_failover)
    if action.add_partitions is not None:
        return add_partitions(state, action.add_partitions)
    assert action.server_assignor is not None
    return set_server_assignor(state, action.server_assignor)


def expire_member(state: BrokerState, expire: Expire) -> str:
    """The member's session timer fired now. A classic member waiting for its JoinGroup or
    SyncGroup response stays (Kafka keeps such members alive); the timer is then re-armed."""
    groups = state.groups
    consumer_group = groups.shard.consumer_groups.get(expire.group)
    if consumer_group is not None:
        ids = [m.member_id for m in consumer_group.members.values()
               if _matches(expire, m.member_id, m.instance_id, m.client_id)]
        for member_id in ids:
            groups.fire_timer(ConsumerGroupTimer(expire.group, ce.SessionTimeout(member_id)))
        return _expired(expire, ids)
    classic = groups.shard.classic.group(expire.group)
    if classic is None:
        raise ControlError(f"no group {expire.group}")
    members = [m for m in classic.members.values()
               if _matches(expire, m.member_id, m.group_instance_id, m.client_id)]
    now = groups.now_ms()
    for member in members:
        # The coordinator expires a session at its deadline (``shouldKeepAlive``): the timer
        # is delivered as of that deadline, which is when it would have fired.
        groups.fire_timer(cl.SessionExpired(expire.group, member.member_id), max(now, member.session_deadline))
    gone = [m.member_id for m in members if m.member_id not in classic.members]
    return _expired(expire, gone)


def _matches(expire: Expire, member_id: str, instance_id: str | None, client_id: str) -> bool:
    return ((expire.member_id is not None and member_id == expire.member_id)
            or (expire.instance_id is not None and instance_id == expire.instance_id)
            or (expire.client_id is not None and client_id == expire.client_id))


def _expired(expire: Expire, member_ids: list[str]) -> str:
    if not member_ids:
        raise ControlError(f"no member of {expire.group} expired (matching {expire.model_dump(exclude_none=True)}; "
                           "a member waiting for its JoinGroup or SyncGroup response is kept alive)")
    return f"expired {', '.join(member_ids)} of {expire.group}"


def group_state(state: BrokerState, group_id: str) -> tuple[str, int] | None:
    shard = state.groups.shard
    consumer_group = shard.consumer_groups.get(group_id)
    if consumer_group is not None:
        return consumer_group.state.value, consumer_group.group_epoch
    classic = shard.classic.group(group_id)
    return None if classic is None else (classic.state.value, classic.generation)


def force_rebalance(state: BrokerState, group_id: str) -> str:
    groups = state.groups
    if group_id in groups.shard.consumer_groups:
        raise ControlError(f"{group_id} is a consumer group (KIP-848): Kafka rebalances it only when its members, "
                           "subscriptions or topics change (expire a member, add partitions)")
    group = groups.shard.classic.group(group_id)
    if group is None:
        raise ControlError(f"no group {group_id}")
    if group.state is not GroupState.STABLE or group.leader is None:
        raise ControlError(f"{group_id} is {group.state.value}: only a Stable group can be forced to rebalance")
    generation = group.generation
    groups.feed(cl.RebalanceRequested(group_id, FORCED_REASON))
    return f"{group_id} rebalances (generation {generation} ends)"


def coordinator_failover(state: BrokerState, failover: CoordinatorFailover) -> str:
    """The coordinator moves: ``error`` for ``for_ms``, then the groups are loaded from their records."""
    groups = state.groups
    if groups.unavailable is not None:
        raise ControlError("the coordinator is moving already")
    code = ErrorCode[failover.error]
    groups.move_coordinator(code, state.loop.time() + failover.for_ms / 1000)
    state.loop.call_later(failover.for_ms / 1000, groups.reload_from_records)
    return f"coordinator moves: {failover.error} for {failover.for_ms} ms, then groups reloaded from their records"


def add_partitions(state: BrokerState, add: AddPartitions) -> str:
    topic = state.topics.get(add.topic)
    if topic is None:
        raise ControlError(f"no topic {add.topic}")
    if add.count <= len(topic.partitions):
        raise ControlError(f"{add.topic} has {len(topic.partitions)} partitions; {add.count} is no increase")
    state.add_partitions(topic, add.count)
    return f"{add.topic} has {add.count} partitions"


def set_server_assignor(state: BrokerState, name: str) -> str:
    """``group.consumer.assignors`` with ``name`` first: the assignor of consumer groups whose
    members name none, from their next target assignment on (a dynamic broker config)."""
    shard = state.groups.shard
    if name not in shard.consumer_config.assignors:
        raise ControlError(f"server assignor {name}: not one of {', '.join(shard.consumer_config.assignors)}")
    order = (name, *(a for a in shard.consumer_config.assignors if a != name))
    shard.consumer_config = replace(shard.consumer_config, assignors=order)
    for group in shard.consumer_groups.values():
        group.config = shard.consumer_config
    return f"server assignor {name}"
