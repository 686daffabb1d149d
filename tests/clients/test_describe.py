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


def test_what_if_load_aware_balances_the_live_lag():
    """a holds t-0 and t-1, both lagging far behind; load-aware (given the lag describe reads)
    moves one of them to b, in exchange for a quiet one; cooperative-sticky moves nothing."""
    from kafka_rebalance.clients.describe import lag_loads

    rows = [{"partition": f"t-{p}", "lag": lag} for p, lag in enumerate([5000, 4000, 3, 2])]
    loads = lag_loads(rows, {"t": 4})
    assert loads == {"t": [5000.0, 4000.0, 3.0, 2.0]}
    assert lag_loads([*rows[:3], {"partition": "t-3", "lag": None}], {"t": 4}) == {}
    plain = next_assignment(MEMBERS, {"t": 4}, "cooperative-sticky", WhatIf(strategy="cooperative-sticky"), loads)
    assert plain["moves"] == []
    out = next_assignment(MEMBERS, {"t": 4}, "cooperative-sticky", WhatIf(strategy="load-aware"), loads)
    assert out["strategy"] == "load-aware" and out["protocol"] == "COOPERATIVE"
    hot = {p for p in ("t-0", "t-1")}
    assert [len(hot & set(parts)) for parts in out["assignment"].values()] == [1, 1]
    assert len(out["moves"]) == 2 and out["stop_the_world"]["cooperative_rebalances"] == 2
    grown = next_assignment(MEMBERS, {"t": 4}, None, WhatIf(strategy="load-aware", partitions={"t": 6}), loads)
    assert sorted(len(p) for p in grown["assignment"].values()) == [3, 3]
