"""The scenario of docs/scenario.md, validated with pydantic.

``load_scenario(path_or_text)`` accepts a path, YAML/JSON text or a dict and raises
``InvalidInput`` with one line naming the field for anything that breaks the contract.

Optional fields beyond the spec (all documented in ``examples/scenarios/README.md``):
- ``config``: ``max_poll_records`` (500), ``heartbeat_with_poll`` (false: KIP-62 background
  heartbeat; true: kafka-python < 1.4, heartbeats only from poll), ``network_latency_ms`` (2),
  ``network_jitter_ms`` (0), ``network_loss`` (0: the chance a request or its response is lost),
  ``network_loss_until_ms`` (none), ``request_timeout_ms`` (30000), ``idle_poll_ms`` (500, how often a caught-up consumer with a
  processing cost polls again), ``offsets_topic_num_partitions`` (50), ``brokers`` (3),
  ``coordinator_load_ms`` (500: a failover leaves the group without coordinator this long),
  ``log_style`` (``modern``, ``legacy`` or ``legacy-old``).
- per consumer: any of ``session_timeout_ms``, ``heartbeat_interval_ms``,
  ``max_poll_interval_ms``, ``max_poll_records``, ``enable_auto_commit``,
  ``auto_commit_interval_ms``, ``heartbeat_with_poll``, ``client_id``; and
  ``start: false`` is not needed: a consumer runs from its ``join`` event.
- per produce entry: ``start_ms`` / ``end_ms``.
- ``end_ms`` defaults to the last event plus 60000.
- ``load``: the load model's produce rates and consumer capacity (``LoadSpec``, docs/scenario.md;
  per consumer ``capacity_records_per_s``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, assert_never

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from kafka_rebalance.assignors import get_assignor
from kafka_rebalance.model import GroupProtocol, InvalidInput, ServerAssignorName
from kafka_rebalance.protocol.logformat import STYLES
from kafka_rebalance.sim.scenario_events import (
    ConsumerCrashes,
    ConsumerDowngrades,
    ConsumerJoins,
    ConsumerLeaves,
    ConsumerPauses,
    ConsumerRestarts,
    ConsumerStalls,
    ConsumerUpgrades,
    CoordinatorFailsOver,
    PartitionsAdded,
    ScenarioEvent,
    SubscriptionChanged,
    TopicCreated,
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SimConfig(_Strict):
    session_timeout_ms: int = Field(45000, gt=0)
    heartbeat_interval_ms: int = Field(3000, gt=0)
    max_poll_interval_ms: int = Field(300000, gt=0)
    group_initial_rebalance_delay_ms: int = Field(3000, ge=0)
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = Field(5000, gt=0)
    metadata_max_age_ms: int = Field(300000, gt=0)
    max_poll_records: int = Field(500, gt=0)
    heartbeat_with_poll: bool = False
    network_latency_ms: int = Field(2, ge=0)
    network_jitter_ms: int = Field(0, ge=0)
    # The chance that a request between a consumer and a broker, or its response, is lost on the
    # network (each message on its own, drawn from the seed), until ``network_loss_until_ms``
    # (None: all run long). Consumers then time their requests out after request.timeout.ms.
    network_loss: float = Field(0, ge=0, lt=1)
    network_loss_until_ms: int | None = Field(None, ge=0)
    request_timeout_ms: int = Field(30000, gt=0)
    idle_poll_ms: int = Field(500, gt=0)
    offsets_topic_num_partitions: int = Field(50, gt=0)
    brokers: int = Field(3, gt=0)
    coordinator_load_ms: int = Field(500, ge=0)
    group_min_session_timeout_ms: int = Field(6000, ge=0)
    group_max_session_timeout_ms: int = Field(1800000, gt=0)
    log_style: str = "modern"
    # KIP-848 consumer groups (group_protocol: consumer): the broker's group.consumer.* settings.
    consumer_heartbeat_interval_ms: int = Field(5000, gt=0)
    consumer_session_timeout_ms: int = Field(45000, gt=0)
    consumer_max_size: int = Field(2**31 - 1, gt=0)
    migration_policy: Literal["disabled", "upgrade", "downgrade", "bidirectional"] = "bidirectional"
    # Work done inside the rebalance listener (flush state, commit): on_partitions_revoked and
    # on_partitions_assigned each take this long per call (0: instant, as before).
    revocation_ms: int = Field(0, ge=0)
    assignment_ms: int = Field(0, ge=0)

    @field_validator("log_style")
    @classmethod
    def _style(cls, value: str) -> str:
        if value not in STYLES:
            raise ValueError(f"unknown log style {value!r} (known: {', '.join(STYLES)})")
        return value


class ConsumerSpec(_Strict):
    id: str = Field(min_length=1)
    strategies: list[str] = Field(default_factory=lambda: ["range", "cooperative-sticky"])
    subscribe: list[str] | None = None
    pattern: str | None = None
    # Kafka refuses an empty group.instance.id (JoinGroupRequest.validateGroupInstanceId).
    group_instance_id: str | None = Field(None, min_length=1)
    processing_ms_per_record: float = Field(0, ge=0)
    client_id: str | None = None
    session_timeout_ms: int | None = Field(None, gt=0)
    heartbeat_interval_ms: int | None = Field(None, gt=0)
    max_poll_interval_ms: int | None = Field(None, gt=0)
    max_poll_records: int | None = Field(None, gt=0)
    enable_auto_commit: bool | None = None
    auto_commit_interval_ms: int | None = Field(None, gt=0)
    heartbeat_with_poll: bool | None = None
    # The load model's processing capacity of this consumer (records/s; default: load.capacity_records_per_s).
    capacity_records_per_s: float | None = Field(None, gt=0, allow_inf_nan=False)
    # Options of its assignors as the leader runs them (load-aware: max_count_skew, min_gain).
    strategy_options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("strategies")
    @classmethod
    def _known_strategies(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("must list at least one strategy")
        for name in value:
            try:
                get_assignor(name)
            except InvalidInput as exc:
                raise ValueError(exc.problem) from None
        return value

    @model_validator(mode="after")
    def _options_fit_the_strategies(self) -> ConsumerSpec:
        for name in self.strategies:
            assignor = get_assignor(name)
            try:
                configured = assignor.configured(self.strategy_options)
            except InvalidInput as exc:
                raise ValueError(f"strategy_options: {exc.problem}") from None
            if configured.protocol is not assignor.protocol:
                raise ValueError(f"strategy_options: may not change {name}'s rebalance protocol (the strategy list "
                                 "decides it)")
        return self

    @field_validator("pattern")
    @classmethod
    def _valid_pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _one_subscription(self) -> ConsumerSpec:
        if (self.subscribe is None) == (self.pattern is None):
            raise ValueError("give exactly one of subscribe (a topic list) or pattern")
        return self

    def setting(self, config: SimConfig, name: str) -> Any:
        own = getattr(self, name)
        return getattr(config, name) if own is None else own


class ProduceSpec(_Strict):
    topic: str
    records_per_s: float = Field(gt=0)
    keys: int = Field(100, gt=0)
    start_ms: int = Field(0, ge=0)
    end_ms: int | None = Field(None, ge=0)


class HotPartition(_Strict):
    """One partition takes ``share`` of the topic's records; it moves ``step`` partitions on
    every ``every_ms`` (None: it stays)."""

    share: float = Field(gt=0, le=1, allow_inf_nan=False)
    partition: int = Field(0, ge=0)
    every_ms: int | None = Field(None, gt=0)
    step: int = Field(1, ge=1)


class DailyCycle(_Strict):
    """The rate times ``1 + amplitude * cos(2 pi (t - peak_ms) / period_ms)``."""

    amplitude: float = Field(ge=0, lt=1, allow_inf_nan=False)
    period_ms: int = Field(86_400_000, gt=0)
    peak_ms: int = Field(0, ge=0)


class LoadRate(_Strict):
    """Records/s arriving on a topic's partitions (the load model's produce side): the topic's
    ``records_per_s`` spread evenly, or by ``zipf`` (partition ``i`` weighs ``(i + 1) ** -zipf``),
    a ``hot`` partition on top, the whole times a ``daily_cycle``."""

    topic: str
    records_per_s: float = Field(gt=0, allow_inf_nan=False)
    zipf: float | None = Field(None, gt=0, le=10, allow_inf_nan=False)
    hot: HotPartition | None = None
    daily_cycle: DailyCycle | None = None


class LoadSpec(_Strict):
    """The load model (sim/load.py): per-partition produce rates, each consumer's processing
    capacity, the backlog step and the lag series' sample period."""

    rates: list[LoadRate] = Field(min_length=1)
    capacity_records_per_s: float = Field(gt=0, allow_inf_nan=False)
    step_ms: int = Field(1000, gt=0)
    sample_ms: int = Field(5000, gt=0)
    # A leader's first assignment measures the produce rates over this much of the past (later
    # ones: since its previous assignment, as the real LoadAwarePartitionAssignor does).
    measure_window_ms: int = Field(30000, gt=0)

    @model_validator(mode="after")
    def _sampled_on_steps(self) -> LoadSpec:
        if self.sample_ms < self.step_ms:
            raise ValueError(f"sample_ms ({self.sample_ms}) must be at least step_ms ({self.step_ms})")
        return self


