"""The soak's pure machinery: schedules are valid and reproducible, the invariants catch what they
claim to catch, and the shrinker finds minimal failing schedules deterministically."""

from __future__ import annotations

from collections import Counter

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.model import GroupProtocol, ServerAssignorName
from kafka_rebalance.sim import load_scenario
from kafka_rebalance.sim.invariants import (
    COMMITS_FORWARD,
    CONVERGES,
    NO_RECORD_LOST,
    OWNER_CONSUMES,
    SINGLE_OWNER,
    check_observation,
)
from kafka_rebalance.sim.observation import (
    Commit,
    Consumption,
    Observation,
    Ownership,
    live_consumers,
    subscribed_partitions,
)
from kafka_rebalance.sim.schedules import quiet_ms, random_schedule, schedule_seed, schedule_yaml
from kafka_rebalance.sim.shrink import _ddmin, shrink

SEEDS = st.integers(min_value=0, max_value=2**48)


@settings(max_examples=300, deadline=None)
@given(SEEDS)
def test_every_schedule_is_a_valid_scenario_and_reproducible(seed):
    schedule = random_schedule(seed)
    scenario = load_scenario(schedule)
    assert random_schedule(seed) == schedule
    assert load_scenario(yaml.safe_load(schedule_yaml(schedule))) == scenario
    last = max(e["at_ms"] + e.get("for_ms", 0) + e.get("after_ms", 0) for e in schedule["events"])
    assert schedule["end_ms"] == last + quiet_ms(schedule)
    assert {c["id"] for c in schedule["consumers"]} == {e["join"] for e in schedule["events"] if "join" in e}


def test_the_mix_covers_every_kind_of_trouble():
    kinds: Counter[str] = Counter()
    for index in range(400):
        schedule = random_schedule(schedule_seed(7, index))
        for event in schedule["events"]:
            kinds.update(k for k in event if k not in ("at_ms", "for_ms", "after_ms"))
        config = schedule["config"]
        kinds["jitter"] += config["network_jitter_ms"] > 0
        kinds["static"] += any("group_instance_id" in c for c in schedule["consumers"])
        kinds["pattern"] += any("pattern" in c for c in schedule["consumers"])
        kinds["slow"] += any("processing_ms_per_record" in c for c in schedule["consumers"])
        kinds["cooperative"] += schedule["consumers"][0]["strategies"] == ["cooperative-sticky"]
        kinds["gc-past-session"] += any(e.get("for_ms", 0) > config["session_timeout_ms"] and "pause" in e
                                        for e in schedule["events"])
        kinds["stall-past-poll-interval"] += any(e.get("for_ms", 0) > config["max_poll_interval_ms"] and "stall" in e
                                                 for e in schedule["events"])
        failovers = [e["at_ms"] for e in schedule["events"] if "coordinator_failover" in e]
        kinds["failovers-in-a-row"] += len(failovers) >= 2
    for kind in ("join", "leave", "crash", "pause", "stall", "restart", "create_topic", "add_partitions",
                 "coordinator_failover", "jitter", "static", "pattern", "slow", "cooperative", "gc-past-session",
                 "stall-past-poll-interval", "failovers-in-a-row"):
        assert kinds[kind] >= 10, (kind, kinds)


def test_schedule_seeds_are_stable_and_distinct():
    assert schedule_seed(0, 0) == schedule_seed(0, 0)
    assert len({schedule_seed(0, i) for i in range(10_000)}) == 10_000
    assert schedule_seed(0, 5) != schedule_seed(1, 5)


# ----------------------------------------------------------------------------- invariants

def observation(**changes) -> Observation:
    base = {
        "ownership": (Ownership("t-0", "a", 1, 0, 100), Ownership("t-0", "b", 2, 100, 200)),
        "consumption": (Consumption("t-0", "a", 1, 0, 5, 40, 50), Consumption("t-0", "b", 2, 5, 9, 140, 150)),
        "commits": (Commit(60, "t-0", 5, "a", 1, True), Commit(160, "t-0", 9, "b", 2, True)),
        "offset_regressions": 0,
        "records_lost": 0,
        "final_state": "Stable",
        "live_members": ("b",),
        "final_assignment": {"a": (), "b": ("t-0",)},
        "subscribed_partitions": ("t-0",),
        "assignments": {(0, 1): {"a": ("t-0",), "b": ()}, (0, 2): {"a": (), "b": ("t-0",)},
                        (0, 3): {"a": (), "b": ("t-0",)}},
    }
    base.update(changes)
    return Observation(**base)


def kinds(seen: Observation) -> list[str]:
    return [v.invariant for v in check_observation(seen)]


def test_a_clean_run_breaks_nothing():
    assert kinds(observation()) == []


