"""The consumer-group extension of the JSON contract (docs/assignment-json.md, "Consumer
groups") through the library's ``assign`` and through ``kafka-rebalance assign``."""

from __future__ import annotations

import json

import pytest

from kafka_rebalance import assign
from kafka_rebalance.assignors.server import derived_topic_id, format_topic_id
from kafka_rebalance.model import GroupSnapshot, InvalidInput
from tests.cli.test_assign_cli import run_cli

SNAPSHOT = {
    "group_protocol": "consumer",
    "topics": {
        "topic1": {"partitions": 3, "topic_id": "T1-A4s3VTwiI5CTbEp6POw"},
        "topic3": {"partitions": 6, "topic_id": "T3-CU8fVTLCz5YMkLoDQsa"},
    },
    "members": [
        {"member_id": "A", "topics": ["topic1", "topic3"]},
        {"member_id": "B", "topics": ["topic3"], "generation": 7, "strategies": ["sticky"]},
    ],
}


def with_(**changes):
    return {**json.loads(json.dumps(SNAPSHOT)), **changes}


def test_consumer_group_output_is_the_full_target_assignment():
    """UniformHeterogeneousAssignmentBuilderTest.testFirstAssignmentTwoMembersTwoTopics through
    the JSON contract: uniform by default, COOPERATIVE, every member listed."""
    assert assign(SNAPSHOT) == {
        "group_protocol": "consumer",
        "strategy": "uniform",
        "protocol": "COOPERATIVE",
        "assignment": {"A": ["topic1-0", "topic1-1", "topic1-2", "topic3-4"], "B": ["topic3-0", "topic3-1", "topic3-2", "topic3-3", "topic3-5"]},
    }


def test_partitions_owned_by_another_member_are_not_withheld():
    """Unlike cooperative-sticky, the output names a partition for its new owner even while
    another member still owns it: withholding it is the coordinator's job."""
    snapshot = with_(members=[
        {"member_id": "A", "topics": ["topic3"], "owned": ["topic3-0", "topic3-1", "topic3-2", "topic3-3", "topic3-4", "topic3-5"]},
        {"member_id": "B", "topics": ["topic3"]},
    ])
    result = assign(snapshot)["assignment"]
    assert result == {"A": ["topic3-0", "topic3-1", "topic3-2"], "B": ["topic3-3", "topic3-4", "topic3-5"]}


def test_range_by_strategy_field_and_by_override():
    assert assign(with_(strategy="range"))["assignment"] == {"A": ["topic1-0", "topic1-1", "topic1-2", "topic3-0", "topic3-1", "topic3-2"], "B": ["topic3-3", "topic3-4", "topic3-5"]}
    assert assign(SNAPSHOT, "range")["strategy"] == "range"


def test_members_server_assignor_picks_the_assignor():
    """ConsumerGroup.computePreferredServerAssignor: the assignor most members ask for."""
    members = [dict(m, server_assignor="range") for m in SNAPSHOT["members"]]
    assert assign(with_(members=members))["strategy"] == "range"
    members[0]["server_assignor"] = "uniform"
    assert assign(with_(members=members))["strategy"] == "uniform"  # a tie goes to uniform


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"strategy": "cooperative-sticky"}, "strategy"),
        ({"strategy": "roundrobin"}, "strategy"),
        ({"group_protocol": "kip-848"}, "group_protocol"),
        ({"topics": {"topic1": {"partitions": 3, "topic_id": "not-base64!"}}}, "topics.topic1.topic_id"),
        ({"topics": {"topic1": {"partitions": 3, "topic_id": "AAAA"}}}, "topics.topic1.topic_id"),
        ({"topics": {"topic1": {"partitions": 3, "topic_id": 5}}}, "topics.topic1.topic_id"),
        ({"members": [{"member_id": "A", "topics": ["topic1"], "server_assignor": "sticky"}]}, "members[0].server_assignor"),
        ({"members": [{"member_id": "A", "topics": ["topic1"], "owned": ["topic1"]}]}, "members[0].owned"),
    ],
)
def test_bad_consumer_group_input_names_the_field(change, field):
    with pytest.raises(InvalidInput) as error:
        assign(with_(**change))
    assert error.value.field == field


def test_classic_contract_is_unchanged():
    classic = {"topics": {"t": 2}, "members": [{"member_id": "a", "topics": ["t"]}], "strategy": "range"}
    assert assign(classic) == {"strategy": "range", "protocol": "EAGER", "assignment": {"a": ["t-0", "t-1"]}}
    assert assign({**classic, "group_protocol": "classic"}) == assign(classic)


def test_snapshot_round_trips_the_new_fields():
    snapshot = with_(members=[{"member_id": "A", "topics": ["topic1"], "server_assignor": "range"}])
    parsed = GroupSnapshot.from_dict(snapshot)
    assert GroupSnapshot.from_dict(parsed.to_dict()) == parsed
    assert parsed.to_dict()["group_protocol"] == "consumer"
    assert parsed.to_dict()["topics"]["topic1"]["topic_id"] == "T1-A4s3VTwiI5CTbEp6POw"


def test_derived_topic_id_is_documented_and_stable():
    """Without a topic_id, SHA-256 of "kafka-rebalance/topic-id/<name>", first 16 bytes."""
    assert format_topic_id(derived_topic_id("orders")) == format_topic_id(derived_topic_id("orders"))
    assert len(format_topic_id(derived_topic_id("orders"))) == 22
    assert derived_topic_id("orders") != derived_topic_id("payments")


def test_cli_assigns_a_consumer_group(capsys, monkeypatch):
    code, out, err = run_cli(capsys, monkeypatch, ["assign", "-"], stdin=json.dumps(SNAPSHOT))
    assert code == 0 and err == ""
    assert json.loads(out) == assign(SNAPSHOT)
    code, out, _ = run_cli(capsys, monkeypatch, ["assign", "-", "--strategy", "range", "--format", "table"], stdin=json.dumps(SNAPSHOT))
    assert code == 0 and "consumer group, assignor range (COOPERATIVE)" in out


def test_cli_rejects_a_classic_assignor_for_a_consumer_group(capsys, monkeypatch):
    code, out, err = run_cli(capsys, monkeypatch, ["assign", "-", "--strategy", "sticky"], stdin=json.dumps(SNAPSHOT))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("kafka-rebalance: strategy: 'sticky' is not a server-side assignor")
