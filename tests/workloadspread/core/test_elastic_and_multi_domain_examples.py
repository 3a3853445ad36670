"""The elastic and multi-domain examples played through the rules: admissions, then scale-in."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.admission import admit_create_for
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.model import WorkloadSpread, from_object
from spreadbus.features.workloadspread.core.occupancy import loads_from_pods
from spreadbus.features.workloadspread.core.reconcile import plan_workloadspread
from tests.workloadspread.core.builders import deployment, pod, replicaset, subset, workloadspread

NOW = datetime(2026, 1, 1, tzinfo=UTC)
JSON = dict[str, Any]


def _admit(ws: WorkloadSpread, pods: list[JSON], new: JSON, replicas: int) -> JSON:
    version = pod_state.version(new)
    loads = loads_from_pods(ws, pods, []).get(version, {})
    decision = admit_create_for(ws, new, replicas=replicas, loads=loads, now=NOW, generated_uid="u")
    assert decision.allowed
    return decision.pod


def _split(pods: list[JSON], version: str | None = None) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in pods:
        if version is not None and pod_state.version(p) != version:
            continue
        m = pod_state.matched(p)
        name = m.subset if m else "-"
        out[name] = out.get(name, 0) + 1
    return out


def _scale_in(
    ws: WorkloadSpread, workload: JSON, pods: list[JSON], count: int, latest: str
) -> None:
    """Delete ``count`` pods the way a cost-aware controller does, recomputing costs in between."""
    for _ in range(count):
        plan = plan_workloadspread(
            ws,
            workload=workload,
            pods=pods,
            nodes={},
            now=NOW,
            whitelist=Whitelist(),
            latest=latest,
        )
        for p in pods:
            key = pod_state.key(p)
            if key in plan.deletion_costs:
                p["metadata"].setdefault("annotations", {})[
                    "controller.kubernetes.io/pod-deletion-cost"
                ] = plan.deletion_costs[key]
        victim = min(
            pods,
            key=lambda p: int(
                pod_state.pod_annotations(p).get("controller.kubernetes.io/pod-deletion-cost", "0")
            ),
        )
        pods.remove(victim)


def test_elastic_example_lands_100_50_and_scales_in_from_the_elastic_pool() -> None:
    ws = from_object(
        workloadspread(
            subset("ACK", 100, patch={"metadata": {"labels": {"deploy/zone": "ack"}}}),
            subset("ECI"),
            kind="CloneSet",
            api_version="apps.kruise.io/v1alpha1",
            target="web",
        )
    )
    cloneset: JSON = {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet",
        "metadata": {"name": "web", "namespace": "default", "uid": "cs"},
        "spec": {"replicas": 150},
    }
    pods: list[JSON] = []
    for i in range(150):
        pods.append(_admit(ws, pods, pod(f"web-{i}", owner=cloneset), replicas=150))
    assert _split(pods) == {"ACK": 100, "ECI": 50}
    assert all(p["metadata"]["labels"].get("deploy/zone") == "ack" for p in pods[:100])
    cloneset["spec"]["replicas"] = 80
    _scale_in(ws, cloneset, pods, 70, latest="versionIgnored")
    assert _split(pods) == {"ACK": 80}


def test_multi_domain_example_keeps_100_100_through_a_rolling_update() -> None:
    ws = from_object(workloadspread(subset("subset-a", 100), subset("subset-b", 100)))
    d = deployment(replicas=200)
    old_rs, new_rs = replicaset(d, "v1"), replicaset(d, "v2")
    pods: list[JSON] = []
    for i in range(200):
        pods.append(_admit(ws, pods, pod(f"web-v1-{i}", owner=old_rs), replicas=200))
    assert _split(pods) == {"subset-a": 100, "subset-b": 100}
    # Roll: surge one new pod, then the old ReplicaSet loses its cheapest pod.
    for i in range(200):
        pods.append(_admit(ws, pods, pod(f"web-v2-{i}", owner=new_rs), replicas=200))
        old = [p for p in pods if pod_state.version(p) == "v1"]
        _scale_in(ws, d, old, 1, latest="v2")
        pods = [p for p in pods if pod_state.version(p) == "v2"] + old
        totals = _split(pods)
        assert max(totals.values()) <= 101, totals
    assert _split(pods, "v2") == {"subset-a": 100, "subset-b": 100}
    assert _split(pods) == {"subset-a": 100, "subset-b": 100}


def test_scale_in_honours_min_replicas() -> None:
    ws = from_object(
        workloadspread(subset("fixed", 4), subset("spare", 3, minReplicas=2), subset("burst"))
    )
    d = deployment(replicas=10)
    rs = replicaset(d)
    pods: list[JSON] = []
    for i in range(10):
        pods.append(_admit(ws, pods, pod(f"web-abc-{i}", owner=rs), replicas=10))
    assert _split(pods) == {"spare": 3, "fixed": 4, "burst": 3}
    assert [pod_state.matched(p).subset for p in pods[:3]] == ["spare", "spare", "fixed"]  # type: ignore[union-attr]
    _scale_in(ws, copy.deepcopy(d), pods, 7, latest="abc")
    assert _split(pods) == {"spare": 2, "fixed": 1}