def test_two_owners_at_once_even_when_not_adjacent_in_time():
    overlapping = (Ownership("t-0", "a", 1, 0, 500), Ownership("t-0", "a", 1, 100, 150),
                   Ownership("t-0", "b", 2, 200, 300))
    assert kinds(observation(ownership=overlapping, consumption=())) == [SINGLE_OWNER]
    handover = (Ownership("t-0", "a", 1, 0, 100), Ownership("t-0", "b", 2, 100, 200))
    assert kinds(observation(ownership=handover, consumption=())) == []


def test_consumption_by_a_non_owner_or_under_another_generation():
    zombie = (Consumption("t-0", "a", 1, 0, 5, 40, 50), Consumption("t-0", "a", 1, 5, 9, 140, 150))
    assert kinds(observation(consumption=zombie)) == []  # expelled, still consuming under generation 1
    handing_over = (Consumption("t-0", "a", 2, 0, 5, 40, 50),)  # joined generation 2, not synced yet
    assert kinds(observation(consumption=handing_over)) == []
    stale = (Consumption("t-0", "a", 3, 0, 5, 140, 150),)  # after its hold on t-0 ended
    assert OWNER_CONSUMES in kinds(observation(consumption=stale))
    # Its SyncGroup of generation 2 answered REBALANCE_IN_PROGRESS, ``a`` joined generation 3
    # still holding what generation 1 gave it (GroupCoordinator.doSyncGroup, PreparingRebalance;
    # ConsumerCoordinator.onJoinPrepare keeps a COOPERATIVE member's partitions).
    missed_sync = (Consumption("t-0", "a", 3, 0, 5, 40, 50),)
    assert kinds(observation(consumption=missed_sync)) == []
    beyond_the_hold = (Consumption("t-0", "a", 3, 0, 5, 40, 120),)
    assert OWNER_CONSUMES in kinds(observation(consumption=beyond_the_hold))
    wrong_member = (Consumption("t-0", "a", 1, 0, 5, 40, 50), Consumption("t-0", "b", 1, 5, 9, 140, 150))
    assert OWNER_CONSUMES in kinds(observation(consumption=wrong_member))
    not_given = {(0, 1): {"a": ("t-0",)}, (0, 2): {"b": ()}}
    assert OWNER_CONSUMES in kinds(observation(assignments=not_given, consumption=()))


def test_a_generation_number_used_again_by_a_new_group_is_judged_by_its_own_assignment():
    """A migration that finds the group empty replaces it with a new one of the other protocol,
    whose epochs start again (Kafka's getOrMaybeCreateConsumerGroup for an empty classic group):
    generation 1 at 0 ms gave t-0 to a, the new group's epoch 1 at 150 ms gives it to b."""
    ownership = (Ownership("t-0", "a", 1, 0, 100), Ownership("t-0", "b", 1, 150, 200))
    consumption = (Consumption("t-0", "a", 1, 0, 5, 40, 50), Consumption("t-0", "b", 1, 5, 9, 160, 170))
    reused = {(0, 1): {"a": ("t-0",)}, (1, 1): {"b": ("t-0",)}}
    assert kinds(observation(ownership=ownership, consumption=consumption, assignments=reused,
                             life_starts_ms=(0, 150), commits=())) == []
    swapped = {(0, 1): {"b": ("t-0",)}, (1, 1): {"a": ("t-0",)}}
    assert OWNER_CONSUMES in kinds(observation(ownership=ownership, consumption=consumption, assignments=swapped,
                                               life_starts_ms=(0, 150), commits=()))


def test_commits_going_backwards_after_failovers():
    commits = (Commit(60, "t-0", 5, "a", 1, True), Commit(70, "t-0", 3, "b", 2, False),
               Commit(160, "t-0", 4, "b", 2, True))
    assert kinds(observation(commits=commits)) == [COMMITS_FORWARD]
    assert kinds(observation(offset_regressions=2)) == [COMMITS_FORWARD]


def test_a_skipped_offset_range_is_a_lost_record():
    gap = (Consumption("t-0", "a", 1, 0, 5, 40, 50), Consumption("t-0", "b", 2, 6, 9, 140, 150))
    assert kinds(observation(consumption=gap)) == [NO_RECORD_LOST]
    reprocessed = (Consumption("t-0", "a", 1, 0, 5, 40, 50), Consumption("t-0", "b", 2, 3, 9, 140, 150))
    assert kinds(observation(consumption=reprocessed)) == []


@pytest.mark.parametrize(
    ("changes", "broken"),
    [
        ({"final_state": "PreparingRebalance"}, True),
        ({"final_assignment": {"a": (), "b": ()}}, True),
        ({"live_members": (), "final_state": "Empty"}, False),
        ({"live_members": (), "final_state": "Stable"}, True),
    ],
)
def test_the_group_settles(changes, broken):
    assert (CONVERGES in kinds(observation(**changes))) is broken


