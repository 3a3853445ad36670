"""Application failover as Karmada's controller decides it, from
``pkg/controllers/applicationfailover/rb_application_failover_controller_test.go``
(TestRBApplicationFailoverController_detectFailure, _syncBinding, _evictBinding,
_clusterResourceBindingFilter) and ``common_test.go`` (distinguishUnhealthyClustersWithOthers,
buildTaskOptions), transcribed by hand with the time an input; the health of a Deployment's copy
from ``pkg/resourceinterpreter/default/native/healthy_test.go``; and the round that follows: the
evicted cluster's replicas rescheduled to the others while its copy waits on the task, live and
through ``spreadbus plan``."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.cli import main
from spreadbus.features.propagation.core.aggregation import health
from spreadbus.features.propagation.core.bindings import HeldBinding, Resource
from spreadbus.features.propagation.core.cluster import from_object
from spreadbus.features.propagation.core.division import Target
from spreadbus.features.propagation.core.policy import applied_placement, placement_text
from spreadbus.features.propagation.planning.application_failover import (
    CRB_PRODUCER,
    RB_PRODUCER,
    UNHEALTHY_SINCE,
    fail_over,
    next_due,
    since_text,
    unhealthy_since,
)
from spreadbus.features.propagation.planning.binding_round import binding_round

NOW = datetime(2024, 5, 22, 11, 36, 10, tzinfo=UTC)
BOTH = (Target("member1", 2), Target("member2", 2))


def ago(seconds: int) -> datetime:
    return NOW - timedelta(seconds=seconds)


def application(toleration: int | None = 5, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"purgeMode": "Gracefully", "gracePeriodSeconds": 600, **fields}
    if toleration is not None:
        out["decisionConditions"] = {"tolerationSeconds": toleration}
    return out


# (name, health, timers before, tasks, toleration, evicted, timers after)
CASES: list[tuple[str, dict[str, str], dict[str, datetime], list[dict[str, Any]], int,
                  list[str], dict[str, datetime]]] = [
    ("first seen unhealthy: the timer starts, nothing evicted (even at 0 s)",
     {"member1": "Unhealthy", "member2": "Unhealthy"}, {}, [], 0, [],
     {"member1": NOW, "member2": NOW}),
    ("unhealthy past the toleration: evicted, its timer ends",
     {"member1": "Unhealthy", "member2": "Healthy"}, {"member1": ago(2)}, [], 1, ["member1"], {}),
    ("unhealthy within the toleration: kept, its timer runs on",
     {"member1": "Unhealthy", "member2": "Healthy"}, {"member1": ago(2)}, [], 100, [],
     {"member1": ago(2)}),
    ("exactly at the toleration: kept (Karmada evicts strictly after)",
     {"member1": "Unhealthy"}, {"member1": ago(5)}, [], 5, [], {"member1": ago(5)}),
    ("healthy again: the timer ends",
     {"member1": "Healthy", "member2": "Healthy"}, {"member1": ago(200)}, [], 5, [], {}),
    ("no health reported: the timer is kept through the gap",
     {"member1": "Unknown", "member2": "Healthy"}, {"member1": ago(200)}, [], 5, [],
     {"member1": ago(200)}),
    ("a cluster a task already evicts is not judged",
     {"member1": "Unhealthy", "member2": "Healthy"}, {}, [{"fromCluster": "member1"}], 5, [],
     {}),
    ("a cluster no longer scheduled loses its timer",
     {"member3": "Unhealthy"}, {"member3": ago(200)}, [], 5, [], {}),
]


@pytest.mark.parametrize(("health_of", "before", "tasks", "toleration", "evicted", "after"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_detection_follows_karmada(health_of: dict[str, str], before: dict[str, datetime],
                                   tasks: list[dict[str, Any]], toleration: int,
                                   evicted: list[str], after: dict[str, datetime]) -> None:
    result = fail_over(BOTH, tasks, health_of, before, application(toleration), NOW)
    assert list(result.evicted) == evicted
    assert [t.name for t in result.clusters] == [t.name for t in BOTH if t.name not in evicted]
    assert dict(result.since) == after
    assert [t["fromCluster"] for t in result.tasks] == [
        t["fromCluster"] for t in tasks] + evicted


@pytest.mark.parametrize(("policy", "aggregated"), [
    (None, {"member1": "Unhealthy"}),  # no failover.application
    (application(), {}),  # no aggregatedStatus yet
], ids=["no application failover", "no aggregated status"])
def test_bindings_the_controller_filters_out_are_untouched(
        policy: dict[str, Any] | None, aggregated: dict[str, str]) -> None:
    result = fail_over(BOTH, [], aggregated, {"member1": ago(999)}, policy, NOW)
    assert (result.clusters, result.tasks, dict(result.since)) == (BOTH, (), {})


@pytest.mark.parametrize(("purge", "extra", "expected"), [
    ("Gracefully", {"gracePeriodSeconds": 30}, {"gracePeriodSeconds": 30}),
    ("Graciously", {"gracePeriodSeconds": 30}, {"gracePeriodSeconds": 30}),
    ("Directly", {}, {}),
    ("Immediately", {}, {}),
    ("Never", {}, {"suppressDeletion": True}),
])
def test_the_task_carries_the_purge_mode_as_build_task_options_does(
        purge: str, extra: dict[str, Any], expected: dict[str, Any]) -> None:
    policy = {"purgeMode": purge, "decisionConditions": {"tolerationSeconds": 1}, **extra}
    result = fail_over(BOTH, [], {"member1": "Unhealthy"}, {"member1": ago(2)}, policy, NOW,
                       producer=CRB_PRODUCER)
    (task,) = result.tasks
    assert task == {"fromCluster": "member1", "replicas": 2, "purgeMode": purge,
                    "reason": "ApplicationFailure", "producer": CRB_PRODUCER, **expected}


def test_the_timers_survive_the_annotation() -> None:
    timers = {"member2": ago(3), "member1": NOW}
    text = since_text(timers)
    assert text == '{"member1":"2024-05-22T11:36:10Z","member2":"2024-05-22T11:36:07Z"}'
    assert unhealthy_since({UNHEALTHY_SINCE: text}) == timers
    assert since_text({}) is None
    assert unhealthy_since({UNHEALTHY_SINCE: "not json"}) == {}
    assert unhealthy_since({UNHEALTHY_SINCE: '{"member1": 7, "member2": "2024-05-22T11:36:07Z"}'}
                           ) == {"member2": ago(3)}


def deployment(replicas: int, updated: int, available: int, observed: int = 1) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "generation": 1},
            "spec": {"replicas": replicas},
            "status": {"observedGeneration": observed, "updatedReplicas": updated,
                       "availableReplicas": available}}


@pytest.mark.parametrize(("obj", "expected"), [
    (deployment(2, 2, 2), "Healthy"),
    (deployment(2, 2, 0), "Unhealthy"),  # preempted pods wait: updated, not available
    (deployment(2, 1, 1), "Unhealthy"),  # rolling out
    (deployment(2, 2, 2, observed=0), "Unhealthy"),  # generation not observed
    (deployment(2, 2, 3), "Healthy"),  # old pods still available during a scale-down
])
def test_a_deployment_copy_is_healthy_as_karmadas_interpreter_says(
        obj: dict[str, Any], expected: str) -> None:
    assert health(obj) == expected


def test_the_round_reschedules_the_evicted_share_and_keeps_the_copy_on_a_task() -> None:
    placement = {"clusterAffinity": {"clusterNames": ["member1", "member2"]},
                 "replicaScheduling": {
                     "replicaSchedulingType": "Divided",
                     "replicaDivisionPreference": "Weighted",
                     "weightPreference": {"staticWeightList": [
                         {"targetCluster": {"clusterNames": [m]}, "weight": 1}
                         for m in ("member1", "member2")]}}}
    clusters = [from_object({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": m},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        for m in ("member1", "member2")]
    annotations = {"policy.karmada.io/applied-placement": placement_text(placement),
                   UNHEALTHY_SINCE: since_text({"member1": ago(10)})}
    assert applied_placement(annotations) is not None
    held = HeldBinding(
        cluster_scoped=False, namespace="default", name="web-deployment",
        resource=Resource("apps/v1", "Deployment", "default", "web", "uid-1"), replicas=4,
        workload=True, request={}, placement=placement,
        failover={"application": application(5)}, template=None, clusters=BOTH,
        annotations=annotations, reschedule_triggered_at=None, last_scheduled_time=ago(60),
        observed_affinity="", eviction_tasks=(), observed_current=True,
        health={"member1": "Unhealthy", "member2": "Healthy"})
    passed = binding_round(held, clusters, NOW)
    assert passed.result.clusters == (Target("member2", 4),)
    assert [dict(t) for t in passed.tasks] == [{
        "fromCluster": "member1", "purgeMode": "Gracefully", "reason": "ApplicationFailure",
        "producer": RB_PRODUCER, "replicas": 2, "gracePeriodSeconds": 600,
        "creationTimestamp": "2024-05-22T11:36:10Z"}]
    assert dict(passed.unhealthy_since) == {}


MANIFESTS = Path(__file__).resolve().parents[2] / "examples" / "propagation"
PLACEMENT = {"clusterAffinity": {"clusterNames": ["member1", "member2"]},
             "replicaScheduling": {
                 "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                 "weightPreference": {"staticWeightList": [
                     {"targetCluster": {"clusterNames": [m]}, "weight": 1}
                     for m in ("member1", "member2")]}}}


def _file(unhealthy_for: int | None) -> list[dict[str, Any]]:
    """The seed's members, demo-deploy of 4 split 2:2 under a policy failing over after 5 s
    (purged Never), member1's copy unhealthy since ``unhealthy_for`` seconds (None: no timer)."""
    docs = [d for d in yaml.safe_load_all((MANIFESTS / "members.yaml").read_text()) if d]
    annotations = {"policy.karmada.io/applied-placement": placement_text(PLACEMENT)}
    if unhealthy_for is not None:
        annotations[UNHEALTHY_SINCE] = since_text({"member1": ago(unhealthy_for)}) or ""
    return [*docs, {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "demo-deploy", "namespace": "default"},
        "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "demo"}},
                 "template": {"metadata": {"labels": {"app": "demo"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    }, {
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "demo", "namespace": "default"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                        "name": "demo-deploy"}],
                 "propagateDeps": True, "placement": PLACEMENT,
                 "failover": {"application": {"decisionConditions": {"tolerationSeconds": 5},
                                              "purgeMode": "Never"}}},
    }, {
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": "demo-deploy-deployment", "namespace": "default", "generation": 2,
                     "annotations": annotations},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment",
                              "namespace": "default", "name": "demo-deploy"},
                 "replicas": 4,
                 "clusters": [{"name": "member1", "replicas": 2},
                              {"name": "member2", "replicas": 2}]},
        "status": {"schedulerObservedGeneration": 2, "lastScheduledTime": "2024-05-22T11:00:00Z",
                   "aggregatedStatus": [{"clusterName": "member1", "health": "Unhealthy"},
                                        {"clusterName": "member2", "health": "Healthy"}]},
    }]


