"""Every message about group membership that Kafka brokers and clients log, per version.

Each ``Message`` is one wording, written from the format string at the source named in its
``source``; a line is matched by searching (not anchoring) the message's regex in the
unwrapped line, so any prefix layout works (see ``layout``). A message's ``marker`` is a fixed
phrase of it: its regex runs only on lines holding it. ``GATE_SUBSTRINGS`` are a few phrases,
one of which every line a message matches holds: a line with none is never decoded (``scan``).

Event kinds (the ``kind`` of a parsed line) are the members of ``kinds.EventKind``, grouped
there by side (broker classic, broker KIP-848, client); several wordings (versions, libraries)
share a kind. Every kind has at least one message and the story a handler for each (tested).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache, lru_cache

from kafka_rebalance.pipeline.logparse.kinds import EventKind, Library, Side

K = EventKind

# A group id ends at whitespace, ':', ',' or ']', or at a sentence's final '.'.
G = r"(?P<group>[^\s\]]+?)(?=[\s:,\]]|\.(?:\s|$)|$)"
M = r"(?P<member>\S+?)"
GENERATION_OBJECT = (r"Generation\{generationId=(?P<generation>-?\d+), memberId='(?P<member>[^']*)', "
                     r"protocol='(?P<protocol>[^']*)'\}")


@dataclass(frozen=True)
class Message:
    kind: EventKind
    side: Side
    library: Library  # who logs it
    pattern: str
    source: str  # where the format string is, and the versions that use it
    marker: str  # a fixed phrase every matching line contains
    fixed: dict[str, str] = field(default_factory=dict)  # fields the wording itself implies

    def compiled(self) -> re.Pattern[str]:
        """The regex, compiled on first use: a paste reads a few of the messages."""
        return _compiled(self.pattern)


_GC = "core/src/main/scala/kafka/coordinator/group/GroupCoordinator.scala"
_GMM = "core/src/main/scala/kafka/coordinator/group/GroupMetadataManager.scala"
_NEW = "group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupMetadataManager.java (trunk, 3.7+/4.x)"
# The online migration's INFO lines came after the mirrored trunk (4.0+).
_RT = ("group-coordinator/src/main/java/org/apache/kafka/coordinator/group/runtime/CoordinatorRuntime.java 3.7-3.9, "
       "coordinator-common/src/main/java/org/apache/kafka/coordinator/common/runtime/CoordinatorRuntime.java 4.x")
_PARTITION = "core/src/main/scala/kafka/cluster/Partition.scala appendRecordsToLeader (logged by ReplicaManager.appendToLocalLog)"
_NEW4 = "group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupMetadataManager.java (4.0+)"
_AC = "clients/.../consumer/internals/AbstractCoordinator.java"
_CC = "clients/.../consumer/internals/ConsumerCoordinator.java"
_RLI = "clients/.../consumer/internals/ConsumerRebalanceListenerInvoker.java (3.7+)"
_AMM = "clients/.../consumer/internals/AbstractMembershipManager.java (trunk; MembershipManagerImpl.java in 3.7-3.9)"
_KP = "kafka-python kafka/coordinator/base.py and consumer.py"
_RK = "librdkafka src/rdkafka_cgrp.c"
_SK = "spring-kafka KafkaMessageListenerContainer.java (ListenerConsumerRebalanceListener)"
_KS = "streams/.../KafkaStreams.java and StreamThread.java (setState)"

MESSAGES: tuple[Message, ...] = (
    # ---------------------------------------------------------------- broker, classic groups
    Message(K.PREPARING_REBALANCE, Side.BROKER, Library.BROKER,
            rf"Preparing to rebalance group {G}(?: in state (?P<state>\w+))? with old generation "
            r"(?P<old_generation>\d+)(?: \(__consumer_offsets-(?P<partition>\d+)\))?(?: \(reason: (?P<reason>.*)\))?\.?\s*$",
            f"{_GC} 0.11-3.9 (state and reason from 2.1); {_NEW}", "Preparing to rebalance group "),
    Message(K.PREPARING_REBALANCE, Side.BROKER, Library.BROKER,
            rf"Preparing to restabilize group {G} with old generation (?P<old_generation>\d+)",
            "core/src/main/scala/kafka/coordinator/GroupCoordinator.scala 0.10.0-0.10.2", "Preparing to restabilize group "),
    Message(K.STABILIZED, Side.BROKER, Library.BROKER,
            rf"Stabilized group {G} generation (?P<generation>\d+)(?: \(__consumer_offsets-(?P<partition>\d+)\))?"
            r"(?: with (?P<members>\d+) members)?",
            f"{_GC} 0.10.0-3.9 (members from 2.5); {_NEW}", "Stabilized group "),
    Message(K.ASSIGNMENT_RECEIVED, Side.BROKER, Library.BROKER,
            rf"Assignment received from leader (?:{M} )?for group {G} for generation (?P<generation>\d+)"
            r"(?:\. The group has (?P<members>\d+) members, (?P<static_members>\d+) of which are static)?",
            f"{_GC} 0.11-3.9 (leader and member counts from 2.8); {_NEW}", "Assignment received from leader "),
    Message(K.MEMBER_FAILED, Side.BROKER, Library.BROKER,
            rf"Member {M} in group {G} has failed, removing it from the group",
            f"{_GC} 0.10-3.9 (INFO from 1.1); {_NEW}", " has failed, removing it from the group"),
    Message(K.MEMBER_FAILED, Side.BROKER, Library.BROKER,
            rf"Pending member {M} in group {G} has been removed after session timeout expiration",
            f"{_GC} 2.2-3.9; {_NEW}", "has been removed after session timeout expiration", {"pending": "true"}),
    Message(K.MEMBER_LEFT, Side.BROKER, Library.BROKER,
            rf"\[Group {G}\] (?:(?P<membership>Dynamic|Static) )?Member {M}(?: with instance id (?P<instance_id>\S+))? "
            r"has left group through explicit `LeaveGroup` request; client reason: (?P<reason>.*)$",
            f"{_NEW}", "has left group through explicit `LeaveGroup` request"),
    Message(K.MEMBER_LEFT, Side.BROKER, Library.BROKER,
            r"Member (?:MemberMetadata\(memberId=(?P<member>[^,]+), groupInstanceId=(?P<instance_id>[^,]+),.*?\)|(?P<member2>\S+)) "
            rf"has left group {G} through explicit `LeaveGroup`; client reason: (?P<reason>.*)$",
            f"{_GC} 3.2-3.9", "through explicit `LeaveGroup`; client reason: "),
    Message(K.MEMBER_LEFT, Side.BROKER, Library.BROKER,
            r"Member (?:MemberMetadata\(memberId=(?P<member>[^,]+), groupInstanceId=(?P<instance_id>[^,]+),.*?\)|(?P<member2>\S+)) "
            rf"has left group {G} through explicit `LeaveGroup` request\s*$",
            f"{_GC} 3.0-3.1 (handleLeaveGroup, after the rebalance it causes)", "through explicit `LeaveGroup` request"),
    Message(K.MEMBER_LEFT, Side.BROKER, Library.BROKER,
            r"Member\[group\.instance\.id (?P<instance_id>[^,]+), member\.id (?P<member>[^\]]+)\] in group "
            rf"{G} has left, removing it from the group",
            f"{_GC} 2.4-3.1", "] in group "),
    Message(K.MEMBER_LEFT, Side.BROKER, Library.BROKER,
            rf"Member {M} in group {G} has left, removing it from the group",
            f"{_GC} 2.2-2.3 (DEBUG in 1.1-2.1)", " has left, removing it from the group"),
    Message(K.MEMBER_LEFT, Side.BROKER, Library.BROKER,
            rf"Pending member (?:with memberId=)?{M} (?:is leaving|has left) group {G}\.?(?: through explicit `LeaveGroup` request)?\s*$",
            f"{_GC} 2.2-3.9", "Pending member ", {"pending": "true"}),
    Message(K.MEMBER_JOINED, Side.BROKER, Library.BROKER,
            rf"(?P<membership>Static|Dynamic) [mM]ember with unknown member id joins group {G} in (?:state )?(?P<state>\w+)"
            rf"(?: state)?\. Created a new member id {M}(?: for this member| and)",
            f"{_GC} 2.8-3.9 (DEBUG before 2.8); {_NEW}", " with unknown member id joins group "),
    Message(K.MEMBER_JOINED, Side.BROKER, Library.BROKER,
            rf"Static member with groupInstanceId=(?P<instance_id>\S+) and unknown member id joins group {G} in "
            r"(?P<state>\w+) state\. (?:Replacing previously mapped member (?P<old_member>\S+?) with this groupInstanceId|"
            rf"Created a new member id {M} for this member)",
            f"{_GC} 3.0-3.9; {_NEW}", "Static member with groupInstanceId=", {"membership": "Static"}),
    Message(K.MEMBER_JOINED, Side.BROKER, Library.BROKER,
            rf"Static member (?P<instance_id>\S+) (?:of group {G} )?with unknown member id rejoins, assigning new member id "
            r"(?P<member>\S+?), while old member (?:id )?(?P<old_member>\S+?) will be removed",
            f"{_GC} 2.3-2.8", "with unknown member id rejoins, assigning new member id",
            {"membership": "Static", "rejoin": "true"}),
    Message(K.MEMBER_JOINED, Side.BROKER, Library.BROKER,
            rf"Adding new static member (?P<instance_id>\S+) to group {G} with member id {M}\.?\s*$",
            f"{_GC} 2.8", "Adding new static member ", {"membership": "Static"}),
    Message(K.MEMBER_JOINED, Side.BROKER, Library.BROKER,
            rf"Pending dynamic member with id {M} joins group {G} in (?P<state>\w+) state",
            f"{_GC} 3.x (DEBUG); {_NEW}", "Pending dynamic member with id ", {"membership": "Dynamic"}),
    Message(K.MEMBERS_NOT_REJOINED, Side.BROKER, Library.BROKER,
            rf"Group {G} removed dynamic members who haven't joined: (?P<members_text>.*)$",
            f"{_GC} 2.8-3.9; {_NEW}", " removed dynamic members who haven't joined"),
    Message(K.GROUP_EMPTY, Side.BROKER, Library.BROKER,
            rf"Group {G} with generation (?P<generation>\d+) is now empty",
            f"{_GC} 0.10.1-3.9; {_NEW}", " is now empty"),
    Message(K.GROUP_DEAD, Side.BROKER, Library.BROKER,
            rf"Group {G} generation (?P<generation>\d+) is dead and removed",
            "core/src/main/scala/kafka/coordinator/GroupCoordinator.scala 0.10.0", " is dead and removed"),
    Message(K.GROUP_DEAD, Side.BROKER, Library.BROKER,
            rf"Group {G} is dead, skipping rebalance stage", f"{_GC} 2.4-3.9; {_NEW}", " is dead, skipping rebalance stage"),
    Message(K.GROUP_DEAD, Side.BROKER, Library.BROKER,
            rf"Group {G} transitioned to Dead in generation (?P<generation>\d+)",
            f"{_GMM} 1.1-3.9", " transitioned to Dead in generation "),
    Message(K.GROUP_LOADED, Side.BROKER, Library.BROKER,
            rf"Loading group metadata for {G} with generation (?P<generation>\d+)", f"{_GC} 0.10-3.9",
            "Loading group metadata for "),
    Message(K.GROUP_LOADED, Side.BROKER, Library.BROKER,
            rf"Loaded consumer group {G} with (?P<members>\d+) members", _NEW, "Loaded consumer group "),
    Message(K.GROUP_LOADED, Side.BROKER, Library.BROKER,
            rf"Loaded classic group {G} with (?P<members>\d+) members", _NEW, "Loaded classic group "),
    Message(K.GROUP_UNLOADED, Side.BROKER, Library.BROKER,
            rf"Unloading group metadata for {G} with generation (?P<generation>\d+)", f"{_GC} 0.10-3.9",
            "Unloading group metadata for "),
    Message(K.GROUP_UNLOADED, Side.BROKER, Library.BROKER,
            rf"\[GroupId={G}\] Unload(?:ed|ing) group metadata for (?:group epoch|generation) (?P<generation>\d+)", _NEW,
            "group metadata for "),
    Message(K.COORDINATOR_LOADED, Side.BROKER, Library.BROKER,
            r"Finished loading offsets and group metadata from __consumer_offsets-(?P<partition>\d+)(?: in (?P<took_ms>\d+) milliseconds)?",
            f"{_GMM} 0.10-3.9", "Finished loading offsets and group metadata from "),
    Message(K.COORDINATOR_LOADED, Side.BROKER, Library.BROKER,
            r"Elected as the group coordinator for partition (?P<partition>\d+)", f"{_GC} 2.8-3.9",
            "Elected as the group coordinator for partition "),
    Message(K.COORDINATOR_UNLOADED, Side.BROKER, Library.BROKER,
            r"(?:Scheduling unloading of offsets and group metadata from __consumer_offsets-|Resigned as the group "
            r"coordinator for partition )(?P<partition>\d+)", f"{_GMM}, {_GC} 0.10-3.9", "of offsets and group metadata from "),
    Message(K.COORDINATOR_UNLOADED, Side.BROKER, Library.BROKER,
            r"Resigned as the group coordinator for partition (?P<partition>\d+)", f"{_GC} 2.8-3.9",
            "Resigned as the group coordinator for partition "),
    Message(K.COORDINATOR_LOADED, Side.BROKER, Library.BROKER,
            r"Finished loading of metadata from __consumer_offsets-(?P<partition>\d+) with epoch \d+", _RT,
            "Finished loading of metadata from __consumer_offsets-"),
    Message(K.COORDINATOR_UNLOADED, Side.BROKER, Library.BROKER,
            r"Scheduling unloading of metadata for __consumer_offsets-(?P<partition>\d+) with epoch \d+", _RT,
            "Scheduling unloading of metadata for __consumer_offsets-"),
    # A write to the group's __consumer_offsets partition refused: fewer in-sync replicas than
    # min.insync.replicas (the exception's line under ReplicaManager's ERROR "Error processing
    # append operation on partition __consumer_offsets-N"; the coordinator answers
    # COORDINATOR_NOT_AVAILABLE and, in SyncGroup, rebalances again).
    Message(K.COORDINATOR_WRITE_FAILED, Side.BROKER, Library.BROKER,
            r"NotEnoughReplicasException: The size of the current ISR .*? is insufficient to satisfy the min\.isr "
            r"requirement of \d+ for partition __consumer_offsets-(?P<partition>\d+)",
            f"{_PARTITION} 2.1-4.x", "is insufficient to satisfy the min.isr requirement", {"reason": "NotEnoughReplicas"}),
    Message(K.COORDINATOR_WRITE_FAILED, Side.BROKER, Library.BROKER,
            r"NotEnoughReplicasException: Number of insync replicas for partition __consumer_offsets-(?P<partition>\d+) "
            r"is \[\d+\], below required minimum \[\d+\]",
            f"{_PARTITION} 0.10-2.0", "Number of insync replicas for partition __consumer_offsets-",
            {"reason": "NotEnoughReplicas"}),
    Message(K.GROUP_WRITE_FAILED, Side.BROKER, Library.BROKER,
            rf"Metadata from group {G} with generation (?P<generation>-?\d+) failed when appending to log due to "
            r"(?P<reason>\S+)", f"{_GMM} storeGroup 0.10-3.9 (DEBUG)", "failed when appending to log due to "),
    Message(K.GROUP_WRITE_FAILED, Side.BROKER, Library.BROKER,
            rf"Appending metadata message for group {G} generation (?P<generation>-?\d+) failed due to (?:unexpected "
            r"error: )?(?P<reason>[^\s,]+)", f"{_GMM} storeGroup 0.10-3.9 (ERROR)", "Appending metadata message for group "),
    Message(K.GROUP_WRITE_FAILED, Side.BROKER, Library.BROKER,
            rf"Offset commit .*? from group {G}, consumer {M} with generation (?P<generation>-?\d+) failed when "
            r"appending to log due to (?P<reason>\S+)", f"{_GMM} storeOffsets 0.10-3.9 (DEBUG)",
            "failed when appending to log due to "),
    # ---------------------------------------------------------------- broker, KIP-848 consumer groups
    Message(K.GROUP_EPOCH_BUMPED, Side.BROKER, Library.BROKER_KIP848,
            rf"\[GroupId {G}\] Bumped group epoch to (?P<generation>\d+)", _NEW, "Bumped group epoch to "),
    Message(K.TARGET_ASSIGNMENT, Side.BROKER, Library.BROKER_KIP848,
            rf"\[GroupId {G}\] Computed a new target assignment for epoch (?P<generation>\d+) with '(?P<assignor>[^']*)' "
            r"assignor in (?P<took_ms>\d+)ms", _NEW, "Computed a new target assignment for epoch "),
    Message(K.MEMBER_EPOCH, Side.BROKER, Library.BROKER_KIP848,
            rf"\[GroupId {G}\] Member {M} new assignment state: epoch=(?P<generation>-?\d+), previousEpoch="
            r"(?P<old_generation>-?\d+), state=(?P<state>\w+), assignedPartitions=(?P<partitions>.*?)\.?\s*$",
            _NEW, " new assignment state: epoch="),
    Message(K.MEMBER_FENCED, Side.BROKER, Library.BROKER_KIP848,
            rf"\[GroupId {G}\] Member {M} fenced from the group because (?P<reason>.*?)\.?\s*$", _NEW,
            " fenced from the group because "),
    Message(K.MEMBER_JOINED, Side.BROKER, Library.BROKER_KIP848,
            rf"\[GroupId {G}\] (?:(?P<membership>Static) member {M} with instance id (?P<instance_id>\S+)|Member {M.replace('member', 'member2')}) "
            r"joins the consumer group using the (?P<protocol>\w+) protocol", _NEW, " joins the consumer group using the "),
    Message(K.MEMBER_JOINED, Side.BROKER, Library.BROKER_KIP848,
            rf"\[GroupId {G}\] Static member with instance id (?P<instance_id>\S+) re-joins the consumer group using the "
            rf"(?P<protocol>\w+) protocol\. Created a new member {M} to replace the existing member (?P<old_member>\S+?)\.",
            _NEW, " re-joins the consumer group using the ", {"membership": "Static", "rejoin": "true"}),
    Message(K.MEMBER_JOINED, Side.BROKER, Library.BROKER_KIP848,
            rf"\[GroupId {G}\] Dynamic member with unknown member id joins the consumer group\. Created a new member id {M} ",
            _NEW, "Dynamic member with unknown member id joins the consumer group", {"membership": "Dynamic"}),
    Message(K.MEMBER_LEFT, Side.BROKER, Library.BROKER_KIP848,
            rf"\[GroupId {G}\] (?:(?P<membership>Static) Member {M} with instance id (?P<instance_id>\S+) "
            rf"(?P<temporarily>temporarily )?|Member {M.replace('member', 'member2')} )left the consumer group",
            _NEW, "left the consumer group"),
    Message(K.SUBSCRIPTION_CHANGED, Side.BROKER, Library.BROKER_KIP848,
            rf"\[GroupId {G}\] Member {M} updated its subscribed topics to: (?P<topics>.*?)\.?\s*$", _NEW,
            " updated its subscribed topics to: "),
    Message(K.METADATA_CHANGED, Side.BROKER, Library.BROKER_KIP848,
            rf"\[GroupId {G}\] Computed new subscription metadata: (?P<topics>.*?)\.?\s*$", _NEW,
            "Computed new subscription metadata: "),
    Message(K.GROUP_CONVERTED, Side.BROKER, Library.BROKER_KIP848,
            rf"\[GroupId {G}\] Converted the classic group to a consumer group\.",
            f"{_NEW4} convertToConsumerGroup", "] Converted the classic group to a consumer group",
            {"protocol": "consumer"}),
    Message(K.GROUP_CONVERTED, Side.BROKER, Library.BROKER_KIP848,
            rf"\[GroupId {G}\] Converted the consumer group to a classic group\.",
            f"{_NEW4} convertToClassicGroup", "] Converted the consumer group to a classic group",
            {"protocol": "classic"}),
    Message(K.CONVERSION_REFUSED, Side.BROKER, Library.BROKER_KIP848,
            rf"Cannot (?P<direction>upgrade|downgrade) (?:the )?(?:classic|consumer) group {G}:? (?:to (?:consumer|classic) group )?"
            r"because (?P<reason>.*?)\.?\s*$", _NEW, " group because "),
    # ---------------------------------------------------------------- clients: Java (classic)
    Message(K.CLIENT_JOIN_START, Side.CLIENT, Library.JAVA, rf"\(Re-\)joining group(?: {G})?\s*$", f"{_AC} 0.10-3.9; {_KP}",
            "(Re-)joining group"),
    Message(K.CLIENT_REJOIN_REQUESTED, Side.CLIENT, Library.JAVA, r"Request joining group due to: (?P<reason>.*)$",
            f"{_AC} 3.1-3.9", "Request joining group due to: "),
    Message(K.CLIENT_JOINED, Side.CLIENT, Library.JAVA, rf"Successfully joined group with generation {GENERATION_OBJECT}",
            f"{_AC} 2.4-3.9", "Successfully joined group with generation "),
    Message(K.CLIENT_JOINED, Side.CLIENT, Library.JAVA, r"Successfully joined group with generation (?P<generation>-?\d+)\s*$",
            f"{_AC} 2.0-2.3", "Successfully joined group with generation "),
    Message(K.CLIENT_JOINED, Side.CLIENT, Library.JAVA, rf"Successfully joined group {G} with generation (?P<generation>-?\d+)",
            f"{_AC} 0.10-1.1; {_KP} up to 2.0", "Successfully joined group "),
    Message(K.CLIENT_JOINED, Side.CLIENT, Library.KAFKA_PYTHON,
            rf"Successfully joined group {G} <Generation (?P<generation>-?\d+) \(member_id: (?P<member>[^,]*), "
            r"protocol: (?P<protocol>[^)]*)\)>", f"{_KP} 2.1+", "Successfully joined group "),
    Message(K.CLIENT_SYNCED, Side.CLIENT, Library.JAVA, rf"Successfully synced group in generation {GENERATION_OBJECT}",
            f"{_AC} 2.7-3.9", "Successfully synced group in generation "),
    Message(K.CLIENT_LEADER_ASSIGNED, Side.CLIENT, Library.JAVA,
            r"Finished assignment for group at generation (?P<generation>\d+): ", f"{_CC} 2.4-3.9",
            "Finished assignment for group at generation "),
    Message(K.CLIENT_LEADER_ASSIGNED, Side.CLIENT, Library.KAFKA_PYTHON,
            r"Elected group leader -- performing partition assignments using (?P<protocol>\S+)", _KP,
            "Elected group leader -- performing partition assignments"),
    Message(K.CLIENT_ASSIGNED, Side.CLIENT, Library.JAVA, r"Adding newly assigned partitions: ?(?P<partitions>.*)$", _RLI,
            "Adding newly assigned partitions"),
    Message(K.CLIENT_ASSIGNED, Side.CLIENT, Library.JAVA,
            rf"Setting newly assigned partitions:? (?P<partitions>.*?)(?: for group {G})?\s*$",
            f"{_CC} 0.10-3.6; {_KP}", "Setting newly assigned partitions"),
    Message(K.CLIENT_REVOKED, Side.CLIENT, Library.JAVA, r"Revoke previously assigned partitions ?(?P<partitions>.*)$", _RLI,
            "Revoke previously assigned partitions"),
    Message(K.CLIENT_REVOKED, Side.CLIENT, Library.JAVA,
            rf"Revoking previously assigned partitions:? (?P<partitions>.*?)(?: for group {G})?(?: on close)?\s*$",
            f"{_CC} 0.10-3.6; {_AMM}; {_KP}", "Revoking previously assigned partitions"),
    Message(K.CLIENT_LOST, Side.CLIENT, Library.JAVA, r"Lost previously assigned partitions ?(?P<partitions>.*)$",
            f"{_RLI}; {_CC} 2.4-3.6", "Lost previously assigned partitions"),
    Message(K.CLIENT_LOST, Side.CLIENT, Library.JAVA, r"Giving away all assigned partitions as lost", f"{_CC} 2.4-3.9",
            "Giving away all assigned partitions as lost"),
    Message(K.CLIENT_LOST, Side.CLIENT, Library.KAFKA_PYTHON, rf"Group {G} lost membership; forcibly revoking (?P<partitions>.*)$",
            f"{_KP} 2.1+", " lost membership; forcibly revoking "),
    Message(K.CLIENT_LEAVE, Side.CLIENT, Library.JAVA,
            rf"Member {M} sending LeaveGroup request to coordinator (?P<coordinator>.+?)(?: due to (?P<reason>.*))?\s*$",
            f"{_AC} 2.2-3.9 (reason from 3.1)", " sending LeaveGroup request to coordinator "),
    Message(K.CLIENT_LEAVE, Side.CLIENT, Library.KAFKA_PYTHON, rf"Leaving consumer group {G} \(member (?P<member>[^)]*)\)", _KP,
            "Leaving consumer group "),
    Message(K.CLIENT_POLL_TIMEOUT, Side.CLIENT, Library.JAVA, r"(?i:consumer poll timeout has expired)",
            f"{_AC} 2.1-3.9 (WARN, HeartbeatThread); {_KP}", "oll timeout has expired"),
    Message(K.CLIENT_POLL_TIMEOUT, Side.CLIENT, Library.LIBRDKAFKA,
            r"Application maximum poll interval \((?P<max_poll_ms>\d+)ms\) exceeded by (?P<exceeded_ms>\d+)ms", _RK,
            "Application maximum poll interval "),
    Message(K.CLIENT_HEARTBEAT_FAILED, Side.CLIENT, Library.JAVA, r"Attempt to heartbeat (?:failed|with .*? failed) (?P<reason>.*)$",
            f"{_AC} 0.10-3.9", "Attempt to heartbeat "),
    Message(K.CLIENT_HEARTBEAT_FAILED, Side.CLIENT, Library.KAFKA_PYTHON, rf"Heartbeat failed for group {G}[:,]? ?(?P<reason>.*)$",
            _KP, "Heartbeat failed for group "),
    Message(K.CLIENT_HEARTBEAT_FAILED, Side.CLIENT, Library.KAFKA_PYTHON, rf"Group {G} is rebalancing; rejoining", _KP,
            " is rebalancing; rejoining", {"reason": "group is rebalancing"}),
    Message(K.CLIENT_HEARTBEAT_FAILED, Side.CLIENT, Library.KAFKA_PYTHON, r"Heartbeat session expired", _KP,
            "Heartbeat session expired", {"reason": "heartbeat session expired"}),
    Message(K.CLIENT_HEARTBEAT_FAILED, Side.CLIENT, Library.JAVA_KIP848,
            r"(?P<request>ConsumerGroupHeartbeatRequest|ConsumerGroupHeartbeat) failed (?:because|due to) (?P<reason>.*)$",
            f"clients/.../AbstractHeartbeatRequestManager.java (trunk); {_RK}", "GroupHeartbeat"),
    Message(K.CLIENT_HEARTBEAT_FAILED, Side.CLIENT, Library.LIBRDKAFKA,
            r"Group \"(?P<group>[^\"]+)\" heartbeat error response in state (?P<state>\S+) \(join-state \S+, \d+ "
            r"partition\(s\) assigned\): (?P<reason>.*)$", _RK, " heartbeat error response in state "),
    Message(K.CLIENT_COMMIT_FAILED, Side.CLIENT, Library.JAVA,
            r"Offset commit failed(?: on partition (?P<partitions>\S+) at offset \d+)?: (?P<reason>.*)",
            f"{_CC} 0.10-3.9; {_KP}", "Offset commit failed"),
    Message(K.CLIENT_COMMIT_FAILED, Side.CLIENT, Library.JAVA,
            r"[Aa]uto-commit of offsets .*? failed(?: for group \S+)?: (?P<reason>.*)", f"{_CC} 0.10-3.9",
            "uto-commit of offsets "),
    Message(K.CLIENT_COMMIT_FAILED, Side.CLIENT, Library.JAVA, r"OffsetCommit failed with .*?: (?P<reason>.*)",
            f"{_CC} 2.6-3.9", "OffsetCommit failed with "),
    Message(K.CLIENT_COMMIT_FAILED, Side.CLIENT, Library.JAVA, r"Offset commit with offsets .*? failed", f"{_CC} 0.10-3.9",
            "Offset commit with offsets "),
    Message(K.CLIENT_COMMIT_FAILED, Side.CLIENT, Library.JAVA, r"CommitFailedException(?:: (?P<reason>.*))?",
            "clients/.../CommitFailedException.java (stack traces)", "CommitFailedException"),
    Message(K.CLIENT_RESET, Side.CLIENT, Library.JAVA, r"Resetting generation (?:and member id )?due to: (?P<reason>.*)$",
            f"{_AC} 2.6-3.9", "Resetting generation "),
    Message(K.CLIENT_JOIN_FAILED, Side.CLIENT, Library.JAVA, r"(?P<request>JoinGroup|SyncGroup) failed:? (?P<reason>.*)$",
            f"{_AC} 2.6-3.9", "Group failed"),
    Message(K.CLIENT_JOIN_FAILED, Side.CLIENT, Library.KAFKA_PYTHON,
            rf"Attempt to join group {G} (?:failed|rejected) (?P<reason>.*)$", _KP, "Attempt to join group "),
    Message(K.CLIENT_JOIN_FAILED, Side.CLIENT, Library.KAFKA_PYTHON,
            rf"SyncGroup for group {G} failed (?P<reason>.*)$", _KP, "SyncGroup for group "),
    Message(K.CLIENT_COORDINATOR_LOST, Side.CLIENT, Library.JAVA,
            r"Group coordinator (?P<coordinator>.+?) is unavailable or invalid(?P<reason>.*)$", f"{_AC} 2.0-3.9",
            " is unavailable or invalid"),
    Message(K.CLIENT_COORDINATOR_LOST, Side.CLIENT, Library.JAVA, r"Marking the coordinator (?P<coordinator>.+?) dead(?P<reason>.*)$",
            f"{_AC} 0.10-1.1; {_KP}", "Marking the coordinator "),
    # ---------------------------------------------------------------- clients: Java new consumer (KIP-848)
    Message(K.CLIENT_MEMBER_STATE, Side.CLIENT, Library.JAVA_KIP848,
            r"Member (?P<member>\S+) with epoch (?P<generation>-?\d+) transitioned from (?P<from_state>\w+) to "
            r"(?P<state>\w+)", _AMM, " transitioned from "),
    Message(K.CLIENT_RECONCILING, Side.CLIENT, Library.JAVA_KIP848, r"Reconciling assignment with local epoch (?P<generation>\d+)",
            _AMM, "Reconciling assignment with local epoch "),
    Message(K.CLIENT_FENCED, Side.CLIENT, Library.JAVA_KIP848,
            r"failed for member (?P<member>\S+) because epoch (?P<generation>-?\d+) is fenced",
            "clients/.../AbstractHeartbeatRequestManager.java (trunk)", " is fenced"),
    # ---------------------------------------------------------------- Spring Kafka
    Message(K.CLIENT_ASSIGNED, Side.CLIENT, Library.SPRING, rf"{G}: partitions assigned: (?P<partitions>\[.*\])", _SK,
            ": partitions assigned: "),
    Message(K.CLIENT_REVOKED, Side.CLIENT, Library.SPRING, rf"{G}: partitions revoked: (?P<partitions>\[.*\])", _SK,
            ": partitions revoked: "),
    Message(K.CLIENT_LOST, Side.CLIENT, Library.SPRING, rf"{G}: partitions lost: (?P<partitions>\[.*\])", _SK,
            ": partitions lost: "),
    # ---------------------------------------------------------------- librdkafka (debug=cgrp)
    Message(K.CLIENT_JOIN_STATE, Side.CLIENT, Library.LIBRDKAFKA,
            r"Group \"(?P<group>[^\"]+)\" changed join state (?P<from_state>[\w-]+) -> (?P<state>[\w-]+)", _RK,
            " changed join state "),
    Message(K.CLIENT_JOINED, Side.CLIENT, Library.LIBRDKAFKA,
            r"JoinGroup response: GenerationId (?P<generation>-?\d+), Protocol (?P<protocol>\S*), LeaderId "
            r"(?P<leader>[^\s,]*)(?: \(me\))?, my MemberId (?P<member>[^\s,]+)", _RK, "JoinGroup response: GenerationId "),
    Message(K.CLIENT_JOIN_START, Side.CLIENT, Library.LIBRDKAFKA,
            r"Joining group \"(?P<group>[^\"]+)\" with \d+ subscribed topic\(s\)", _RK, "Joining group \""),
    Message(K.CLIENT_ASSIGNED, Side.CLIENT, Library.LIBRDKAFKA,
            r"Group \"(?P<group>[^\"]+)\": delegating (?:incremental )?assign of (?P<count>\d+) partition\(s\)", _RK,
            "assign of "),
    Message(K.CLIENT_REVOKED, Side.CLIENT, Library.LIBRDKAFKA,
            r"Group \"(?P<group>[^\"]+)\": delegating (?:incremental )?revoke of (?P<count>\d+) partition\(s\)", _RK,
            "revoke of "),
    # ---------------------------------------------------------------- Kafka Streams
    Message(K.CLIENT_STREAMS_STATE, Side.CLIENT, Library.STREAMS,
            r"(?P<scope>stream-thread|stream-client) \[(?P<thread>[^\]]+)\] State transition from (?P<from_state>\w+) to "
            r"(?P<state>\w+)", _KS, "State transition from "),
)

# Lines about groups that carry no rebalance information: recognised, so the coverage figures
# do not count them as missed, but they produce no events.
IGNORED: tuple[str, ...] = (
    r"Removed \d+ expired offsets in",
    r"TransactionCoordinator|transactionalId|TransactionStateManager|ProducerStateManager",
    r"The following (?:groups|offsets of the group) .* were deleted",
    r"\b(?:Starting up|Startup complete|Shutting down|Shutdown complete)\.",
    r"Scheduling loading of offsets and group metadata from",
    r"Already loading offsets and group metadata from",
    r"Finished unloading __consumer_offsets-",
    r"Discovered (?:group )?coordinator ",
    r"Setting offset for partition ",
    r"Found no committed offset for partition",
    r"Notifying assignor about the new ",
    r"Updating assignment with",
    r"Static member which joins during Stable stage",
    r"Subscribed to topic",
    r"Resetting offset for partition",
    r"Seeking to (?:offset|earliest|latest)",
    r"Committed offset",
    r"Requesting disconnect from last known coordinator",
    r"^\s*(?:Assigned|Current owned|Added|Revoked|Member|Stable|Prev) ?\w* partitions?",
)
IGNORED_PATTERN = re.compile("|".join(f"(?:{p})" for p in IGNORED))

# Lines that look like they are about group membership. What matches none of MESSAGES nor
# IGNORED is counted as unrecognised (by shape), so coverage is visible.
RELEVANT = re.compile(r"[Rr]ebalanc|REBALANC|[Gg]eneration|\b[Mm]ember|\b[Gg]roup\b|groupId|[Aa]ssignment|"
                      r"assigned partitions|[Rr]evok|[Hh]eartbeat|[Cc]oordinator|[Ee]poch|"
                      # ReplicaManager's ERROR over a refused write to a coordinator's partition: read with the
                      # exception's line after it (``parse._parse_numbered`` joins them)
                      r"append operation on partition __consumer_offsets")
# Lines written by a logger (a level, or a JSON record), as opposed to prose around a paste:
# only these can count as unrecognised.
LOG_LIKE = re.compile(r"\b(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\b|^\s*\{|^%\d\|")
# The gate (``scan``'s byte search in a Spark task, ``parse.passes_gate`` on a str): every line MESSAGES can match
# contains one of these (broker lines name GroupCoordinator/GroupMetadataManager/GroupId, Java
# client lines carry "groupId=", librdkafka and kafka-python name the group; Spring, Streams,
# kafka-python's heartbeat and poll-timeout warnings are the exceptions listed). Most lines of
# a broker log fail it at once; five substring tests cost about what reading the line does.
GATE_SUBSTRINGS: tuple[str, ...] = ("roup", "partitions ", "State transition", "oll timeout", "eartbeat",
                                    "NotEnoughReplicasException", "append operation on partition __consumer_offsets")
# The commonest lines that pass the gate but are never about membership: dropped with the gate,
# before the finer tests (the coordinator's offset expiry runs every few minutes on every broker).
NOISE_SUBSTRINGS: tuple[str, ...] = ("expired offsets in", "TransactionCoordinator", "TransactionStateManager")

@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


LOGGER_SUFFIX = re.compile(r"\s\((?:kafka|org\.apache|state\.change|io\.confluent)[\w.$]*\)\s*$")
BROKER_PREFIX = re.compile(r"\[GroupCoordinator (?:id=)?(?P<broker>\d+)(?: topic=__consumer_offsets partition=(?P<partition>\d+))?\]:? ")
JAVA_CLIENT_PREFIX = re.compile(r"\[(?:Consumer|Share[Cc]onsumer) clientId=(?P<client_id>[^,\]]+), groupId=(?P<group>[^\]]+)\]")
RDKAFKA_PREFIX = re.compile(r"%\d\|\d+\.\d+\|(?P<facility>[A-Z_]+)\|(?P<client_id>[^|]*)\|")
KAFKA_PYTHON_LOGGER = re.compile(r"kafka\.coordinator")
MEMBER_UUID_SUFFIX = re.compile(r"-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
STREAMS_THREAD = re.compile(r"^(?P<app>.+?)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
                            r"(?:-StreamThread-\d+)?$")


def client_of(member: str | None) -> str | None:
    """The client part of a member id (client.id or group.instance.id + '-' + a UUID): what
    stays the same when a consumer process rejoins with a new member id."""
    if not member:
        return member
    return _client_of(member)


@lru_cache(maxsize=1 << 16)
def _client_of(member: str) -> str:
    """Cached: a story asks for the client of each member at each of its lines (a regex
    substitution costs about 0.5 us, a cache hit a fifth of that)."""
    return MEMBER_UUID_SUFFIX.sub("", member)
