"""One broker's state and its APIs: topics and their in-memory logs, and one handler per API.

This broker is node 0, the leader of every partition (replication factor 1) and every group's
coordinator. A handler takes a decoded request and returns the response's values by field name
(``codec.build`` fits them to the request's version), or None when Kafka sends no response
(a Produce with acks=0). The group APIs are in ``group_api``.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from kafka_rebalance.protocol.classic.group import CoordinatorConfig
from kafka_rebalance.protocol.effects import Log
from kafka_rebalance.protocol.modern.consumer.coordinator import ConsumerGroupConfig
from kafka_rebalance.serve import group_api
from kafka_rebalance.serve.codec import Request, milliseconds
from kafka_rebalance.serve.faults import GROUP_APIS, ResponseFaults
from kafka_rebalance.serve.groups import Groups, Values, attr
from kafka_rebalance.serve.log import CorruptRecords, PartitionLog, split_batches

NODE_ID = 0
CLUSTER_ID = "kafka-rebalance-serve"
# Kafka's Topic.validate: at most 249 characters of [a-zA-Z0-9._-], not "." or "..".
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
_LATEST_TIMESTAMP = -1
_EARLIEST_TIMESTAMP = -2


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    host: str = "127.0.0.1"
    port: int = 9092
    num_partitions: int = 1  # num.partitions: an auto-created topic's partitions
    retention_bytes: int = 64 * 1024 * 1024  # per partition, in memory
    max_request_bytes: int = 100 * 1024 * 1024  # socket.request.max.bytes
    group_initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    log_path: str | None = None  # the coordinator's log lines (Kafka 4.x format), appended
    consumer_heartbeat_interval_ms: int = 5000  # group.consumer.heartbeat.interval.ms
    consumer_session_timeout_ms: int = 45000  # group.consumer.session.timeout.ms


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionLog] = field(default_factory=list)


Handler = Callable[[Request, str], Awaitable[Values | None]]


class BrokerState:
    """Topics, logs and the group coordinator of one broker, on one event loop."""

    def __init__(self, config: BrokerConfig, loop: asyncio.AbstractEventLoop,
                 log_sink: Callable[[Log], None] | None = None):
        self.config = config
        self.loop = loop
        self.topics: dict[str, Topic] = {}
        self.topic_names: dict[uuid.UUID, str] = {}
        self.groups = Groups(loop, {}, CoordinatorConfig(
            group_initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms, broker_id=NODE_ID),
            ConsumerGroupConfig(session_timeout_ms=config.consumer_session_timeout_ms,
                                heartbeat_interval_ms=config.consumer_heartbeat_interval_ms), log_sink)
        self.response_faults = ResponseFaults(loop)
        self._appended = asyncio.Event()
        self._next_producer_id = 1000
        # api key -> (min version, max version, handler): Kafka 4.1's ranges, within kio's schemas.
        self.apis: dict[int, tuple[int, int, Handler]] = {
            0: (3, 12, self.produce),
            1: (4, 17, self.fetch),
            2: (1, 10, self.list_offsets),
            3: (0, 13, self.metadata),
            8: (2, 9, self.offset_commit),
            9: (1, 9, self.offset_fetch),
            10: (0, 6, self.find_coordinator),
            11: (0, 9, self.join_group),
            12: (0, 4, self.heartbeat),
            13: (0, 5, self.leave_group),
            14: (0, 5, self.sync_group),
            15: (0, 6, self.describe_groups),
            16: (0, 5, self.list_groups),
            18: (0, 4, self.api_versions),
            19: (2, 7, self.create_topics),
            20: (1, 6, self.delete_topics),
            22: (0, 5, self.init_producer_id),
            37: (0, 3, self.create_partitions),
            42: (0, 2, self.delete_groups),
            68: (0, 1, self.consumer_group_heartbeat),
            69: (0, 1, self.consumer_group_describe),
        }
        for key, name in GROUP_APIS.items():  # their responses can be delayed or dropped (serve/faults.py)
            low, high, handler = self.apis[key]
            self.apis[key] = (low, high, self.response_faults.wrap(name, handler))

    def supports(self, api_key: int, api_version: int) -> bool:
        api = self.apis.get(api_key)
        return api is not None and api[0] <= api_version <= api[1]

    def api_versions_values(self, error: ErrorCode = ErrorCode.none) -> Values:
        return {"error_code": error, "api_keys": [{"api_key": key, "min_version": low, "max_version": high}
                                                  for key, (low, high, _) in sorted(self.apis.items())]}

    # ------------------------------------------------------------------ topics

    def create_topic(self, name: str, partitions: int) -> Topic:
        topic = Topic(name, uuid.uuid4())
        self.topics[name] = topic
        self.topic_names[topic.topic_id] = name
        self.add_partitions(topic, partitions)
        return topic

    def add_partitions(self, topic: Topic, count: int) -> None:
        """CreatePartitions' effect (and the control's ``add_partitions``): ``topic`` grows to ``count``."""
        while len(topic.partitions) < count:
            topic.partitions.append(PartitionLog(self.config.retention_bytes))
        self.groups.topics_changed(topic_counts(self.topics))

    def _topic_or_create(self, name: str, allow_create: bool) -> Topic | ErrorCode:
        topic = self.topics.get(name)
        if topic is not None:
            return topic
        if not valid_topic_name(name):
            return ErrorCode.invalid_topic_exception
        if not allow_create:
            return ErrorCode.unknown_topic_or_partition
        return self.create_topic(name, self.config.num_partitions)

    def _partition_values(self, topic: Topic) -> list[Values]:
        return [{"partition_index": index, "leader_id": NODE_ID, "leader_epoch": 0, "replica_nodes": (NODE_ID,),
                 "isr_nodes": (NODE_ID,)} for index in range(len(topic.partitions))]

    def _broker_values(self) -> list[Values]:
        return [{"node_id": NODE_ID, "host": self.config.host, "port": self.config.port}]

    # ------------------------------------------------------------------ APIs

    async def api_versions(self, request: Request, connection: str) -> Values:
        return self.api_versions_values()

    async def metadata(self, request: Request, connection: str) -> Values:
        body = request.body
        requested = attr(body, "topics")
        allow_create = bool(attr(body, "allow_auto_topic_creation", True))
        listed: list[Values] = []
        if requested is None or (request.api_version == 0 and not requested):
            listed = [self._topic_metadata(topic) for topic in self.topics.values()]
        else:
            for item in requested:
                name = attr(item, "name")
                topic_id = attr(item, "topic_id")
                if name is None and topic_id is not None:
                    name = self.topic_names.get(topic_id)
                    if name is None:
                        listed.append({"error_code": ErrorCode.unknown_topic_id, "topic_id": topic_id})
                        continue
                found = self._topic_or_create(name, allow_create)
                if isinstance(found, Topic):
                    listed.append(self._topic_metadata(found))
                else:
                    listed.append({"error_code": found, "name": name})
        return {"brokers": self._broker_values(), "cluster_id": CLUSTER_ID, "controller_id": NODE_ID,
                "topics": listed, "cluster_authorized_operations": _AUTHORIZED_OPERATIONS_OMITTED}

    def _topic_metadata(self, topic: Topic) -> Values:
        return {"name": topic.name, "topic_id": topic.topic_id, "partitions": self._partition_values(topic),
                "topic_authorized_operations": _AUTHORIZED_OPERATIONS_OMITTED}

    async def create_topics(self, request: Request, connection: str) -> Values:
        body = request.body
        results = []
        for item in attr(body, "topics", ()):
            name, count, replication = item.name, int(item.num_partitions), int(item.replication_factor)
            count = self.config.num_partitions if count == -1 else count
            error, message = ErrorCode.none, None
            if name in self.topics:
                error, message = ErrorCode.topic_already_exists, f"Topic '{name}' already exists."
            elif not valid_topic_name(name):
                error = ErrorCode.invalid_topic_exception
            elif count <= 0:
                error, message = ErrorCode.invalid_partitions, "Number of partitions must be larger than 0."
            elif replication not in (-1, 1):
                error, message = (ErrorCode.invalid_replication_factor,
                                  f"Unable to replicate the partition {replication} time(s): one broker.")
            topic_id = uuid.UUID(int=0)
            if error is ErrorCode.none and not attr(body, "validate_only", False):
                topic_id = self.create_topic(name, count).topic_id
            results.append({"name": name, "topic_id": topic_id, "error_code": error, "error_message": message,
                            "num_partitions": count if error is ErrorCode.none else -1,
                            "replication_factor": 1 if error is ErrorCode.none else -1})
        return {"topics": results}

    async def delete_topics(self, request: Request, connection: str) -> Values:
        body = request.body
        wanted: list[tuple[str | None, uuid.UUID | None]] = [(name, None) for name in attr(body, "topic_names", ())]
        wanted += [(attr(item, "name"), attr(item, "topic_id")) for item in attr(body, "topics", ())]
        results = []
        for name, topic_id in wanted:
            if name is None and topic_id is not None:
                name = self.topic_names.get(topic_id)
            topic = self.topics.pop(name, None) if name is not None else None
            if topic is None:
                error = ErrorCode.unknown_topic_id if name is None else ErrorCode.unknown_topic_or_partition
                results.append({"name": name, "topic_id": topic_id, "error_code": error})
                continue
            del self.topic_names[topic.topic_id]
            results.append({"name": name, "topic_id": topic.topic_id, "error_code": ErrorCode.none})
        self.groups.topics_changed(topic_counts(self.topics))
        return {"responses": results}

    async def create_partitions(self, request: Request, connection: str) -> Values:
        body = request.body
        results = []
        for item in attr(body, "topics", ()):
            topic = self.topics.get(item.name)
            count = int(item.count)
            if topic is None:
                results.append({"name": item.name, "error_code": ErrorCode.unknown_topic_or_partition})
            elif count <= len(topic.partitions):
                results.append({"name": item.name, "error_code": ErrorCode.invalid_partitions,
                                "error_message": f"Topic currently has {len(topic.partitions)} partitions, "
                                                 f"{count} would not be an increase."})
            else:
                if not attr(body, "validate_only", False):
                    self.add_partitions(topic, count)
                results.append({"name": item.name, "error_code": ErrorCode.none})
        return {"results": results}

    async def produce(self, request: Request, connection: str) -> Values | None:
        body = request.body
        responses = []
        for topic_data in attr(body, "topic_data", ()):
            name = attr(topic_data, "name")
            found: Topic | ErrorCode = self._topic_or_create(name, True)
            partitions = []
            for data in topic_data.partition_data:
                index = int(data.index)
                entry: Values = {"index": index, "base_offset": -1, "log_start_offset": -1}
                if not isinstance(found, Topic):
                    entry["error_code"] = found
                elif not 0 <= index < len(found.partitions):
                    entry["error_code"] = ErrorCode.unknown_topic_or_partition
                else:
                    log = found.partitions[index]
                    try:
                        batches = split_batches(bytes(data.records or b""))
                    except CorruptRecords as error:
                        entry.update(error_code=ErrorCode.corrupt_message, error_message=str(error))
                    else:
                        entry.update(base_offset=log.append(batches), log_start_offset=log.log_start_offset)
                        self._wake_fetches()
                partitions.append(entry)
            responses.append({"name": name, "partition_responses": partitions})
        if int(attr(body, "acks", 1)) == 0:
            return None
        return {"responses": responses}

    def _wake_fetches(self) -> None:
        self._appended.set()
        self._appended = asyncio.Event()

    async def fetch(self, request: Request, connection: str) -> Values:
        """A fetch waits, as Kafka's ``DelayedFetch``, until ``min_bytes`` are there or
        ``max_wait`` passes; each produce wakes it to look again."""
        body = request.body
        deadline = self.loop.time() + milliseconds(attr(body, "max_wait", 0)) / 1000
        min_bytes = int(attr(body, "min_bytes", 1))
        while True:
            appended = self._appended
            responses, size = self._read(body)
            remaining = deadline - self.loop.time()
            if size >= min_bytes or remaining <= 0:
                return {"responses": responses, "session_id": 0}
            try:
                await asyncio.wait_for(appended.wait(), remaining)
            except TimeoutError:
                continue

    def _read(self, body: Any) -> tuple[list[Values], int]:
        budget = int(attr(body, "max_bytes", 2**31 - 1))
        total = 0
        responses: list[Values] = []
        for fetch_topic in body.topics:
            name = attr(fetch_topic, "topic")
            topic_id = attr(fetch_topic, "topic_id")
            if name is None and topic_id is not None:
                name = self.topic_names.get(topic_id)
            topic = self.topics.get(name) if name is not None else None
            partitions: list[Values] = []
            for wanted in fetch_topic.partitions:
                index = int(wanted.partition)
                entry: Values = {"partition_index": index, "high_watermark": -1, "last_stable_offset": -1,
                                 "log_start_offset": -1, "preferred_read_replica": -1, "records": b""}
                if topic is None or not 0 <= index < len(topic.partitions):
                    entry["error_code"] = (ErrorCode.unknown_topic_id if name is None
                                           else ErrorCode.unknown_topic_or_partition)
                else:
                    log = topic.partitions[index]
                    offset = int(wanted.fetch_offset)
                    entry.update(high_watermark=log.log_end_offset, last_stable_offset=log.log_end_offset,
                                 log_start_offset=log.log_start_offset)
                    if not log.log_start_offset <= offset <= log.log_end_offset:
                        entry["error_code"] = ErrorCode.offset_out_of_range
                    else:
                        # The first records of a response go out whatever the limits (Kafka's
                        # "at least one batch"); later partitions share what the budget leaves.
                        limit = int(wanted.partition_max_bytes)
                        if total:
                            limit = min(limit, budget - total)
                        records = log.read(offset, limit) if limit > 0 or not total else b""
                        entry["records"] = records
                        total += len(records)
                partitions.append(entry)
            responses.append({"topic": name, "topic_id": topic_id if topic_id is not None else uuid.UUID(int=0),
                              "partitions": partitions})
        return responses, total

    async def list_offsets(self, request: Request, connection: str) -> Values:
        topics = []
        for wanted_topic in attr(request.body, "topics", ()):
            topic = self.topics.get(wanted_topic.name)
            partitions: list[Values] = []
            for wanted in wanted_topic.partitions:
                index = int(wanted.partition_index)
                entry: Values = {"partition_index": index, "timestamp": -1, "offset": -1, "leader_epoch": 0}
                if topic is None or not 0 <= index < len(topic.partitions):
                    entry["error_code"] = ErrorCode.unknown_topic_or_partition
                else:
                    log = topic.partitions[index]
                    timestamp = int(wanted.timestamp)
                    if timestamp == _EARLIEST_TIMESTAMP:
                        entry["offset"] = log.log_start_offset
                    elif timestamp < 0:
                        entry["offset"] = log.log_end_offset  # latest, and the other special timestamps
                    else:
                        found = log.offset_for_timestamp(timestamp)
                        if found is not None:
                            entry.update(offset=found, timestamp=timestamp)
                partitions.append(entry)
            topics.append({"name": wanted_topic.name, "partitions": partitions})
        return {"topics": topics}

    async def init_producer_id(self, request: Request, connection: str) -> Values:
        self._next_producer_id += 1
        return {"producer_id": self._next_producer_id, "producer_epoch": 0}

    async def find_coordinator(self, request: Request, connection: str) -> Values:
        """This broker coordinates every group and transaction: ``FindCoordinator`` always names it."""
        here: Values = {"node_id": NODE_ID, "host": self.config.host, "port": self.config.port}
        keys = attr(request.body, "coordinator_keys")
        if keys is None:
            return here
        return {"coordinators": [{"key": key, **here} for key in keys]}

    # ------------------------------------------------------------------ groups

    async def join_group(self, request: Request, connection: str) -> Values:
        return await group_api.join_group(self.groups, request, connection)

    async def sync_group(self, request: Request, connection: str) -> Values:
        return await group_api.sync_group(self.groups, request, connection)

    async def heartbeat(self, request: Request, connection: str) -> Values:
        return await group_api.heartbeat(self.groups, request, connection)

    async def leave_group(self, request: Request, connection: str) -> Values:
        return await group_api.leave_group(self.groups, request, connection)

    async def offset_commit(self, request: Request, connection: str) -> Values:
        return await group_api.offset_commit(self.groups, request, connection)

    async def offset_fetch(self, request: Request, connection: str) -> Values:
        return await group_api.offset_fetch(self.groups, request, connection)

    async def describe_groups(self, request: Request, connection: str) -> Values:
        return await group_api.describe_groups(self.groups, request, connection)

    async def list_groups(self, request: Request, connection: str) -> Values:
        return await group_api.list_groups(self.groups, request, connection)

    async def delete_groups(self, request: Request, connection: str) -> Values:
        return await group_api.delete_groups(self.groups, request, connection)

    async def consumer_group_heartbeat(self, request: Request, connection: str) -> Values:
        return await group_api.consumer_group_heartbeat(self.groups, request, connection, self.topic_names,
                                                        self._topic_ids())

    async def consumer_group_describe(self, request: Request, connection: str) -> Values:
        return group_api.consumer_group_describe(self.groups, request, self._topic_ids())

    def _topic_ids(self) -> dict[str, uuid.UUID]:
        return {name: topic.topic_id for name, topic in self.topics.items()}


def valid_topic_name(name: object) -> bool:
    return isinstance(name, str) and name not in (".", "..") and _LEGAL_TOPIC.fullmatch(name) is not None


def topic_counts(topics: Mapping[str, Topic]) -> dict[str, int]:
    return {name: len(topic.partitions) for name, topic in topics.items()}
