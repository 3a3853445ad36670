"""The planner keeps pods as the reconcile reads them: a reconcile over those summaries answers
exactly what one over the whole pods does, in every scheduling mode, and the summary of a
realistic pod is a fraction of its JSON."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from spreadbus.features.uniteddeployment.core.reconcile import reconcile
from spreadbus.features.uniteddeployment.planning.pod_summary import summary

NOW = datetime(2027, 3, 1, 12, 0, tzinfo=UTC)
SUBSET = "apps.kruise.io/subset-name"
REVISION = "apps.kruise.io/controller-revision-hash"
RESERVED = "apps.kruise.io/united-deployment-reserved-pod"


def decode_all(summaries: Iterable[bytes]) -> list[dict[str, Any]]:
    """The pods of these summaries, as the reconcile is given them."""
    return [msgspec.json.decode(s) for s in summaries]


def stamp(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def united(strategy: dict[str, Any] | None) -> dict[str, Any]:
    labels = {"app": "s"}
    topology: dict[str, Any] = {"subsets": [{"name": "a", "maxReplicas": 3}, {"name": "b"}]}
    if strategy is not None:
        topology["scheduleStrategy"] = strategy
    return {
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
        "metadata": {"name": "ud", "namespace": "default", "uid": "ud-uid", "generation": 2},
        "spec": {"replicas": 6, "revisionHistoryLimit": 10, "selector": {"matchLabels": labels},
                 "template": {"cloneSetTemplate": {"metadata": {"labels": labels}, "spec": {
                     "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "containers": [{"name": "main", "image": "nginx:1"}]}}}}},
                 "topology": topology},
    }


def realistic_pod(rng: random.Random, name: str, workload: dict[str, Any]) -> dict[str, Any]:
    labels = dict(workload["spec"]["template"]["metadata"]["labels"])
    if rng.random() < 0.3:
        labels[REVISION] = "old-revision"
    if rng.random() < 0.3:
        labels[RESERVED] = rng.choice(["true", "false"])
    pending = rng.random() < 0.4
    conditions: list[dict[str, Any]] = [
        {"type": "PodScheduled", "status": "False" if pending else "True",
         "reason": "Unschedulable" if pending else None,
         "lastTransitionTime": stamp(rng.randrange(0, 400))},
        {"type": "Ready", "status": "False" if pending else "True",
         "lastTransitionTime": stamp(rng.randrange(0, 400))},
    ]
    meta: dict[str, Any] = {
        "name": name, "namespace": "default", "uid": f"uid-{name}", "labels": labels,
        "resourceVersion": "7", "creationTimestamp": stamp(rng.randrange(0, 600)),
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "x" * 300},
        "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                             "name": workload["metadata"]["name"],
                             "uid": workload["metadata"]["uid"], "controller": True,
                             "blockOwnerDeletion": True}],
        "managedFields": [{"manager": "kubelet", "operation": "Update",
                           "fieldsV1": {"f:status": {"f:conditions": {}}}}],
    }
    if rng.random() < 0.1:
        meta["deletionTimestamp"] = stamp(1)
    spec = dict(workload["spec"]["template"]["spec"])
    spec["volumes"] = [{"name": "token", "projected": {"sources": [{"serviceAccountToken": {
        "path": "token", "expirationSeconds": 3607}}]}}]
    if not pending:
        spec["nodeName"] = f"node-{rng.randrange(5)}"
    status: dict[str, Any] = {"phase": "Pending" if pending else rng.choice(
        ["Running", "Running", "Succeeded"]), "conditions": conditions, "qosClass": "BestEffort"}
    if not pending:
        status["containerStatuses"] = [{"name": "main", "ready": True, "restartCount": 0,
                                        "image": "nginx:1", "imageID": "sha256:" + "0" * 64}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": status}


def observed_workloads(ud: dict[str, Any], rng: random.Random) -> list[dict[str, Any]]:
    first = reconcile(ud, workloads=[], pods=[], revisions=[], now=NOW)
    out = []
    for name, decision in first.subsets.items():
        workload = json.loads(json.dumps(decision.workload))
        workload["metadata"]["name"] = f"ud-{name}-xxxxx"
        workload["metadata"]["uid"] = f"uid-{name}"
        replicas = workload["spec"]["replicas"]
        workload["status"] = {"replicas": replicas, "readyReplicas": rng.randrange(replicas + 1),
                              "updatedReplicas": replicas}
        out.append(workload)
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("strategy", [
    None,
    {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}},
    {"type": "Adaptive", "adaptive": {"reserveUnschedulablePods": True,
                                      "rescheduleCriticalSeconds": 30,
                                      "unschedulableDuration": 120}},
], ids=["fixed", "adaptive", "reservation"])
def test_a_reconcile_over_summaries_answers_as_one_over_whole_pods(
    seed: int, strategy: dict[str, Any] | None
) -> None:
    rng = random.Random(seed)
    ud = united(strategy)
    workloads = observed_workloads(ud, rng)
    pods = [realistic_pod(rng, f"{w['metadata']['name']}-{i}", w)
            for w in workloads for i in range(rng.randrange(0, 6))]
    summaries = decode_all(summary(msgspec.json.encode(p)) for p in pods)
    for later in (0, 45, 400):
        now = NOW + timedelta(seconds=later)
        whole = reconcile(ud, workloads=workloads, pods=pods, revisions=[], now=now)
        kept = reconcile(ud, workloads=workloads, pods=summaries, revisions=[], now=now)
        assert kept == whole


def test_a_realistic_pod_summary_is_a_fraction_of_its_json() -> None:
    rng = random.Random(1)
    (workload, _) = observed_workloads(united(None), rng)
    pod = realistic_pod(rng, "p", workload)
    raw = msgspec.json.encode(pod)
    kept_json = summary(raw)
    assert len(kept_json) < len(raw) / 2
    (kept,) = decode_all([kept_json])
    assert kept["metadata"]["labels"] == pod["metadata"]["labels"]
    assert kept["status"]["conditions"] == [
        {k: v for k, v in c.items() if v is not None} for c in pod["status"]["conditions"]
    ], "the two conditions the reconcile reads, as they are"
    assert "managedFields" not in kept["metadata"]


def test_a_pod_of_an_unusual_shape_is_kept_whole() -> None:
    odd = {"metadata": {"name": "p", "labels": {"a": 1}}, "status": {"phase": "Running"}}
    assert decode_all([summary(msgspec.json.encode(odd))]) == [odd]