@pytest.mark.parametrize(("unhealthy_for", "clusters", "tasks"), [
    pytest.param(None, [("member1", 2), ("member2", 2)], [], id="no timer yet: it starts"),
    pytest.param(5, [("member1", 2), ("member2", 2)], [], id="at the toleration"),
    pytest.param(6, [("member2", 4)],
                 [{"fromCluster": "member1", "replicas": 2, "reason": "ApplicationFailure",
                   "purgeMode": "Never"}], id="past the toleration"),
])
def test_spreadbus_plan_fails_over_as_the_live_round_does(
        unhealthy_for: int | None, clusters: list[tuple[str, int]], tasks: list[dict[str, Any]],
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(_file(unhealthy_for)))
    assert main(["plan", "-f", str(path), "--now", NOW.strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "-o", "json"]) == 0
    entry = json.loads(capsys.readouterr().out)["resourceBindings"][
        "default/demo-deploy-deployment"]
    assert [(c["name"], c["replicas"]) for c in entry["clusters"]] == clusters
    assert entry["gracefulEvictionTasks"] == tasks


def test_the_next_failover_is_the_first_timer_to_reach_its_toleration() -> None:
    start = datetime(2026, 5, 22, 11, 0, 0, tzinfo=UTC)
    since = {"member1": start, "member2": start - timedelta(seconds=100)}
    application = {"decisionConditions": {"tolerationSeconds": 120}}
    assert next_due(since, application) == start + timedelta(seconds=20)
    assert next_due({}, application) is None
    assert next_due(since, None) is None
