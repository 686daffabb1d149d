"""One run of a consumer process of the consumer-group simulator (``sim.consumer_group``): its
membership machine (the new consumer's ``ConsumerMembershipManager``, or a classic member in a
rolling upgrade or downgrade) and what its application thread is doing."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_rebalance.model import RebalanceProtocol
from kafka_rebalance.protocol.modern.consumer import member_events as me
from kafka_rebalance.protocol.modern.consumer.member import ConsumerMembershipManager, ConsumerMemberState
from kafka_rebalance.sim.classic_member import ClassicMembership
from kafka_rebalance.sim.driver import AppProcess
from kafka_rebalance.sim.events import ConsumerGroupDeferrable, MemberTimer, MemberTimerFires

# What the member asks the application thread to run, in order (inside poll()).
ListenerCallback = me.CommitOffsets | me.PartitionsRevoked | me.PartitionsAssigned | me.PartitionsLost


@dataclass(slots=True, kw_only=True)
class ConsumerGroupProcess(AppProcess[ConsumerGroupDeferrable]):
    """One run of a consumer process (a restart is a new ConsumerGroupProcess with the same name)."""

    machine: ConsumerMembershipManager | ClassicMembership
    auto_commit_interval_ms: int
    busy: bool = False  # running listener callbacks or a batch
    closing: bool = False
    next_commit_ms: int = 0
    callbacks: list[list[ListenerCallback]] = field(default_factory=list)
    timer_events: dict[MemberTimer, MemberTimerFires] = field(default_factory=dict)  # one per timer
    error_answer_ms: int = -1  # when the coordinator last answered its heartbeat with an error

    @property
    def flowing(self) -> bool:
        return (self.alive and self.continuous and not self.paused and not self.stalled and not self.busy
                and self.machine.state is not ConsumerMemberState.FATAL)

    @property
    def generation(self) -> int:
        return self.machine.member_epoch

    @property
    def member_id(self) -> str:
        return self.machine.member_id

    @property
    def classic_member(self) -> tuple[str, int] | None:
        machine = self.machine
        return (machine.member_id, machine.member_epoch) if isinstance(machine, ClassicMembership) else None

    @property
    def rebalance_protocol(self) -> RebalanceProtocol | None:
        machine = self.machine
        return machine.cc.protocol if isinstance(machine, ClassicMembership) else None


__all__ = ["ConsumerGroupProcess", "ListenerCallback"]
