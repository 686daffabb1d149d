"""``serve --script FILE``: actions (``serve/control.py``) at a time, or when a group becomes
stable or reaches a number of members. YAML in the scenario's words::

    events:
      - {at_ms: 5000, expire: {group: g, client_id: c1}}            # ms after the broker started
      - {when: {group: g, stable: true}, force_rebalance: {group: g}}
      - {when: {group: g, members: 3}, coordinator_failover: {error: NOT_COORDINATOR, for_ms: 2000}}

A ``when`` event fires once, the first time its condition holds after an input the coordinator
handled; events fire in the order they are written when several are due together. An action that
cannot be carried out then (``ControlError``) is logged and the script goes on.
"""

from __future__ import annotations

import logging
from pathlib import Path

import yaml
from pydantic import Field, ValidationError, model_validator

from kafka_rebalance.model import InvalidInput
from kafka_rebalance.protocol.classic.group import GroupState
from kafka_rebalance.serve.broker import BrokerState
from kafka_rebalance.serve.control import Action, ControlError, StrictModel, run_action

logger = logging.getLogger(__name__)
STABLE = GroupState.STABLE.value  # a consumer group's stable state has the same name


class When(StrictModel):
    group: str
    stable: bool | None = None
    members: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _one_condition(self) -> When:
        if (self.stable is None) == (self.members is None):
            raise ValueError("when: give `stable: true` or `members: N`")
        if self.stable is False:
            raise ValueError("when: `stable` can only be true")
        return self


class ScriptEvent(Action):
    at_ms: int | None = Field(default=None, ge=0)
    when: When | None = None

    @model_validator(mode="after")
    def _one_trigger(self) -> ScriptEvent:
        if (self.at_ms is None) == (self.when is None):
            raise ValueError("each event has either at_ms or when")
        return self


class Script(StrictModel):
    events: list[ScriptEvent]


def load_script(path: str | Path) -> Script:
    """The script in ``path``; bad input raises ``InvalidInput`` naming the field."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise InvalidInput("script", f"invalid YAML: {getattr(error, 'problem', None) or type(error).__name__}") from None
    try:
        return Script.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        raise InvalidInput(".".join(str(p) for p in first["loc"]) or "script", first["msg"]) from None


def group_condition(state: BrokerState, when: When) -> bool:
    shard = state.groups.shard
    consumer = shard.consumer_groups.get(when.group)
    if consumer is not None:
        group_state, count = consumer.state.value, len(consumer.members)
    else:
        classic = shard.classic.group(when.group)
        if classic is None:
            return False
        group_state, count = classic.state.value, len(classic.members)
    if when.members is not None:
        return count >= when.members
    return group_state.lower() == STABLE.lower()


class ScriptRunner:
    """Schedules a script's events on the broker's loop from now (its ``at_ms`` 0)."""

    def __init__(self, state: BrokerState, script: Script):
        self.state = state
        self._start = state.loop.time()
        self._waiting = [(index, event) for index, event in enumerate(script.events) if event.when is not None]
        for index, event in enumerate(script.events):
            if event.at_ms is not None:
                state.loop.call_at(self._start + event.at_ms / 1000, self._fire, index, event)
        if self._waiting:
            state.groups.observers.append(self._check)

    def _check(self) -> None:
        due = [(index, event) for index, event in self._waiting
               if event.when is not None and group_condition(self.state, event.when)]
        if not due:
            return
        self._waiting = [item for item in self._waiting if item not in due]
        if not self._waiting:
            self.state.groups.observers.remove(self._check)
        for index, event in due:
            # Not inside the coordinator's output handling: the action feeds the coordinator itself.
            self.state.loop.call_soon(self._fire, index, event)

    def _fire(self, index: int, event: ScriptEvent) -> None:
        try:
            done = run_action(self.state, event)
        except ControlError as error:
            done = f"not done: {error}"
        logger.info("script event %d: %s", index, done)