class CreateTopicSpec(_Strict):
    name: str = Field(min_length=1)
    partitions: int = Field(gt=0)


class AddPartitionsSpec(_Strict):
    topic: str
    count: int = Field(gt=0)


class SubscribeSpec(_Strict):
    consumer: str
    topics: list[str] | None = None
    pattern: str | None = None

    @model_validator(mode="after")
    def _one(self) -> SubscribeSpec:
        if (self.topics is None) == (self.pattern is None):
            raise ValueError("give exactly one of topics or pattern")
        return self


ACTIONS = ("join", "leave", "crash", "pause", "stall", "restart", "create_topic", "add_partitions", "subscribe",
           "coordinator_failover", "upgrade", "downgrade")


class EventSpec(_Strict):
    """One entry of the scenario's ``events`` as the document writes it: ``at_ms`` and exactly
    one action key. ``scenario_event`` gives it as its ``ScenarioEvent``."""

    at_ms: int = Field(ge=0)
    join: str | None = None
    leave: str | None = None
    crash: str | None = None
    pause: str | None = None
    stall: str | None = None
    restart: str | None = None
    for_ms: int | None = Field(None, ge=0)
    after_ms: int | None = Field(None, ge=0)
    create_topic: CreateTopicSpec | None = None
    add_partitions: AddPartitionsSpec | None = None
    subscribe: SubscribeSpec | None = None
    coordinator_failover: dict[str, Any] | None = None
    upgrade: str | None = None  # restart this consumer with group.protocol=consumer (online migration)
    downgrade: str | None = None  # restart this consumer with group.protocol=classic (the way back)

    @model_validator(mode="after")
    def _exactly_one_action(self) -> EventSpec:
        present = [a for a in ACTIONS if getattr(self, a) is not None]
        if len(present) != 1:
            raise ValueError(f"an event needs exactly one of {', '.join(ACTIONS)} (got {present or 'none'})")
        action = present[0]
        if action in ("pause", "stall") and self.for_ms is None:
            raise ValueError(f"{action} needs for_ms")
        if action == "restart" and self.after_ms is None:
            self.after_ms = 0
        return self

    @property
    def action(self) -> str:
        """The event's action key (one of ``ACTIONS``), as the document names it."""
        return next(a for a in ACTIONS if getattr(self, a) is not None)

    def scenario_event(self) -> ScenarioEvent:
        """The event as its typed kind (``_exactly_one_action`` has checked there is one)."""
        at = self.at_ms
        if self.join is not None:
            return ConsumerJoins(at, self.join)
        if self.leave is not None:
            return ConsumerLeaves(at, self.leave)
        if self.crash is not None:
            return ConsumerCrashes(at, self.crash)
        if self.pause is not None and self.for_ms is not None:
            return ConsumerPauses(at, self.pause, self.for_ms)
        if self.stall is not None and self.for_ms is not None:
            return ConsumerStalls(at, self.stall, self.for_ms)
        if self.restart is not None:
            return ConsumerRestarts(at, self.restart, self.after_ms or 0)
        if self.create_topic is not None:
            return TopicCreated(at, self.create_topic.name, self.create_topic.partitions)
        if self.add_partitions is not None:
            return PartitionsAdded(at, self.add_partitions.topic, self.add_partitions.count)
        if self.subscribe is not None:
            change = self.subscribe
            return SubscriptionChanged(at, change.consumer, None if change.topics is None else tuple(change.topics),
                                       change.pattern)
        if self.coordinator_failover is not None:
            return CoordinatorFailsOver(at)
        if self.upgrade is not None:
            return ConsumerUpgrades(at, self.upgrade, self.after_ms or 0)
        if self.downgrade is not None:
            return ConsumerDowngrades(at, self.downgrade, self.after_ms or 0)
        raise AssertionError(f"not a valid event: {self!r}")


