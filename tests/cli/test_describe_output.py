"""``describe`` as printed: no ``None`` anywhere, member ids broken after their dashes within 80
columns; ``--what-if leave=`` by member id, its start, client id or instance id."""

from __future__ import annotations

import io

import pytest

from kafka_rebalance.cli import describe_cmd
from kafka_rebalance.model import InvalidInput

MEMBER = "consumer-billing-2-7d3f0c4e-5a1b-4c2d-9e8f-102030405060"
RESULT = {
    "group": "billing", "state": "Stable", "assignor": None, "total_lag": None,
    "members": [
        {"member_id": MEMBER, "client_id": "consumer-billing-2", "host": "/10.0.0.7", "group_instance_id": None,
         "generation": None, "topics": ["invoices"], "owned": [], "assigned": ["invoices-0", "invoices-1"]},
        {"member_id": "consumer-billing-1-11111111-2222-4333-8444-555555555555", "client_id": "consumer-billing-1",
         "host": "/10.0.0.6", "group_instance_id": "billing-a", "generation": 18, "topics": ["invoices"],
         "owned": ["invoices-2"], "assigned": ["invoices-2"]},
    ],
    "partitions": [{"partition": "invoices-0", "owner": None, "committed": None, "end": 12, "lag": None}],
    "balance": {"min": 1, "max": 2}, "stickiness": {"owned": 1, "kept": 1},
}


@pytest.fixture
def printed(monkeypatch):
    def show(result: dict, width: int) -> str:
        stream = io.StringIO()
        from kafka_rebalance.pipeline.report import terminal

        monkeypatch.setattr(describe_cmd, "console_for",
                            lambda: terminal.console_for(stream, width=width, terminal=False))
        describe_cmd._print_group(result)
        return stream.getvalue()

    return show


@pytest.mark.parametrize("width", [80, 170])
def test_no_none_and_member_ids_whole_after_their_dashes(printed, width):
    text = printed(RESULT, width)
    assert "None" not in text
    assert all(len(line) <= width for line in text.splitlines())
    starts = [line.split()[0] for line in text.splitlines() if line.strip()]
    if width // 3 >= len(MEMBER):
        assert MEMBER in starts  # room for the whole id
    else:  # on lines of the member column, each broken after a dash
        pieces = [s for s in starts if s.startswith(("consumer-billing-2-", "7d3f", "102030405060"))]
        assert pieces == ["consumer-billing-2-", "7d3f0c4e-5a1b-4c2d-9e8f-", "102030405060"]
    assert "instance billing-a" in text and "client consumer-billing-2" in text
    assert "invoices-0," in text and "invoices-1" in text  # nothing cropped


def test_leave_names_a_member_by_id_start_client_or_instance():
    from kafka_rebalance.clients.describe import leaving_member

    members = RESULT["members"]
    assert leaving_member(members, MEMBER) == MEMBER
    assert leaving_member(members, "consumer-billing-2-7d3f") == MEMBER
    assert leaving_member(members, "consumer-billing-2") == MEMBER  # the client id (also a prefix of it)
    assert leaving_member(members, "billing-a") == members[1]["member_id"]
    with pytest.raises(InvalidInput, match="start of 2 member ids"):
        leaving_member(members, "consumer-billing-")
    with pytest.raises(InvalidInput, match="no such member"):
        leaving_member(members, "zz")
    twins = [dict(members[0], member_id="a-1"), dict(members[0], member_id="a-2")]
    with pytest.raises(InvalidInput, match="2 members have this client id"):
        leaving_member(twins, "consumer-billing-2")