def test_live_consumers_and_their_partitions_at_the_end():
    scenario = load_scenario({
        "topics": {"t": 2, "p-0": 1},
        "consumers": [{"id": "a", "subscribe": ["t"]}, {"id": "b", "pattern": "p-.*"}, {"id": "c", "subscribe": ["t"]}],
        "events": [{"at_ms": 0, "join": "a"}, {"at_ms": 0, "join": "b"}, {"at_ms": 0, "join": "c"},
                   {"at_ms": 10, "crash": "a"}, {"at_ms": 20, "restart": "a", "after_ms": 5}, {"at_ms": 30, "leave": "c"},
                   {"at_ms": 40, "create_topic": {"name": "p-1", "partitions": 2}},
                   {"at_ms": 50, "add_partitions": {"topic": "t", "count": 3}}],
    })
    assert live_consumers(scenario) == ("a", "b")
    assert subscribed_partitions(scenario, ("a", "b")) == ("p-0-0", "p-1-0", "p-1-1", "t-0", "t-1", "t-2")


# ----------------------------------------------------------------------------- shrinking

def test_ddmin_finds_a_one_minimal_subset():
    assert _ddmin(list(range(20)), lambda items: 3 in items and 17 in items) == [3, 17]
    assert _ddmin(list(range(8)), lambda items: True) == []
    assert _ddmin([1, 2, 3], lambda items: len(items) == 3) == [1, 2, 3]


def test_shrink_keeps_what_the_failure_needs_and_nothing_else():
    schedule = next(s for s in (random_schedule(schedule_seed(3, i)) for i in range(200))
                    if any("crash" in e for e in s["events"]) and any("coordinator_failover" in e for e in s["events"])
                    and len(s["consumers"]) >= 3)
    victim = next(e["crash"] for e in schedule["events"] if "crash" in e)

    def fails(candidate):
        load_scenario(candidate)  # every candidate the shrinker tries is a valid scenario
        return (any(e.get("crash") == victim for e in candidate["events"])
                and any("coordinator_failover" in e for e in candidate["events"]))

    small, tries = shrink(schedule, fails)
    assert fails(small)
    assert len(small["events"]) == 2
    assert [c["id"] for c in small["consumers"]] == [victim]
    assert small["config"]["network_jitter_ms"] == 0 and len(small["topics"]) == 1
    assert shrink(schedule, fails) == (small, tries)  # deterministic
    assert 0 < tries <= 400


def test_shrink_respects_its_budget():
    schedule = random_schedule(schedule_seed(0, 1))
    calls = []
    small, tries = shrink(schedule, lambda candidate: calls.append(1) or True, budget=7)
    assert tries == 7 and len(calls) == 7


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_both_protocols_give_the_invariants_every_table_they_read(protocol):
    """The invariants do not ask which protocol ran: a consumer-group run gives them each
    consumer's holds with their fencing, the commits, the consumption and every completed
    generation's assignment, as a classic run does, so none falls back to a weaker check."""
    from kafka_rebalance.model import GroupProtocol
    from kafka_rebalance.sim.observation import observe
    from kafka_rebalance.sim.schedules import random_schedule, schedule_seed

    for index in range(6):
        seen = observe(load_scenario(random_schedule(schedule_seed(0, index), GroupProtocol(protocol))))
        assert seen.held is not None and seen.commits is not None and seen.consumption is not None
        assert seen.assignments, "no completed generation recorded its assignment"
        assert len(seen.held) > 0 and len(seen.commits) > 0 and len(seen.consumption) > 0


@pytest.mark.parametrize("start", [GroupProtocol.CLASSIC, GroupProtocol.CONSUMER])
def test_a_migrating_schedule_restarts_every_consumer_with_the_other_protocol(start):
    """--migrate: the schedule of the same seed, plus each consumer restarted in turn with the
    other protocol (and in some, moved back); valid scenarios, a server assignor named."""
    forth, back = ("upgrade", "downgrade") if start is GroupProtocol.CLASSIC else ("downgrade", "upgrade")
    rolled_back = 0
    for index in range(40):
        seed = schedule_seed(0, index)
        plain, migrating = random_schedule(seed, start), random_schedule(seed, start, migrating=True)
        load_scenario(migrating)
        names = sorted(c["id"] for c in migrating["consumers"])
        assert sorted(e[forth] for e in migrating["events"] if forth in e) == names
        assert [e for e in migrating["events"] if forth not in e and back not in e] == plain["events"]
        assert migrating["assignor"] in [a.value for a in ServerAssignorName]
        rolled_back += any(back in e for e in migrating["events"])
    assert 0 < rolled_back < 40
