"""kube-scheduler's preemption choice as a pure function: which node, which victims.

Each table row is a case of upstream's ``pkg/scheduler/framework/plugins/defaultpreemption/
default_preemption.go`` (``SelectVictimsOnNode``, ``pickOneNodeForPreemption``) and
``pkg/scheduler/framework/preemption/preemption.go`` (``PodEligibleToPreemptOthers``),
transcribed by hand: nodes of 1 cpu, pods that request cpu.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kubesim.behaviour.preemption import (
    copy_info,
    may_preempt,
    preempt,
    victims_on,
    with_nominated,
)
from kubesim.behaviour.scheduling import NodeInfo, filter_node, schedule

Pod = dict[str, Any]


def node(name: str, cpu: str = "1") -> NodeInfo:
    return NodeInfo({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                     "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": 110}}})


def pod(name: str, cpu: str, prio: int, *, started: str | None = None,
        policy: str | None = None, nominated: str | None = None,
        terminating: bool = False) -> Pod:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:09Z"
    spec: dict[str, Any] = {"priority": prio, "containers": [
        {"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if policy:
        spec["preemptionPolicy"] = policy
    status: dict[str, Any] = {}
    if started:
        status["startTime"] = started
    if nominated:
        status["nominatedNodeName"] = nominated
    return {"metadata": meta, "spec": spec, "status": status}


def cluster(placed: dict[str, list[Pod]]) -> list[NodeInfo]:
    out = []
    for name, pods in placed.items():
        info = node(name)
        for p in pods:
            info.add_pod(p)
        out.append(info)
    return out


def choose(incoming: Pod, placed: dict[str, list[Pod]]) -> tuple[str, list[str]] | None:
    infos = cluster(placed)
    decision = schedule(incoming, infos)
    assert decision.node is None, "the table's pods never fit without preempting"
    chosen = preempt(incoming, infos, dict(decision.rejected))
    if chosen is None:
        return None
    return chosen.node, [v["metadata"]["name"] for v in chosen.victims]


T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z"

CASES = [
    # (what, incoming, placed, expected (node, victims most important first) or None)
    ("the one lower-priority pod in the way goes",
     pod("hi", "600m", 100), {"n1": [pod("lo", "600m", 0)]}, ("n1", ["lo"])),
    ("only as many as needed: the more important of two is reprieved",
     pod("hi", "500m", 100), {"n1": [pod("a", "400m", 10), pod("b", "400m", 5)]},
     ("n1", ["b"])),
    ("pods of equal or higher priority are never victims",
     pod("hi", "600m", 100), {"n1": [pod("peer", "600m", 100)]}, None),
    ("not enough room even with every lower pod gone",
     pod("hi", "1500m", 100), {"n1": [pod("lo", "500m", 0)]}, None),
    ("the node whose highest victim has the lowest priority",
     pod("hi", "600m", 100),
     {"n1": [pod("mid", "600m", 50)], "n2": [pod("low", "600m", 10)]}, ("n2", ["low"])),
    ("then the lowest sum of priorities",
     pod("hi", "800m", 100),
     {"n1": [pod("a1", "500m", 10), pod("a2", "500m", 10)],
      "n2": [pod("b1", "500m", 10), pod("b2", "500m", 0)]},
     ("n2", ["b1", "b2"])),
    ("then the fewest victims (equal priorities)",
     pod("hi", "900m", 100),
     {"n1": [pod("a1", "500m", 0), pod("a2", "500m", 0)], "n2": [pod("b1", "1", 0)]},
     ("n2", ["b1"])),
    ("then the latest start among the highest-priority victims",
     pod("hi", "600m", 100),
     {"n1": [pod("old", "600m", 0, started=T0)], "n2": [pod("new", "600m", 0, started=T2)]},
     ("n2", ["new"])),
    ("then the first node by name",
     pod("hi", "600m", 100),
     {"n2": [pod("b", "600m", 0, started=T1)], "n1": [pod("a", "600m", 0, started=T1)]},
     ("n1", ["a"])),
    ("preemptionPolicy Never preempts nothing",
     pod("hi", "600m", 100, policy="Never"), {"n1": [pod("lo", "600m", 0)]}, None),
    ("a pod nominated where a lower pod still terminates waits for it",
     pod("hi", "600m", 100, nominated="n1"),
     {"n1": [pod("going", "600m", 0, terminating=True)], "n2": [pod("lo", "600m", 0)]}, None),
    ("a pod nominated where nothing lower terminates may preempt again",
     pod("hi", "600m", 100, nominated="n1"),
     {"n1": [pod("peer", "600m", 100)], "n2": [pod("lo", "600m", 0)]}, ("n2", ["lo"])),
]


@pytest.mark.parametrize(("incoming", "placed", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_preemption_picks_as_kube_scheduler(incoming: Pod, placed: dict[str, list[Pod]],
                                            expected: tuple[str, list[str]] | None) -> None:
    assert choose(incoming, placed) == expected


def test_a_node_refused_for_a_taint_is_no_candidate() -> None:
    tainted = node("n1")
    tainted.node["spec"] = {"taints": [{"key": "k", "effect": "NoSchedule"}]}
    tainted.add_pod(pod("lo", "600m", 0))
    incoming = pod("hi", "600m", 100)
    decision = schedule(incoming, [tainted])
    assert decision.node is None
    assert preempt(incoming, [tainted], dict(decision.rejected)) is None


def test_victims_are_chosen_on_a_copy_and_the_cache_is_untouched() -> None:
    (info,) = cluster({"n1": [pod("a", "400m", 0), pod("b", "400m", 0)]})
    before = dict(info.requested)
    assert victims_on(pod("hi", "500m", 100), info) is not None
    assert dict(info.requested) == before
    assert set(info.pods) == {"default/a", "default/b"}


def test_room_freed_for_a_nominated_pod_is_not_taken_by_a_lower_one() -> None:
    infos = cluster({"n1": []})
    nominated = pod("hi", "600m", 100, nominated="n1")
    low = pod("lo", "600m", 0)
    assert schedule(low, with_nominated(low, infos, {"n1": [nominated]})).node is None
    # ...while the nominated pod itself, and any pod of its priority or above, is not held off.
    assert schedule(nominated, with_nominated(nominated, infos, {"n1": [nominated]})).node == "n1"
    higher = pod("higher", "600m", 200)
    assert schedule(higher, with_nominated(higher, infos, {"n1": [nominated]})).node == "n1"


def test_a_nominated_pod_goes_to_its_node_when_it_fits_there() -> None:
    infos = cluster({"a": [], "b": [pod("x", "100m", 0)]})
    # Without a nomination the emptier node "a" scores best.
    assert schedule(pod("p", "100m", 0), infos).node == "a"
    assert schedule(pod("p", "100m", 0, nominated="b"), infos).node == "b"


def test_may_preempt_reads_only_the_nominated_node() -> None:
    infos = cluster({"n1": [pod("going", "100m", 0, terminating=True)]})
    assert may_preempt(pod("hi", "1", 100, nominated="n2"), infos)
    assert not may_preempt(pod("hi", "1", 100, nominated="n1"), infos)
    assert may_preempt(pod("hi", "1", 100), infos)


@st.composite
def crowded(draw: st.DrawFn) -> tuple[Pod, dict[str, list[Pod]]]:
    """Up to three nodes of 1 cpu filled with pods that fit, and an incoming pod."""
    placed: dict[str, list[Pod]] = {}
    count = 0
    for n in range(draw(st.integers(1, 3))):
        room, pods = 1000, []
        for _ in range(draw(st.integers(0, 4))):
            cpu = draw(st.integers(100, 600))
            if cpu > room:
                break
            room -= cpu
            count += 1
            pods.append(pod(f"p{count}", f"{cpu}m", draw(st.integers(0, 3)),
                            started=f"2026-01-01T00:00:{draw(st.integers(10, 59))}Z"))
        placed[f"n{n}"] = pods
    incoming = pod("in", f"{draw(st.integers(100, 1000))}m", draw(st.integers(0, 4)))
    return incoming, placed


@settings(max_examples=100, deadline=None)
@given(crowded())
def test_victims_are_lower_enough_and_each_needed(case: tuple[Pod, dict[str, list[Pod]]]) -> None:
    incoming, placed = case
    infos = cluster(placed)
    decision = schedule(incoming, infos)
    assume(decision.node is None)
    chosen = preempt(incoming, infos, dict(decision.rejected))
    mine = incoming["spec"]["priority"]
    if chosen is None:
        # No node fits the pod even with every lower-priority pod gone.
        for info in infos:
            trial = copy_info(info)
            for p in list(trial.pods.values()):
                if p["spec"]["priority"] < mine:
                    trial.remove_pod(f"default/{p['metadata']['name']}")
            assert filter_node(incoming, trial) is not None
        return
    assert all(v["spec"]["priority"] < mine for v in chosen.victims)
    (info,) = [i for i in infos if i.name == chosen.node]
    trial = copy_info(info)
    for victim in chosen.victims:
        trial.remove_pod(f"default/{victim['metadata']['name']}")
    assert filter_node(incoming, trial) is None
    for victim in chosen.victims:
        again = copy_info(trial)
        again.add_pod(victim)
        assert filter_node(incoming, again) is not None, "a victim that need not go"
