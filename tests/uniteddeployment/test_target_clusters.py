"""Subsets in other clusters: ``clusterRegistry`` and ``targetCluster`` validated (in code and
by ``spreadbus validate``), and ``spreadbus plan`` naming each subset's cluster and reading only
the objects of the UnitedDeployment's own cluster."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.cli import main
from spreadbus.clusterregistry.registry import CLUSTER_ANNOTATION
from spreadbus.features.uniteddeployment.core.validation import validate_uniteddeployment
from tests.uniteddeployment.test_validation_rules import base
from tests.uniteddeployment.world import materialize, united, zone

JSON = dict[str, Any]
SUBSETS = "spec.topology.subsets"
KARMADA = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster"}
REGISTRY = {"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster"}


def karmada_cluster(name: str, labels: dict[str, str] | None = None) -> JSON:
    return {**KARMADA, "metadata": {"name": name, "labels": labels or {}},
            "spec": {"syncMode": "Pull"}}


def registry_cluster(name: str, namespace: str = "default") -> JSON:
    return {**REGISTRY, "metadata": {"name": name, "namespace": namespace}, "spec": {}}


def multi(registry: JSON | None, targets: list[JSON | None]) -> JSON:
    """The valid base UnitedDeployment with ``registry`` and one target per subset."""
    obj = base()
    if registry is not None:
        obj["spec"]["topology"]["clusterRegistry"] = registry
    for subset, target in zip(obj["spec"]["topology"]["subsets"], targets, strict=True):
        if target is not None:
            subset["targetCluster"] = target
    return obj


def errors(obj: JSON, clusters: list[JSON] | None = None) -> list[tuple[str, str]]:
    return [(e.field, e.type) for e in validate_uniteddeployment(obj, clusters=clusters)]


def test_subsets_in_registered_clusters_are_valid() -> None:
    obj = multi({"clusterType": KARMADA, "selector": {"env": "prod"}},
                [{"name": "member1"}, {"name": "member2"}, None])
    clusters = [karmada_cluster("member1", {"env": "prod"}),
                karmada_cluster("member2", {"env": "prod"})]
    assert errors(obj, clusters) == []
    assert errors(obj) == []  # the registry is not known: nothing to look up


def test_a_target_without_a_registry_is_an_error_on_the_subsets_field() -> None:
    assert errors(multi(None, [None, {"name": "member1"}, None])) == [
        (f"{SUBSETS}[1].targetCluster", "Forbidden")]


@pytest.mark.parametrize("cluster_type", [
    {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster"},
    {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Clusters"},
    {},
])
def test_a_cluster_type_that_is_not_served_is_not_supported(cluster_type: JSON) -> None:
    got = validate_uniteddeployment(multi({"clusterType": cluster_type}, [None, None, None]))
    assert [(e.field, e.type) for e in got] == [
        ("spec.topology.clusterRegistry.clusterType", "NotSupported")]
    assert "cluster.karmada.io/v1alpha1, Kind=Cluster" in got[0].message
    assert "clusterregistry.k8s.io/v1alpha1, Kind=Cluster" in got[0].message


def test_a_registry_must_name_its_cluster_type() -> None:
    assert errors(multi({"namespaces": ["fleet"]}, [None, None, None])) == [
        ("spec.topology.clusterRegistry.clusterType", "Required")]


def test_a_target_the_registry_does_not_find_is_not_found() -> None:
    obj = multi({"clusterType": KARMADA, "selector": {"env": "prod"}},
                [{"name": "member1"}, {"name": "member3"}, {"name": "member2"}])
    clusters = [karmada_cluster("member1", {"env": "prod"}),
                karmada_cluster("member2", {"env": "test"})]
    got = validate_uniteddeployment(obj, clusters=clusters)
    assert [(e.field, e.type, e.value) for e in got] == [
        (f"{SUBSETS}[1].targetCluster.name", "NotFound", "member3"),
        (f"{SUBSETS}[2].targetCluster.name", "NotFound", "member2"),  # its labels do not match
    ]


def test_a_namespaced_registry_looks_in_its_namespaces() -> None:
    registry = {"clusterType": REGISTRY, "namespaces": ["fleet"]}
    clusters = [registry_cluster("member1", "fleet"), registry_cluster("member2", "default")]
    obj = multi(registry, [{"name": "member1"}, {"name": "member2"},
                           {"name": "member2", "namespace": "default"}])
    assert errors(obj, clusters) == [(f"{SUBSETS}[1].targetCluster.name", "NotFound"),
                                     (f"{SUBSETS}[2].targetCluster.name", "NotFound")]
    obj = multi({"clusterType": REGISTRY}, [{"name": "member2"}, None, None])
    assert errors(obj, clusters) == []  # the default namespace is default


def test_a_cluster_scoped_registry_ignores_namespaces() -> None:
    obj = multi({"clusterType": KARMADA, "namespaces": ["elsewhere"]},
                [{"name": "member1", "namespace": "whatever"}, None, None])
    assert errors(obj, [karmada_cluster("member1")]) == []


def test_clusters_of_another_kind_do_not_make_the_registry_known() -> None:
    obj = multi({"clusterType": KARMADA}, [{"name": "member1"}, None, None])
    assert errors(obj, [registry_cluster("member9")]) == []


@pytest.mark.parametrize(("registry", "target", "field"), [
    ("fleet", None, "spec.topology.clusterRegistry"),
    ({"clusterType": KARMADA, "namespaces": "fleet"}, None,
     "spec.topology.clusterRegistry.namespaces"),
    ({"clusterType": KARMADA, "namespaces": [3]}, None,
     "spec.topology.clusterRegistry.namespaces[0]"),
    ({"clusterType": KARMADA, "selector": ["env"]}, None,
     "spec.topology.clusterRegistry.selector"),
    ({"clusterType": KARMADA, "selector": {"env": 1}}, None,
     "spec.topology.clusterRegistry.selector[env]"),
    ({"clusterType": KARMADA, "selector": {"env": "a b"}}, None,
     "spec.topology.clusterRegistry.selector[env]"),
    ({"clusterType": "Cluster"}, None, "spec.topology.clusterRegistry.clusterType"),
    ({"clusterType": KARMADA}, "member1", f"{SUBSETS}[0].targetCluster"),
    ({"clusterType": KARMADA}, {"name": 7}, f"{SUBSETS}[0].targetCluster.name"),
    ({"clusterType": KARMADA}, {}, f"{SUBSETS}[0].targetCluster.name"),
    ({"clusterType": KARMADA}, {"name": "m", "namespace": []},
     f"{SUBSETS}[0].targetCluster.namespace"),
])
def test_bad_input_is_an_error_naming_its_field(registry: object, target: object,
                                               field: str) -> None:
    obj = base()
    obj["spec"]["topology"]["clusterRegistry"] = registry
    if target is not None:
        obj["spec"]["topology"]["subsets"][0]["targetCluster"] = target
    assert [e.field for e in validate_uniteddeployment(obj, clusters=[])] == [field]


# -- spreadbus validate and spreadbus plan -----------------------------------------------------

def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, JSON]:
    code = main([*argv, "-o", "json"])
    return code, json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def write(path: Path, *objects: JSON) -> str:
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def test_validate_looks_targets_up_in_the_files_clusters(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ud = multi({"clusterType": KARMADA}, [{"name": "member1"}, {"name": "member2"}, None])
    alone = write(tmp_path / "alone.yaml", ud)
    assert run_json(capsys, "validate", "-f", alone)[0] == 0
    with_one = write(tmp_path / "with-one.yaml", karmada_cluster("member1"), ud)
    code, answer = run_json(capsys, "validate", "-f", with_one)
    assert code == 1
    cluster, united = answer["results"]
    assert (cluster["kind"], cluster["allowed"]) == ("Cluster", True)
    (found,) = united["errors"]
    assert found["field"] == f"{SUBSETS}[1].targetCluster.name"
    assert found["type"] == "NotFound"
    assert found["message"] == ("spec.topology.clusterRegistry finds no "
                                "cluster.karmada.io/v1alpha1 Cluster named member2")
    both = write(tmp_path / "both.yaml", karmada_cluster("member1"), karmada_cluster("member2"),
                 ud)
    assert run_json(capsys, "validate", "-f", both)[0] == 0


NOW = "2026-01-01T12:00:00Z"


def test_plan_names_each_subsets_cluster(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    ud = united([zone("subset-a", targetCluster={"name": "member1"}),
                 zone("subset-b", targetCluster={"name": "member2"}), zone("subset-c")])
    ud["spec"]["topology"]["clusterRegistry"] = {"clusterType": KARMADA}
    path = write(tmp_path / "objects.yaml", karmada_cluster("member1"),
                 karmada_cluster("member2"), ud)
    code, body = run_json(capsys, "plan", "-f", path, "--now", NOW)
    assert code == 0
    subsets = body["unitedDeployments"]["default/sample-ud"]["subsets"]
    assert {name: s["cluster"] for name, s in subsets.items()} == {
        "subset-a": "member1", "subset-b": "member2", "subset-c": "local"}
    assert main(["plan", "-f", path, "--now", NOW]) == 0
    text = capsys.readouterr().out
    assert "  subset-a: replicas=2 partition=0 create cluster=member1" in text.splitlines()
    assert "  subset-c: replicas=2 partition=0 create" in text.splitlines()


def test_plan_reads_only_the_objects_of_the_uniteddeployments_cluster(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A workload that would be the UD's subset, but in member1, is not the host's subset: the
    host UD still creates its own, where the same workload unannotated is adopted."""
    ud = united([zone("subset-a")], replicas=2)
    first = run_json(capsys, "plan", "-f", write(tmp_path / "a.yaml", ud), "--now", NOW)[1]
    created = first["unitedDeployments"]["default/sample-ud"]["subsets"]["subset-a"]["workload"]
    existing = materialize(created)
    in_member = copy.deepcopy(existing)
    in_member["metadata"]["annotations"][CLUSTER_ANNOTATION] = "member1"
    body = run_json(capsys, "plan", "-f", write(tmp_path / "b.yaml", ud, in_member),
                    "--now", NOW)[1]
    assert body["unitedDeployments"]["default/sample-ud"]["subsets"]["subset-a"]["action"] \
        == "create"
    body = run_json(capsys, "plan", "-f", write(tmp_path / "c.yaml", ud, existing),
                    "--now", NOW)[1]
    assert body["unitedDeployments"]["default/sample-ud"]["subsets"]["subset-a"]["action"] \
        != "create"