class Scenario(_Strict):
    name: str = "scenario"
    group: str = Field("demo-group", min_length=1)
    # classic: JoinGroup/SyncGroup with the consumers' strategies; consumer: KIP-848, the broker's
    # server-side ``assignor`` (uniform or range) and ConsumerGroupHeartbeat.
    group_protocol: GroupProtocol = GroupProtocol.CLASSIC
    assignor: ServerAssignorName = ServerAssignorName.UNIFORM
    config: SimConfig = Field(default_factory=SimConfig)
    topics: dict[str, int] = Field(default_factory=dict)
    consumers: list[ConsumerSpec]
    produce: list[ProduceSpec] = Field(default_factory=list)
    events: list[EventSpec] = Field(default_factory=list)
    load: LoadSpec | None = None
    end_ms: int | None = Field(None, ge=0)
    seed: int = 0
    description: str | None = None
    _timeline: tuple[ScenarioEvent, ...] = PrivateAttr(default=())

    def model_post_init(self, context: Any, /) -> None:
        self._timeline = tuple(spec.scenario_event() for spec in self.events)

    @property
    def timeline(self) -> tuple[ScenarioEvent, ...]:
        """The scenario's ``events`` as typed events (``sim.scenario_events``), in document order:
        ``timeline[i]`` is ``events[i]``."""
        return self._timeline

    @field_validator("topics")
    @classmethod
    def _counts(cls, value: dict[str, int]) -> dict[str, int]:
        for name, count in value.items():
            if count <= 0:
                raise ValueError(f"topic {name!r}: partition count must be positive, got {count}")
        return value

    @model_validator(mode="after")
    def _references(self) -> Scenario:
        ids = [c.id for c in self.consumers]
        if len(set(ids)) != len(ids):
            raise _FieldError("consumers", "duplicate consumer id")
        known = set(ids)
        topics = set(self.topics)
        self._check_event_references(known, topics)
        for i, spec in enumerate(self.produce):
            if spec.topic not in topics:
                raise _FieldError(f"produce[{i}].topic", f"unknown topic {spec.topic!r}")
        if self.load is not None:
            for i, rate in enumerate(self.load.rates):
                if rate.topic not in topics:
                    raise _FieldError(f"load.rates[{i}].topic", f"unknown topic {rate.topic!r}")
        for i, consumer in enumerate(self.consumers):
            try:
                from kafka_rebalance.protocol.classic.consumer import rebalance_protocol

                rebalance_protocol(tuple(consumer.strategies))
            except InvalidInput as exc:
                raise _FieldError(f"consumers[{i}].strategies", exc.problem) from None
        return self

    def _check_event_references(self, known: set[str], topics: set[str]) -> None:
        """Every consumer an event names exists, and every topic it grows (``topics``, grown here
        with the created ones). In time order, as the simulator replays them: a topic must exist
        before it grows, and each upgrade or downgrade must change the protocol its consumer
        runs at that time (an upgrade moves it from the classic protocol to the consumer
        protocol, a downgrade back)."""
        protocol_of: dict[str, GroupProtocol] = dict.fromkeys(known, self.group_protocol)
        in_time_order = sorted(enumerate(zip(self.events, self.timeline, strict=True)), key=lambda e: e[1][1].at_ms)
        for i, (spec, event) in in_time_order:
            where = f"events[{i}].{spec.action}"
            match event:
                case ConsumerUpgrades(consumer=name) | ConsumerDowngrades(consumer=name):
                    before, after = ((GroupProtocol.CLASSIC, GroupProtocol.CONSUMER) if type(event) is ConsumerUpgrades
                                     else (GroupProtocol.CONSUMER, GroupProtocol.CLASSIC))
                    if name in protocol_of and protocol_of[name] != before:
                        raise _FieldError(where, f"consumer {name!r} already uses the {after.value} protocol "
                                          f"(group_protocol: {self.group_protocol.value}, earlier upgrade/downgrade "
                                          "events)")
                    protocol_of[name] = after
                    _check_known(name, known, where)
                case (ConsumerJoins(consumer=name) | ConsumerLeaves(consumer=name) | ConsumerCrashes(consumer=name)
                      | ConsumerPauses(consumer=name) | ConsumerStalls(consumer=name) | ConsumerRestarts(consumer=name)):
                    _check_known(name, known, where)
                case SubscriptionChanged(consumer=name):
                    _check_known(name, known, f"{where}.consumer")
                case TopicCreated(topic=topic):
                    if topic in topics:
                        raise _FieldError(f"{where}.name", f"topic {topic!r} already exists")
                    topics.add(topic)
                case PartitionsAdded(topic=topic):
                    if topic not in topics:
                        raise _FieldError(f"{where}.topic", f"unknown topic {topic!r}")
                case CoordinatorFailsOver():
                    pass
                case _:
                    assert_never(event)

    @property
    def uses_consumer_protocol(self) -> bool:
        """Whether any member runs KIP-848's protocol (from the start or after an ``upgrade``)."""
        return self.group_protocol is GroupProtocol.CONSUMER or any(type(e) is ConsumerUpgrades for e in self.timeline)

    @property
    def effective_end_ms(self) -> int:
        """``end_ms``, or a minute after the last event's end (its ``for_ms`` and ``after_ms``, as
        the document gives them)."""
        if self.end_ms is not None:
            return self.end_ms
        return max((e.at_ms + (e.for_ms or 0) + (e.after_ms or 0) for e in self.events), default=0) + 60000


