"""describe's pure parts: --what-if parsing and the next assignment, SASL/SSL option mapping."""

from __future__ import annotations

import pytest

pytest.importorskip("aiokafka")

from kafka_rebalance.clients.describe import WhatIf, connection_options, figures, next_assignment  # noqa: E402
from kafka_rebalance.model import InvalidInput  # noqa: E402

MEMBERS = [
    {"member_id": "a", "topics": ["t"], "owned": ["t-0", "t-1"], "assigned": ["t-0", "t-1"], "generation": 4, "group_instance_id": None},
    {"member_id": "b", "topics": ["t"], "owned": ["t-2", "t-3"], "assigned": ["t-2", "t-3"], "generation": 4, "group_instance_id": None},
]


def test_what_if_parsing_and_errors():
    w = WhatIf.parse(["leave=a", "join=2", "strategy=range", "partitions=t:6"])
    assert (w.leave, w.join, w.strategy, dict(w.partitions)) == (("a",), 2, "range", {"t": 6})
    for bad in ("leave", "join=x", "partitions=t", "explode=1"):
        with pytest.raises(InvalidInput, match="--what-if"):
            WhatIf.parse([bad])


def test_next_assignment_cooperative_vs_eager_cost():
    out = next_assignment(MEMBERS, {"t": 4}, "cooperative-sticky", WhatIf(join=1))
    assert out["protocol"] == "COOPERATIVE"
    assert sorted(len(p) for p in out["assignment"].values()) == [1, 1, 2]
    moved = out["moves"]
    assert len(moved) == 1 and moved[0]["to"] == "new-member-1"
    cost = out["stop_the_world"]
    assert (cost["eager_paused_partitions"], cost["cooperative_paused_partitions"], cost["cooperative_rebalances"]) == (4, 1, 2)
    grown = next_assignment(MEMBERS, {"t": 4}, "sticky", WhatIf(partitions={"t": 6}))
    assert grown["newly_assigned"] == ["t-4", "t-5"] and grown["moves"] == []
    with pytest.raises(InvalidInput, match="no such member"):
        next_assignment(MEMBERS, {"t": 4}, None, WhatIf(leave=("zz",)))


def test_figures():
    assert figures(MEMBERS, {"t": 5}) == {
        "balance": {"min": 2, "max": 2, "spread": 0},
        "stickiness": {"owned": 4, "kept": 4, "ratio": 1.0},
        "unassigned": 1,
    }


def test_kafka_python_connection_options_pass_through():
    assert connection_options({}) == {}
    sasl = connection_options({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_plain_username": "u", "sasl_plain_password": "p"})
    assert sasl == {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_plain_username": "u", "sasl_plain_password": "p"}
    ssl = connection_options({"security_protocol": "SSL"})
    assert ssl["security_protocol"] == "SSL" and ssl["ssl_context"] is not None
