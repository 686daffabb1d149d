"""Every message about group membership that Kafka brokers and clients log, per version.

Each ``Message`` is one wording, written from the format string at the source named in its
``source``; a line is matched by searching (not anchoring) the message's regex in the
unwrapped line, so any prefix layout works (see ``layout``). ``MARKERS`` are fixed phrases:
a line that contains none of them cannot match any message, which is what the Spark job
tests on the JVM before a line ever reaches Python.

Event kinds (the ``kind`` of a parsed line) are grouped by side:

broker, classic protocol   preparing_rebalance, stabilized, assignment_received, member_failed,
                           member_left, member_joined, group_empty, group_dead,
                           members_not_rejoined, group_loaded, group_unloaded,
                           coordinator_loaded, coordinator_unloaded
broker, consumer protocol  group_epoch_bumped, target_assignment, member_epoch, member_fenced,
(KIP-848, 3.7+)            member_joined, member_left, subscription_changed, metadata_changed,
                           conversion_refused
client                     client_join_start, client_rejoin_requested, client_joined,
                           client_synced, client_assigned, client_revoked, client_lost,
                           client_leave, client_poll_timeout, client_heartbeat_failed,
                           client_commit_failed, client_reset, client_join_failed,
                           client_coordinator_lost, client_member_state, client_fenced,
                           client_join_state, client_streams_state, client_leader_assigned
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# A group id ends at whitespace, ':', ',' or ']', or at a sentence's final '.'.
G = r"(?P<group>[^\s\]]+?)(?=[\s:,\]]|\.(?:\s|$)|$)"
M = r"(?P<member>\S+?)"
GENERATION_OBJECT = (r"Generation\{generationId=(?P<generation>-?\d+), memberId='(?P<member>[^']*)', "
                     r"protocol='(?P<protocol>[^']*)'\}")


@dataclass(frozen=True)
class Message:
    kind: str
    side: str  # broker or client
    library: str  # who logs it: broker, broker-kip848, java, java-kip848, spring, kafka-python, librdkafka, streams
    pattern: str
    source: str  # where the format string is, and the versions that use it
    marker: str  # a fixed phrase every matching line contains
    fixed: dict[str, str] = field(default_factory=dict)  # fields the wording itself implies

    def compiled(self) -> re.Pattern[str]:
        return _COMPILED[self.pattern]


_GC = "core/src/main/scala/kafka/coordinator/group/GroupCoordinator.scala"
_GMM = "core/src/main/scala/kafka/coordinator/group/GroupMetadataManager.scala"
_NEW = "group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupMetadataManager.java (trunk, 3.7+/4.x)"
# The online migration's INFO lines came after the mirrored trunk (4.0+).
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
    Message("preparing_rebalance", "broker", "broker",
            rf"Preparing to rebalance group {G}(?: in state (?P<state>\w+))? with old generation "
            r"(?P<old_generation>\d+)(?: \(__consumer_offsets-(?P<partition>\d+)\))?(?: \(reason: (?P<reason>.*)\))?\.?\s*$",
            f"{_GC} 0.11-3.9 (state and reason from 2.1); {_NEW}", "Preparing to rebalance group "),
    Message("preparing_rebalance", "broker", "broker",
            rf"Preparing to restabilize group {G} with old generation (?P<old_generation>\d+)",
            "core/src/main/scala/kafka/coordinator/GroupCoordinator.scala 0.10.0-0.10.2", "Preparing to restabilize group "),
    Message("stabilized", "broker", "broker",
            rf"Stabilized group {G} generation (?P<generation>\d+)(?: \(__consumer_offsets-(?P<partition>\d+)\))?"
            r"(?: with (?P<members>\d+) members)?",
            f"{_GC} 0.10.0-3.9 (members from 2.5); {_NEW}", "Stabilized group "),
    Message("assignment_received", "broker", "broker",
            rf"Assignment received from leader (?:{M} )?for group {G} for generation (?P<generation>\d+)"
            r"(?:\. The group has (?P<members>\d+) members, (?P<static_members>\d+) of which are static)?",
            f"{_GC} 0.11-3.9 (leader and member counts from 2.8); {_NEW}", "Assignment received from leader "),
    Message("member_failed", "broker", "broker",
            rf"Member {M} in group {G} has failed, removing it from the group",
            f"{_GC} 0.10-3.9 (INFO from 1.1); {_NEW}", " has failed, removing it from the group"),
    Message("member_failed", "broker", "broker",
            rf"Pending member {M} in group {G} has been removed after session timeout expiration",
            f"{_GC} 2.2-3.9; {_NEW}", "has been removed after session timeout expiration", {"pending": "true"}),
    Message("member_left", "broker", "broker",
            rf"\[Group {G}\] (?:(?P<membership>Dynamic|Static) )?Member {M}(?: with instance id (?P<instance_id>\S+))? "
            r"has left group through explicit `LeaveGroup` request; client reason: (?P<reason>.*)$",
            f"{_NEW}", "has left group through explicit `LeaveGroup` request"),
    Message("member_left", "broker", "broker",
            r"Member (?:MemberMetadata\(memberId=(?P<member>[^,]+), groupInstanceId=(?P<instance_id>[^,]+),.*?\)|(?P<member2>\S+)) "
            rf"has left group {G} through explicit `LeaveGroup`; client reason: (?P<reason>.*)$",
            f"{_GC} 3.2-3.9", "through explicit `LeaveGroup`; client reason: "),
    Message("member_left", "broker", "broker",
            r"Member (?:MemberMetadata\(memberId=(?P<member>[^,]+), groupInstanceId=(?P<instance_id>[^,]+),.*?\)|(?P<member2>\S+)) "
            rf"has left group {G} through explicit `LeaveGroup` request\s*$",
            f"{_GC} 3.0-3.1 (handleLeaveGroup, after the rebalance it causes)", "through explicit `LeaveGroup` request"),
    Message("member_left", "broker", "broker",
            r"Member\[group\.instance\.id (?P<instance_id>[^,]+), member\.id (?P<member>[^\]]+)\] in group "
            rf"{G} has left, removing it from the group",
            f"{_GC} 2.4-3.1", "] in group "),
    Message("member_left", "broker", "broker",
            rf"Member {M} in group {G} has left, removing it from the group",
            f"{_GC} 2.2-2.3 (DEBUG in 1.1-2.1)", " has left, removing it from the group"),
    Message("member_left", "broker", "broker",
            rf"Pending member (?:with memberId=)?{M} (?:is leaving|has left) group {G}\.?(?: through explicit `LeaveGroup` request)?\s*$",
            f"{_GC} 2.2-3.9", "Pending member ", {"pending": "true"}),
    Message("member_joined", "broker", "broker",
            rf"(?P<membership>Static|Dynamic) [mM]ember with unknown member id joins group {G} in (?:state )?(?P<state>\w+)"
            rf"(?: state)?\. Created a new member id {M}(?: for this member| and)",
            f"{_GC} 2.8-3.9 (DEBUG before 2.8); {_NEW}", " with unknown member id joins group "),
    Message("member_joined", "broker", "broker",
            rf"Static member with groupInstanceId=(?P<instance_id>\S+) and unknown member id joins group {G} in "
            r"(?P<state>\w+) state\. (?:Replacing previously mapped member (?P<old_member>\S+?) with this groupInstanceId|"
            rf"Created a new member id {M} for this member)",
            f"{_GC} 3.0-3.9; {_NEW}", "Static member with groupInstanceId=", {"membership": "Static"}),
    Message("member_joined", "broker", "broker",
            rf"Static member (?P<instance_id>\S+) (?:of group {G} )?with unknown member id rejoins, assigning new member id "
            r"(?P<member>\S+?), while old member (?:id )?(?P<old_member>\S+?) will be removed",
            f"{_GC} 2.3-2.8", "with unknown member id rejoins, assigning new member id",
            {"membership": "Static", "rejoin": "true"}),
    Message("member_joined", "broker", "broker",
            rf"Adding new static member (?P<instance_id>\S+) to group {G} with member id {M}\.?\s*$",
            f"{_GC} 2.8", "Adding new static member ", {"membership": "Static"}),
    Message("member_joined", "broker", "broker",
            rf"Pending dynamic member with id {M} joins group {G} in (?P<state>\w+) state",
            f"{_GC} 3.x (DEBUG); {_NEW}", "Pending dynamic member with id ", {"membership": "Dynamic"}),
    Message("members_not_rejoined", "broker", "broker",
            rf"Group {G} removed dynamic members who haven't joined: (?P<members_text>.*)$",
            f"{_GC} 2.8-3.9; {_NEW}", " removed dynamic members who haven't joined"),
    Message("group_empty", "broker", "broker",
            rf"Group {G} with generation (?P<generation>\d+) is now empty",
            f"{_GC} 0.10.1-3.9; {_NEW}", " is now empty"),
    Message("group_dead", "broker", "broker",
            rf"Group {G} generation (?P<generation>\d+) is dead and removed",
            "core/src/main/scala/kafka/coordinator/GroupCoordinator.scala 0.10.0", " is dead and removed"),
    Message("group_dead", "broker", "broker",
            rf"Group {G} is dead, skipping rebalance stage", f"{_GC} 2.4-3.9; {_NEW}", " is dead, skipping rebalance stage"),
    Message("group_dead", "broker", "broker",
            rf"Group {G} transitioned to Dead in generation (?P<generation>\d+)",
            f"{_GMM} 1.1-3.9", " transitioned to Dead in generation "),
    Message("group_loaded", "broker", "broker",
            rf"Loading group metadata for {G} with generation (?P<generation>\d+)", f"{_GC} 0.10-3.9",
            "Loading group metadata for "),
    Message("group_loaded", "broker", "broker",
            rf"Loaded consumer group {G} with (?P<members>\d+) members", _NEW, "Loaded consumer group "),
    Message("group_loaded", "broker", "broker",
            rf"Loaded classic group {G} with (?P<members>\d+) members", _NEW, "Loaded classic group "),
    Message("group_unloaded", "broker", "broker",
            rf"Unloading group metadata for {G} with generation (?P<generation>\d+)", f"{_GC} 0.10-3.9",
            "Unloading group metadata for "),
    Message("group_unloaded", "broker", "broker",
            rf"\[GroupId={G}\] Unload(?:ed|ing) group metadata for (?:group epoch|generation) (?P<generation>\d+)", _NEW,
            "group metadata for "),
    Message("coordinator_loaded", "broker", "broker",
            r"Finished loading offsets and group metadata from __consumer_offsets-(?P<partition>\d+)(?: in (?P<took_ms>\d+) milliseconds)?",
            f"{_GMM} 0.10-3.9", "Finished loading offsets and group metadata from "),
    Message("coordinator_loaded", "broker", "broker",
            r"Elected as the group coordinator for partition (?P<partition>\d+)", f"{_GC} 2.8-3.9",
            "Elected as the group coordinator for partition "),
    Message("coordinator_unloaded", "broker", "broker",
            r"(?:Scheduling unloading of offsets and group metadata from __consumer_offsets-|Resigned as the group "
            r"coordinator for partition )(?P<partition>\d+)", f"{_GMM}, {_GC} 0.10-3.9", "of offsets and group metadata from "),
    Message("coordinator_unloaded", "broker", "broker",
            r"Resigned as the group coordinator for partition (?P<partition>\d+)", f"{_GC} 2.8-3.9",
            "Resigned as the group coordinator for partition "),
    # ---------------------------------------------------------------- broker, KIP-848 consumer groups
    Message("group_epoch_bumped", "broker", "broker-kip848",
            rf"\[GroupId {G}\] Bumped group epoch to (?P<generation>\d+)", _NEW, "Bumped group epoch to "),
    Message("target_assignment", "broker", "broker-kip848",
            rf"\[GroupId {G}\] Computed a new target assignment for epoch (?P<generation>\d+) with '(?P<assignor>[^']*)' "
            r"assignor in (?P<took_ms>\d+)ms", _NEW, "Computed a new target assignment for epoch "),
    Message("member_epoch", "broker", "broker-kip848",
            rf"\[GroupId {G}\] Member {M} new assignment state: epoch=(?P<generation>-?\d+), previousEpoch="
            r"(?P<old_generation>-?\d+), state=(?P<state>\w+), assignedPartitions=(?P<partitions>.*?)\.?\s*$",
            _NEW, " new assignment state: epoch="),
    Message("member_fenced", "broker", "broker-kip848",
            rf"\[GroupId {G}\] Member {M} fenced from the group because (?P<reason>.*?)\.?\s*$", _NEW,
            " fenced from the group because "),
    Message("member_joined", "broker", "broker-kip848",
            rf"\[GroupId {G}\] (?:(?P<membership>Static) member {M} with instance id (?P<instance_id>\S+)|Member {M.replace('member', 'member2')}) "
            r"joins the consumer group using the (?P<protocol>\w+) protocol", _NEW, " joins the consumer group using the "),
    Message("member_joined", "broker", "broker-kip848",
            rf"\[GroupId {G}\] Static member with instance id (?P<instance_id>\S+) re-joins the consumer group using the "
            rf"(?P<protocol>\w+) protocol\. Created a new member {M} to replace the existing member (?P<old_member>\S+?)\.",
            _NEW, " re-joins the consumer group using the ", {"membership": "Static", "rejoin": "true"}),
    Message("member_joined", "broker", "broker-kip848",
            rf"\[GroupId {G}\] Dynamic member with unknown member id joins the consumer group\. Created a new member id {M} ",
            _NEW, "Dynamic member with unknown member id joins the consumer group", {"membership": "Dynamic"}),
    Message("member_left", "broker", "broker-kip848",
            rf"\[GroupId {G}\] (?:(?P<membership>Static) Member {M} with instance id (?P<instance_id>\S+) "
            rf"(?P<temporarily>temporarily )?|Member {M.replace('member', 'member2')} )left the consumer group",
            _NEW, "left the consumer group"),
    Message("subscription_changed", "broker", "broker-kip848",
            rf"\[GroupId {G}\] Member {M} updated its subscribed topics to: (?P<topics>.*?)\.?\s*$", _NEW,
            " updated its subscribed topics to: "),
    Message("metadata_changed", "broker", "broker-kip848",
            rf"\[GroupId {G}\] Computed new subscription metadata: (?P<topics>.*?)\.?\s*$", _NEW,
            "Computed new subscription metadata: "),
    Message("group_converted", "broker", "broker-kip848",
            rf"\[GroupId {G}\] Converted the classic group to a consumer group\.",
            f"{_NEW4} convertToConsumerGroup", "] Converted the classic group to a consumer group",
            {"protocol": "consumer"}),
    Message("group_converted", "broker", "broker-kip848",
            rf"\[GroupId {G}\] Converted the consumer group to a classic group\.",
            f"{_NEW4} convertToClassicGroup", "] Converted the consumer group to a classic group",
            {"protocol": "classic"}),
    Message("conversion_refused", "broker", "broker-kip848",
            rf"Cannot (?P<direction>upgrade|downgrade) (?:the )?(?:classic|consumer) group {G}:? (?:to (?:consumer|classic) group )?"
            r"because (?P<reason>.*?)\.?\s*$", _NEW, " group because "),
    # ---------------------------------------------------------------- clients: Java (classic)
    Message("client_join_start", "client", "java", rf"\(Re-\)joining group(?: {G})?\s*$", f"{_AC} 0.10-3.9; {_KP}",
            "(Re-)joining group"),
    Message("client_rejoin_requested", "client", "java", r"Request joining group due to: (?P<reason>.*)$",
            f"{_AC} 3.1-3.9", "Request joining group due to: "),
    Message("client_joined", "client", "java", rf"Successfully joined group with generation {GENERATION_OBJECT}",
            f"{_AC} 2.4-3.9", "Successfully joined group with generation "),
    Message("client_joined", "client", "java", r"Successfully joined group with generation (?P<generation>-?\d+)\s*$",
            f"{_AC} 2.0-2.3", "Successfully joined group with generation "),
    Message("client_joined", "client", "java", rf"Successfully joined group {G} with generation (?P<generation>-?\d+)",
            f"{_AC} 0.10-1.1; {_KP} up to 2.0", "Successfully joined group "),
    Message("client_joined", "client", "kafka-python",
            rf"Successfully joined group {G} <Generation (?P<generation>-?\d+) \(member_id: (?P<member>[^,]*), "
            r"protocol: (?P<protocol>[^)]*)\)>", f"{_KP} 2.1+", "Successfully joined group "),
    Message("client_synced", "client", "java", rf"Successfully synced group in generation {GENERATION_OBJECT}",
            f"{_AC} 2.7-3.9", "Successfully synced group in generation "),
    Message("client_leader_assigned", "client", "java",
            r"Finished assignment for group at generation (?P<generation>\d+): ", f"{_CC} 2.4-3.9",
            "Finished assignment for group at generation "),
    Message("client_leader_assigned", "client", "kafka-python",
            r"Elected group leader -- performing partition assignments using (?P<protocol>\S+)", _KP,
            "Elected group leader -- performing partition assignments"),
    Message("client_assigned", "client", "java", r"Adding newly assigned partitions: ?(?P<partitions>.*)$", _RLI,
            "Adding newly assigned partitions"),
    Message("client_assigned", "client", "java",
            rf"Setting newly assigned partitions:? (?P<partitions>.*?)(?: for group {G})?\s*$",
            f"{_CC} 0.10-3.6; {_KP}", "Setting newly assigned partitions"),
    Message("client_revoked", "client", "java", r"Revoke previously assigned partitions ?(?P<partitions>.*)$", _RLI,
            "Revoke previously assigned partitions"),
    Message("client_revoked", "client", "java",
            rf"Revoking previously assigned partitions:? (?P<partitions>.*?)(?: for group {G})?(?: on close)?\s*$",
            f"{_CC} 0.10-3.6; {_AMM}; {_KP}", "Revoking previously assigned partitions"),
    Message("client_lost", "client", "java", r"Lost previously assigned partitions ?(?P<partitions>.*)$",
            f"{_RLI}; {_CC} 2.4-3.6", "Lost previously assigned partitions"),
    Message("client_lost", "client", "java", r"Giving away all assigned partitions as lost", f"{_CC} 2.4-3.9",
            "Giving away all assigned partitions as lost"),
    Message("client_lost", "client", "kafka-python", rf"Group {G} lost membership; forcibly revoking (?P<partitions>.*)$",
            f"{_KP} 2.1+", " lost membership; forcibly revoking "),
    Message("client_leave", "client", "java",
            rf"Member {M} sending LeaveGroup request to coordinator (?P<coordinator>.+?)(?: due to (?P<reason>.*))?\s*$",
            f"{_AC} 2.2-3.9 (reason from 3.1)", " sending LeaveGroup request to coordinator "),
    Message("client_leave", "client", "kafka-python", rf"Leaving consumer group {G} \(member (?P<member>[^)]*)\)", _KP,
            "Leaving consumer group "),
    Message("client_poll_timeout", "client", "java", r"(?i:consumer poll timeout has expired)",
            f"{_AC} 2.1-3.9 (WARN, HeartbeatThread); {_KP}", "oll timeout has expired"),
    Message("client_poll_timeout", "client", "librdkafka",
            r"Application maximum poll interval \((?P<max_poll_ms>\d+)ms\) exceeded by (?P<exceeded_ms>\d+)ms", _RK,
            "Application maximum poll interval "),
    Message("client_heartbeat_failed", "client", "java", r"Attempt to heartbeat (?:failed|with .*? failed) (?P<reason>.*)$",
            f"{_AC} 0.10-3.9", "Attempt to heartbeat "),
    Message("client_heartbeat_failed", "client", "kafka-python", rf"Heartbeat failed for group {G}[:,]? ?(?P<reason>.*)$",
            _KP, "Heartbeat failed for group "),
    Message("client_heartbeat_failed", "client", "kafka-python", rf"Group {G} is rebalancing; rejoining", _KP,
            " is rebalancing; rejoining", {"reason": "group is rebalancing"}),
    Message("client_heartbeat_failed", "client", "kafka-python", r"Heartbeat session expired", _KP,
            "Heartbeat session expired", {"reason": "heartbeat session expired"}),
    Message("client_heartbeat_failed", "client", "java-kip848",
            r"(?P<request>ConsumerGroupHeartbeatRequest|ConsumerGroupHeartbeat) failed (?:because|due to) (?P<reason>.*)$",
            f"clients/.../AbstractHeartbeatRequestManager.java (trunk); {_RK}", "GroupHeartbeat"),
    Message("client_heartbeat_failed", "client", "librdkafka",
            r"Group \"(?P<group>[^\"]+)\" heartbeat error response in state (?P<state>\S+) \(join-state \S+, \d+ "
            r"partition\(s\) assigned\): (?P<reason>.*)$", _RK, " heartbeat error response in state "),
    Message("client_commit_failed", "client", "java",
            r"Offset commit failed(?: on partition (?P<partitions>\S+) at offset \d+)?: (?P<reason>.*)",
            f"{_CC} 0.10-3.9; {_KP}", "Offset commit failed"),
    Message("client_commit_failed", "client", "java",
            r"[Aa]uto-commit of offsets .*? failed(?: for group \S+)?: (?P<reason>.*)", f"{_CC} 0.10-3.9",
            "uto-commit of offsets "),
    Message("client_commit_failed", "client", "java", r"OffsetCommit failed with .*?: (?P<reason>.*)",
            f"{_CC} 2.6-3.9", "OffsetCommit failed with "),
    Message("client_commit_failed", "client", "java", r"Offset commit with offsets .*? failed", f"{_CC} 0.10-3.9",
            "Offset commit with offsets "),
    Message("client_commit_failed", "client", "java", r"CommitFailedException(?:: (?P<reason>.*))?",
            "clients/.../CommitFailedException.java (stack traces)", "CommitFailedException"),
    Message("client_reset", "client", "java", r"Resetting generation (?:and member id )?due to: (?P<reason>.*)$",
            f"{_AC} 2.6-3.9", "Resetting generation "),
    Message("client_join_failed", "client", "java", r"(?P<request>JoinGroup|SyncGroup) failed:? (?P<reason>.*)$",
            f"{_AC} 2.6-3.9", "Group failed"),
    Message("client_join_failed", "client", "kafka-python",
            rf"Attempt to join group {G} (?:failed|rejected) (?P<reason>.*)$", _KP, "Attempt to join group "),
    Message("client_join_failed", "client", "kafka-python",
            rf"SyncGroup for group {G} failed (?P<reason>.*)$", _KP, "SyncGroup for group "),
    Message("client_coordinator_lost", "client", "java",
            r"Group coordinator (?P<coordinator>.+?) is unavailable or invalid(?P<reason>.*)$", f"{_AC} 2.0-3.9",
            " is unavailable or invalid"),
    Message("client_coordinator_lost", "client", "java", r"Marking the coordinator (?P<coordinator>.+?) dead(?P<reason>.*)$",
            f"{_AC} 0.10-1.1; {_KP}", "Marking the coordinator "),
    # ---------------------------------------------------------------- clients: Java new consumer (KIP-848)
    Message("client_member_state", "client", "java-kip848",
            r"Member (?P<member>\S+) with epoch (?P<generation>-?\d+) transitioned from (?P<from_state>\w+) to "
            r"(?P<state>\w+)", _AMM, " transitioned from "),
    Message("client_reconciling", "client", "java-kip848", r"Reconciling assignment with local epoch (?P<generation>\d+)",
            _AMM, "Reconciling assignment with local epoch "),
    Message("client_fenced", "client", "java-kip848",
            r"failed for member (?P<member>\S+) because epoch (?P<generation>-?\d+) is fenced",
            "clients/.../AbstractHeartbeatRequestManager.java (trunk)", " is fenced"),
    # ---------------------------------------------------------------- Spring Kafka
    Message("client_assigned", "client", "spring", rf"{G}: partitions assigned: (?P<partitions>\[.*\])", _SK,
            ": partitions assigned: "),
    Message("client_revoked", "client", "spring", rf"{G}: partitions revoked: (?P<partitions>\[.*\])", _SK,
            ": partitions revoked: "),
    Message("client_lost", "client", "spring", rf"{G}: partitions lost: (?P<partitions>\[.*\])", _SK,
            ": partitions lost: "),
    # ---------------------------------------------------------------- librdkafka (debug=cgrp)
    Message("client_join_state", "client", "librdkafka",
            r"Group \"(?P<group>[^\"]+)\" changed join state (?P<from_state>[\w-]+) -> (?P<state>[\w-]+)", _RK,
            " changed join state "),
    Message("client_joined", "client", "librdkafka",
            r"JoinGroup response: GenerationId (?P<generation>-?\d+), Protocol (?P<protocol>\S*), LeaderId "
            r"(?P<leader>[^\s,]*)(?: \(me\))?, my MemberId (?P<member>[^\s,]+)", _RK, "JoinGroup response: GenerationId "),
    Message("client_join_start", "client", "librdkafka",
            r"Joining group \"(?P<group>[^\"]+)\" with \d+ subscribed topic\(s\)", _RK, "Joining group \""),
    Message("client_assigned", "client", "librdkafka",
            r"Group \"(?P<group>[^\"]+)\": delegating (?:incremental )?assign of (?P<count>\d+) partition\(s\)", _RK,
            "assign of "),
    Message("client_revoked", "client", "librdkafka",
            r"Group \"(?P<group>[^\"]+)\": delegating (?:incremental )?revoke of (?P<count>\d+) partition\(s\)", _RK,
            "revoke of "),
    # ---------------------------------------------------------------- Kafka Streams
    Message("client_streams_state", "client", "streams",
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
                      r"assigned partitions|[Rr]evok|[Hh]eartbeat|[Cc]oordinator|[Ee]poch")
# Lines written by a logger (a level, or a JSON record), as opposed to prose around a paste:
# only these can count as unrecognised.
LOG_LIKE = re.compile(r"\b(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\b|^\s*\{|^%\d\|")
# The JVM-side gate (``contains`` in Spark, before any Python): every line MESSAGES can match
# contains one of these (broker lines name GroupCoordinator/GroupMetadataManager/GroupId, Java
# client lines carry "groupId=", librdkafka and kafka-python name the group; Spring, Streams,
# kafka-python's heartbeat and poll-timeout warnings are the exceptions listed). Most lines of
# a broker log fail it at once; five substring tests cost about what reading the line does.
GATE_SUBSTRINGS: tuple[str, ...] = ("roup", "partitions ", "State transition", "oll timeout", "eartbeat")
# The commonest lines that pass the gate but are never about membership: dropped on the JVM
# before the finer tests (the coordinator's offset expiry runs every few minutes on every broker).
NOISE_SUBSTRINGS: tuple[str, ...] = ("expired offsets in", "TransactionCoordinator", "TransactionStateManager")

_COMPILED: dict[str, re.Pattern[str]] = {m.pattern: re.compile(m.pattern) for m in MESSAGES}
MARKERS: tuple[str, ...] = tuple(dict.fromkeys(m.marker for m in MESSAGES))

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
    return MEMBER_UUID_SUFFIX.sub("", member)
