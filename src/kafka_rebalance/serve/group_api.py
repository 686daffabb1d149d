"""The group APIs: each kio request as the protocol's request dataclass (``protocol/classic/
coordinator_events.py``, ``protocol/modern/consumer/coordinator_events.py``), asked of the
coordinator shard (``Groups.ask``), and its response as the values of the kio response.

``connection`` is the request's token (unique per request); a batch (OffsetFetch v8+ over
several groups) asks once per group with the group's index appended.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TypeVar

from kafka_rebalance.model import InvalidInput
from kafka_rebalance.protocol.classic import coordinator_events as cl
from kafka_rebalance.protocol.errors import ErrorCode
from kafka_rebalance.protocol.modern.consumer import coordinator_events as ce
from kafka_rebalance.serve.codec import Request, milliseconds
from kafka_rebalance.serve.groups import (
    GroupResponse,
    Groups,
    Values,
    attr,
    committed_partitions,
    partition_name,
    split_partition_name,
)

R = TypeVar("R")
_NO_TOPIC_ID = uuid.UUID(int=0)


def _expect(response: GroupResponse, kind: type[R]) -> R:
    if not isinstance(response, kind):
        raise TypeError(f"the coordinator answered {type(response).__name__}, not {kind.__name__}")
    return response


async def join_group(groups: Groups, request: Request, connection: str) -> Values:
    body = request.body
    member_id = attr(body, "member_id", "")
    try:
        protocols = tuple(cl.JoinGroupRequestProtocol(p.name, groups.subscription(p.metadata))
                          for p in attr(body, "protocols", ()))
    except InvalidInput:
        # Not a consumer's subscription: only the consumer protocol type is served.
        return {"error_code": ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "generation_id": -1, "member_id": member_id}
    session_timeout = milliseconds(attr(body, "session_timeout"))
    join = cl.JoinGroupRequest(
        group_id=attr(body, "group_id"), session_timeout_ms=session_timeout,
        # JoinGroup v0 has no rebalance timeout: Kafka takes the session timeout.
        rebalance_timeout_ms=milliseconds(attr(body, "rebalance_timeout", session_timeout)),
        member_id=member_id, group_instance_id=attr(body, "group_instance_id"),
        protocol_type=attr(body, "protocol_type", ""), protocols=protocols, reason=attr(body, "reason"),
        client_id=request.client_id, api_version=request.api_version)
    response = _expect(await groups.ask_classic(connection, join), cl.JoinGroupResponse)
    return {"error_code": response.error_code, "generation_id": response.generation_id,
            "protocol_type": response.protocol_type, "protocol_name": response.protocol_name,
            "leader": response.leader, "skip_assignment": response.skip_assignment, "member_id": response.member_id,
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                         "metadata": groups.subscription_bytes(m.metadata)} for m in response.members]}


async def sync_group(groups: Groups, request: Request, connection: str) -> Values:
    body = request.body
    try:
        assignments = tuple(cl.SyncGroupRequestAssignment(a.member_id, groups.assignment(a.assignment))
                            for a in attr(body, "assignments", ()))
    except InvalidInput:
        return {"error_code": ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "assignment": b""}
    sync = cl.SyncGroupRequest(attr(body, "group_id"), int(attr(body, "generation_id")), attr(body, "member_id"),
                               attr(body, "group_instance_id"), attr(body, "protocol_type"),
                               attr(body, "protocol_name"), assignments)
    response = _expect(await groups.ask_classic(connection, sync), cl.SyncGroupResponse)
    assignment = groups.assignment_bytes(response.assignment) if response.error_code is ErrorCode.NONE else b""
    return {"error_code": response.error_code, "protocol_type": response.protocol_type,
            "protocol_name": response.protocol_name, "assignment": assignment}


async def heartbeat(groups: Groups, request: Request, connection: str) -> Values:
    body = request.body
    beat = cl.HeartbeatRequest(attr(body, "group_id"), int(attr(body, "generation_id")), attr(body, "member_id"),
                               attr(body, "group_instance_id"))
    response = _expect(await groups.ask_classic(connection, beat), cl.HeartbeatResponse)
    return {"error_code": response.error_code}


async def leave_group(groups: Groups, request: Request, connection: str) -> Values:
    body = request.body
    members = attr(body, "members")
    if members is None:  # v0-2: the one member sending it
        identities: tuple[cl.MemberIdentity, ...] = (cl.MemberIdentity(attr(body, "member_id")),)
    else:
        identities = tuple(cl.MemberIdentity(m.member_id, m.group_instance_id, attr(m, "reason")) for m in members)
    leave = cl.LeaveGroupRequest(attr(body, "group_id"), identities)
    response = _expect(await groups.ask_classic(connection, leave), cl.LeaveGroupResponse)
    return {"error_code": response.error_code,
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                         "error_code": m.error_code} for m in response.members]}


async def offset_commit(groups: Groups, request: Request, connection: str) -> Values:
    """v9+ from a member of a consumer group carries its member epoch: the consumer group's
    commit; every other commit is the classic one (generation id)."""
    body = request.body
    group_id = attr(body, "group_id")
    epoch = int(attr(body, "generation_id_or_member_epoch", -1))
    member_id = attr(body, "member_id", "")
    topics = attr(body, "topics", ())
    offsets = tuple((partition_name(t.name, int(p.partition_index)), int(p.committed_offset))
                    for t in topics for p in t.partitions)
    response: GroupResponse
    if request.api_version >= 9 and groups.shard.group_type(group_id) == "consumer":
        response = await groups.ask_consumer(connection, ce.OffsetCommitRequest(group_id, member_id, epoch, offsets))
    else:
        commit = cl.OffsetCommitRequest(group_id, epoch, member_id, attr(body, "group_instance_id"),
                                        tuple(cl.PartitionOffset(name, offset) for name, offset in offsets))
        response = await groups.ask_classic(connection, commit)
    if not isinstance(response, ce.OffsetCommitResponse | cl.OffsetCommitResponse):
        raise TypeError(f"the coordinator answered {type(response).__name__} to an OffsetCommit")
    return {"topics": [{"name": t.name, "partitions": [
        {"partition_index": p.partition_index, "error_code": response.error_code} for p in t.partitions]}
        for t in topics]}


async def offset_fetch(groups: Groups, request: Request, connection: str) -> Values:
    body = request.body
    batch = attr(body, "groups")
    if batch is None:  # v1-7: one group
        error, topics = await _fetch_group(groups, f"{connection}/0", attr(body, "group_id"), None, -1,
                                           attr(body, "topics"))
        return {"error_code": error, "topics": topics}
    results = []
    for index, group in enumerate(batch):
        error, topics = await _fetch_group(groups, f"{connection}/{index}", group.group_id,
                                           attr(group, "member_id"), int(attr(group, "member_epoch", -1)),
                                           group.topics)
        results.append({"group_id": group.group_id, "error_code": error, "topics": topics})
    return {"groups": results}


async def _fetch_group(groups: Groups, token: str, group_id: str, member_id: str | None, member_epoch: int,
                       wanted: object) -> tuple[ErrorCode, list[Values]]:
    """One group's committed offsets; ``wanted`` None: every partition it has offsets for."""
    if wanted is None:
        names = tuple(committed_partitions(groups.shard, group_id))
    else:
        names = tuple(partition_name(t.name, int(p)) for t in wanted  # type: ignore[attr-defined]
                      for p in attr(t, "partition_indexes", ()))
    response: GroupResponse
    if member_id is not None and groups.shard.group_type(group_id) == "consumer":
        response = await groups.ask_consumer(token, ce.OffsetFetchRequest(group_id, member_id, member_epoch, names))
    else:
        response = await groups.ask_classic(token, cl.OffsetFetchRequest(group_id, names))
    offsets: list[tuple[str, int]]
    match response:
        case ce.OffsetFetchResponse():
            offsets = list(response.offsets)
        case cl.OffsetFetchResponse():
            offsets = [(o.partition, o.offset) for o in response.offsets]
        case _:
            raise TypeError(f"the coordinator answered {type(response).__name__} to an OffsetFetch")
    by_topic: dict[str, list[Values]] = {}
    for name, offset in offsets:
        topic, partition = split_partition_name(name)
        by_topic.setdefault(topic, []).append({"partition_index": partition, "committed_offset": offset,
                                               "committed_leader_epoch": -1, "metadata": ""})
    return response.error_code, [{"name": topic, "partitions": parts} for topic, parts in by_topic.items()]