def test_the_webhooks_registry_view_follows_adds_and_deletes() -> None:
    from events import subjects
    from events.codec import encode
    from events.messages import Observation
    from spreadbus.features.uniteddeployment.admission.cluster_registry_view import (
        ClusterRegistryView,
    )

    view = ClusterRegistryView()
    subject = subjects.observation("host", "cluster.karmada.io", "clusters", "", "member1")

    def observed(event: Any) -> bytes:
        return encode(Observation(cluster="host", group="cluster.karmada.io",
                                  version="v1alpha1", resource="clusters", event=event,
                                  object=karmada_cluster("member1")))

    view.apply_message(subject, observed("ADDED"))
    view.apply_message(subjects.observation("host", "", "pods", "default", "p"), b"not json")
    assert view.clusters() == [karmada_cluster("member1")]
    view.apply_message(subject, observed("DELETED"))
    assert view.clusters() == []


def test_validate_answers_as_a_control_plane_hosts_webhook_when_told(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--uniteddeployment-control-plane true``, as the host's webhook runs: a subset without a
    target cluster is refused there, and allowed anywhere else."""
    ud = multi({"clusterType": KARMADA}, [{"name": "member1"}, {"name": "member2"}, None])
    path = write(tmp_path / "ud.yaml", karmada_cluster("member1"), karmada_cluster("member2"), ud)
    assert run_json(capsys, "validate", "-f", path)[0] == 0
    assert run_json(capsys, "validate", "-f", path, "--uniteddeployment-control-plane",
                    "false")[0] == 0
    code, answer = run_json(capsys, "validate", "-f", path,
                            "--uniteddeployment-control-plane", "true")
    assert code == 1
    (found,) = answer["results"][2]["errors"]
    assert (found["field"], found["type"]) == (f"{SUBSETS}[2].targetCluster", "Required")
    every = multi({"clusterType": KARMADA}, [{"name": "member1"}, {"name": "member2"},
                                             {"name": "member1"}])
    path = write(tmp_path / "every.yaml", karmada_cluster("member1"), karmada_cluster("member2"),
                 every)
    assert run_json(capsys, "validate", "-f", path, "--uniteddeployment-control-plane",
                    "true")[0] == 0
