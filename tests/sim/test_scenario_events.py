"""The scenario's events once validated: one typed event per action key of the document
(sim/scenario_events.py), in document order, and a group side that forgets a hook cannot be built."""

from abc import abstractmethod
from typing import get_args

import pytest

from kafka_rebalance.model import InvalidInput
from kafka_rebalance.sim import ClassicGroupSide, ConsumerGroupSide, load_scenario
from kafka_rebalance.sim.driver import Driver
from kafka_rebalance.sim.scenario import ACTIONS
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
    ProtocolSwitch,
    ScenarioEvent,
    SubscriptionChanged,
    TopicCreated,
)

EVERY_ACTION = [
    ({"at_ms": 0, "join": "a"}, ConsumerJoins(0, "a")),
    ({"at_ms": 1, "leave": "a"}, ConsumerLeaves(1, "a")),
    ({"at_ms": 2, "crash": "a", "for_ms": 7}, ConsumerCrashes(2, "a")),  # a stray for_ms is accepted, as ever
    ({"at_ms": 3, "pause": "a", "for_ms": 100}, ConsumerPauses(3, "a", 100)),
    ({"at_ms": 4, "stall": "a", "for_ms": 200}, ConsumerStalls(4, "a", 200)),
    ({"at_ms": 5, "restart": "a"}, ConsumerRestarts(5, "a", 0)),
    ({"at_ms": 6, "restart": "a", "after_ms": 50}, ConsumerRestarts(6, "a", 50)),
    ({"at_ms": 7, "create_topic": {"name": "u", "partitions": 3}}, TopicCreated(7, "u", 3)),
    ({"at_ms": 8, "add_partitions": {"topic": "t", "count": 4}}, PartitionsAdded(8, "t", 4)),
    ({"at_ms": 9, "subscribe": {"consumer": "a", "topics": ["t", "u"]}}, SubscriptionChanged(9, "a", ("t", "u"), None)),
    ({"at_ms": 10, "subscribe": {"consumer": "a", "pattern": "t.*"}}, SubscriptionChanged(10, "a", None, "t.*")),
    ({"at_ms": 11, "coordinator_failover": {}}, CoordinatorFailsOver(11)),
    ({"at_ms": 12, "upgrade": "a"}, ConsumerUpgrades(12, "a", 0)),
    ({"at_ms": 13, "downgrade": "a", "after_ms": 20}, ConsumerDowngrades(13, "a", 20)),
]


def test_every_document_event_becomes_its_typed_event_in_document_order():
    scenario = load_scenario({"topics": {"t": 2}, "consumers": [{"id": "a", "subscribe": ["t"]}],
                              "events": [document for document, _ in reversed(EVERY_ACTION)]})
    assert scenario.timeline == tuple(typed for _, typed in reversed(EVERY_ACTION))


def test_one_event_kind_per_action_key():
    kinds = get_args(ScenarioEvent)
    assert len(kinds) == len(set(kinds)) == len(ACTIONS)
    assert {type(typed) for _, typed in EVERY_ACTION} == set(kinds)


def test_the_end_still_counts_what_the_document_gives():
    """A stray ``for_ms`` (on a crash) counts towards the default end, as it always did."""
    scenario = load_scenario({"topics": {"t": 1}, "consumers": [{"id": "a", "subscribe": ["t"]}],
                              "events": [{"at_ms": 1000, "crash": "a", "for_ms": 500}]})
    assert scenario.effective_end_ms == 1000 + 500 + 60000


def test_a_group_side_without_a_hook_cannot_be_built():
    assert {"_coordinator_fails_over", "_switch_protocol", "_topics_grown", "_subscribe", "_finish"} <= (
        Driver.__abstractmethods__)
    assert not ClassicGroupSide.__abstractmethods__ and not ConsumerGroupSide.__abstractmethods__

    class Forgetful(ClassicGroupSide):
        @abstractmethod
        def _switch_protocol(self, event: ProtocolSwitch) -> None:
            """Left to a subclass that never comes."""

    scenario = load_scenario({"topics": {"t": 1}, "consumers": [{"id": "a", "subscribe": ["t"]}]})
    with pytest.raises(TypeError, match="_switch_protocol"):
        Forgetful(scenario)


@pytest.mark.parametrize("events,field", [([5], "events[0]"), ([{"at_ms": 0, "create_topic": 3}], "events[0].create_topic")])
def test_a_non_mapping_event_is_told_so_in_the_documents_words(events, field):
    with pytest.raises(InvalidInput) as raised:
        load_scenario({"topics": {"t": 1}, "consumers": [{"id": "a", "subscribe": ["t"]}], "events": events})
    assert (raised.value.field, raised.value.problem) == (field, "expected a mapping (YAML or JSON object)")