class _FieldError(ValueError):
    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem



def _check_known(name: str, known: set[str], where: str) -> None:
    if name not in known:
        raise _FieldError(where, f"unknown consumer {name!r}")

def _location(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part in ("function-after", "function-before") or str(part).startswith("function-"):
            continue
        else:
            text += f".{part}" if text else str(part)
    return text


def _from_validation_error(exc: ValidationError) -> InvalidInput:
    err = exc.errors()[0]
    ctx_error = (err.get("ctx") or {}).get("error")
    if isinstance(ctx_error, _FieldError):
        return InvalidInput(ctx_error.field, ctx_error.problem)
    message = err["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            message = message[len(prefix):]
    if err["type"] == "extra_forbidden":
        message = "unknown field"
    elif err["type"] == "model_type":
        # pydantic's "... or instance of <class>" names our model, not anything the document says.
        message = "expected a mapping (YAML or JSON object)"
    where = _location(tuple(err["loc"])) or "scenario"
    return InvalidInput(where, message.replace("\n", " "))


def load_scenario(source: str | Path | Mapping[str, Any] | Scenario) -> Scenario:
    """A Scenario from a path, YAML/JSON text, a dict, or a Scenario (returned as is)."""
    if isinstance(source, Scenario):
        return source
    if isinstance(source, Mapping):
        data: Any = dict(source)
    else:
        text = str(source)
        is_path = isinstance(source, Path) or ("\n" not in text and (text.endswith((".yaml", ".yml", ".json"))
                                                                     or Path(text).exists()))
        if is_path:
            text = Path(text).read_text(encoding="utf-8")
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
            raise InvalidInput("scenario", f"invalid YAML{where}: {getattr(exc, 'problem', None) or type(exc).__name__}") from None
    if not isinstance(data, Mapping):
        raise InvalidInput("scenario", "expected a mapping (YAML or JSON object)")
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise _from_validation_error(exc) from None
