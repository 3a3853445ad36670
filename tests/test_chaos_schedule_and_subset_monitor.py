"""The chaos test's own parts, without a stack: the seeded schedule kills every part and leaves
one service with no replica; the phased injector runs it phase by phase; the monitor counts
pods as the WorkloadSpread does and times each episode over a maximum from when the webhook
steered again."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.fixtures.fault_injection import NATS_SERVER, PhasedFaults, chaos_schedule
from tests.workloadspread_e2e.stack import MATCHED
from tests.workloadspread_e2e.subset_monitor import SubsetMonitor, subset_counts

REPLICAS = {"webhook": 1, "planner": 2, "actuator": 2, "watcher": 1}


@given(seed=st.integers(0, 2**30), phases=st.integers(1, 4), per_phase=st.integers(2, 6),
       opening=st.sampled_from(sorted(REPLICAS)), data=st.data())
def test_every_part_dies_nats_once_and_one_service_is_left_without_a_replica(
    seed: int, phases: int, per_phase: int, opening: str, data: st.DataObject,
) -> None:
    if phases * per_phase < len(REPLICAS) + 1:
        return
    outage_phases = data.draw(st.sets(st.integers(0, phases - 1), min_size=1))
    schedule = chaos_schedule(random.Random(seed), REPLICAS, phases=phases,
                              per_phase=per_phase, gaps=(0.1, 2.0), outage=(3.0, 6.0),
                              opening=opening, outage_phases=outage_phases)
    assert schedule[0].victim == opening
    assert schedule[0].delay <= 0.3
    assert len(schedule) == phases * per_phase
    assert {f.victim for f in schedule} == {*REPLICAS, NATS_SERVER}
    assert [f.victim for f in schedule].count(NATS_SERVER) == 1
    (outage,) = [f for f in schedule if f.down]
    assert outage.victim in REPLICAS
    assert outage.phase in outage_phases
    assert 3.0 <= outage.down <= 6.0
    assert [f.phase for f in schedule] == sorted(f.phase for f in schedule)
    assert all(sum(f.phase == p for f in schedule) == per_phase for p in range(phases))
    assert all(0 <= f.replica < REPLICAS.get(f.victim, 1) for f in schedule)
    again = chaos_schedule(random.Random(seed), REPLICAS, phases=phases,
                           per_phase=per_phase, gaps=(0.1, 2.0), outage=(3.0, 6.0),
                           opening=opening, outage_phases=outage_phases)
    assert again == schedule, "the seed replays the schedule"


class Victim:
    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    def kill(self) -> None:
        self.log.append(f"kill {self.name}")

    def start(self) -> None:
        self.log.append(f"start {self.name}")

    def restart(self) -> None:
        self.log.append(f"start {self.name}")


def test_the_injector_runs_each_phase_once_begun_and_the_outage_kills_every_replica() -> None:
    replicas = {"planner": 2, "watcher": 1}
    schedule = chaos_schedule(random.Random(7), replicas, phases=2, per_phase=3,
                              gaps=(0.0, 0.01), outage=(0.05, 0.1))
    log: list[str] = []
    services = {"planner": [Victim("planner", log), Victim("planner-standby", log)],
                "watcher": [Victim("watcher", log)]}
    injector = PhasedFaults(schedule, services, Victim(NATS_SERVER, log), phases=2)
    injector.start()
    try:
        assert not injector.ended[0].wait(0.3), "no fault before the phase begins"
        assert log == []
        injector.begin(0)
        injector.wait_phase(0, 10)
        first = len(log)
        assert first == 2 * sum(len(services[f.victim]) if f.down else 1
                                for f in schedule if f.phase == 0 and f.victim != NATS_SERVER
                                ) + 2 * sum(f.victim == NATS_SERVER for f in schedule
                                            if f.phase == 0)
        injector.begin(1)
        injector.wait_phase(1, 10)
    finally:
        injector.stop()
    (outage,) = [f for f in schedule if f.down]
    kills = injector.kills()
    for child in services[outage.victim]:
        assert kills[child.name] >= 1
    assert kills[NATS_SERVER] == 1
    assert sum(kills.values()) == len(log) // 2


def pod(subset: str | None, *, node: str = "", leaving: bool = False,
        phase: str = "Running", spread: str = "ws") -> dict[str, Any]:
    annotations = {} if subset is None else {MATCHED: json.dumps({"name": spread,
                                                                   "subset": subset})}
    meta: dict[str, Any] = {"annotations": annotations}
    if leaving:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": node} if node else {},
            "status": {"phase": phase}}


def test_pods_count_by_annotation_else_by_their_nodes_zone_and_only_while_active() -> None:
    zones = {"n-ack": "ack", "n-eci": "eci"}
    pods = [pod("ACK"), pod("ECI", node="n-ack"), pod(None, node="n-ack"), pod(None),
            pod("ACK", leaving=True), pod("ACK", phase="Failed"), pod(None, node="n-eci"),
            pod("ECI", spread="other", node="n-ack")]
    assert subset_counts(pods, "ws", {"ack": "ACK", "eci": "ECI"}, zones) == {
        "ACK": 3, "ECI": 2}


def test_an_episode_is_timed_from_when_the_webhook_steered_again() -> None:
    watch = SubsetMonitor(None, "ns", "app=x", spread="ws",  # type: ignore[arg-type]
                          limits={"ACK": 100}, zone_subsets={}, node_zones={},
                          webhook_steers=lambda: True)
    watch.observe(1.0, {"ACK": 100}, True)
    watch.observe(2.0, {"ACK": 130}, False)
    watch.observe(3.0, {"ACK": 150}, False)
    watch.observe(5.0, {"ACK": 140}, True)
    assert watch.episodes[0].end is None
    watch.observe(9.0, {"ACK": 100, "ECI": 50}, True)
    watch.observe(10.0, {"ACK": 101}, True)
    (first, second) = watch.episodes
    assert (first.start, first.end, first.peak) == (2.0, 9.0, 150)
    assert first.seconds == 7.0
    assert first.repair_seconds == 6.0, "from the last sample the webhook did not steer"
    assert (second.start, second.end, second.repair_seconds) == (10.0, None, None)
    assert watch.highest == {"ACK": 150, "ECI": 50}