async def describe_groups(groups: Groups, request: Request, connection: str) -> Values:
    names = tuple(attr(request.body, "groups", ()))
    response = _expect(await groups.ask_classic(connection, cl.DescribeGroupsRequest(names)),
                       cl.DescribeGroupsResponse)
    return {"groups": [{
        "error_code": g.error_code, "group_id": g.group_id, "group_state": g.group_state,
        "protocol_type": g.protocol_type, "protocol_data": g.protocol_data,
        "authorized_operations": -(2**31),
        "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
                     "client_host": m.client_host,
                     "member_metadata": groups.subscription_bytes(m.member_metadata)
                     if m.member_metadata is not None else b"",
                     "member_assignment": groups.assignment_bytes(m.member_assignment)} for m in g.members]}
        for g in response.groups]}


async def list_groups(groups: Groups, request: Request, connection: str) -> Values:
    states = tuple(attr(request.body, "states_filter", ()))
    response = _expect(await groups.ask_classic(connection, cl.ListGroupsRequest(states)),
                       cl.ListGroupsResponse)
    listed: list[Values] = [{"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.group_state,
                             "group_type": g.group_type} for g in response.groups]
    return {"error_code": response.error_code, "groups": listed + consumer_groups_listed(groups, states)}


async def delete_groups(groups: Groups, request: Request, connection: str) -> Values:
    names = tuple(attr(request.body, "groups_names", ()))
    response = _expect(await groups.ask_classic(connection, cl.DeleteGroupsRequest(names)),
                       cl.DeleteGroupsResponse)
    return {"results": [{"group_id": r.group_id, "error_code": r.error_code} for r in response.results]}


async def consumer_group_heartbeat(groups: Groups, request: Request, connection: str,
                                   topic_names: Mapping[uuid.UUID, str], topic_ids: Mapping[str, uuid.UUID]) -> Values:
    """KIP-848's heartbeat. The protocol keys partitions by topic name; the wire by topic id."""
    body = request.body
    owned = attr(body, "topic_partitions")
    owned_by_name = None if owned is None else tuple(
        ce.TopicPartitions(topic_names.get(t.topic_id, str(t.topic_id)), tuple(int(p) for p in t.partitions))
        for t in owned)
    names = attr(body, "subscribed_topic_names")
    rebalance_timeout = attr(body, "rebalance_timeout")
    beat = ce.ConsumerGroupHeartbeatRequest(
        group_id=attr(body, "group_id"), member_id=attr(body, "member_id"), member_epoch=int(attr(body, "member_epoch")),
        instance_id=attr(body, "instance_id"), rack_id=attr(body, "rack_id"),
        rebalance_timeout_ms=-1 if rebalance_timeout is None else milliseconds(rebalance_timeout),
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=attr(body, "subscribed_topic_regex"), server_assignor=attr(body, "server_assignor"),
        topic_partitions=owned_by_name, client_id=request.client_id, api_version=request.api_version)
    response = _expect(await groups.ask_consumer(connection, beat), ce.ConsumerGroupHeartbeatResponse)
    assignment = None if response.assignment is None else {"topic_partitions": [
        {"topic_id": topic_ids.get(t.topic, _NO_TOPIC_ID), "partitions": t.partitions} for t in response.assignment]}
    return {"error_code": response.error_code, "error_message": response.error_message,
            "member_id": response.member_id, "member_epoch": response.member_epoch,
            "heartbeat_interval": response.heartbeat_interval_ms, "assignment": assignment}


def consumer_group_describe(groups: Groups, request: Request, topic_ids: Mapping[str, uuid.UUID]) -> Values:
    """ConsumerGroupDescribe, read from the shard's consumer groups as Kafka's coordinator reads
    its own (``GroupMetadataManager.consumerGroupDescribe``): no request goes through ``handle``."""
    described: list[Values] = []
    for group_id in attr(request.body, "group_ids", ()):
        group = groups.shard.consumer_groups.get(group_id)
        if group is None:
            described.append({"group_id": group_id, "error_code": ErrorCode.GROUP_ID_NOT_FOUND,
                              "error_message": f"Group {group_id} not found.", "authorized_operations": -(2**31)})
            continue
        members = []
        for member in group.members.values():
            members.append({
                "member_id": member.member_id, "instance_id": member.instance_id, "rack_id": member.rack_id,
                "member_epoch": member.member_epoch, "client_id": member.client_id, "client_host": "",
                "subscribed_topic_names": member.subscribed_topic_names,
                "subscribed_topic_regex": member.subscribed_topic_regex,
                "assignment": {"topic_partitions": _described_partitions(member.assignment.assigned, topic_ids)},
                "target_assignment": {"topic_partitions": _described_partitions(group.target.get(member.member_id, {}),
                                                                                topic_ids)},
                "member_type": 0 if member.uses_classic_protocol else 1})
        described.append({"group_id": group_id, "group_state": group.state.value, "group_epoch": group.group_epoch,
                          "assignment_epoch": group.assignment_epoch,
                          "assignor_name": groups.shard.consumer_config.assignors[0], "members": members,
                          "authorized_operations": -(2**31)})
    return {"groups": described}


def _described_partitions(partitions: Mapping[str, frozenset[int]], topic_ids: Mapping[str, uuid.UUID]) -> list[Values]:
    return [{"topic_id": topic_ids.get(topic, _NO_TOPIC_ID), "topic_name": topic, "partitions": sorted(numbers)}
            for topic, numbers in sorted(partitions.items())]


def consumer_groups_listed(groups: Groups, states_filter: tuple[str, ...]) -> list[Values]:
    """The consumer groups a ListGroups adds to the classic coordinator's answer."""
    wanted = {state.lower() for state in states_filter}
    return [{"group_id": group_id, "protocol_type": ce.CONSUMER_PROTOCOL_TYPE, "group_state": group.state.value,
             "group_type": "consumer"} for group_id, group in groups.shard.consumer_groups.items()
            if not wanted or group.state.value.lower() in wanted]
