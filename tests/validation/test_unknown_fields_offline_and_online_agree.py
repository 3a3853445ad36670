"""``spreadbus validate`` refuses an object for unknown fields exactly when the API server does,
for every kind a feature validates.

Online is kubesim serving the CRDs of ``deploy/crds``, written to with the pinned kubectl's
default (``--validate=strict``: the server decodes with ``fieldValidation=Strict``) as a server
dry run; offline is ``spreadbus validate`` on the same file. Every object of the table is valid
but for the fields it adds, so each side's answer depends on those fields alone: both must allow
or both refuse, naming the same fields.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.cli import main
from tests.fixtures.cluster import SimCluster, cluster_serving_crds

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def first(path: Path, kind: str) -> dict[str, Any]:
    found = next(d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] == kind)
    return dict(found)


def in_default(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "namespace": "default"}}


SPREAD = in_default(first(EXAMPLES / "workloadspread" / "demo-deployment.yaml", "WorkloadSpread"))
UNITED = in_default(first(EXAMPLES / "uniteddeployment" / "subset-patch.yaml", "UnitedDeployment"))
BUDGET: dict[str, Any] = {
    "apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
    "metadata": {"name": "web-pub", "namespace": "default"},
    "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
             "maxUnavailable": "60%"},
}
REBALANCER: dict[str, Any] = {  # cluster-scoped
    "apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
    "metadata": {"name": "back-to-fixed"},
    "spec": {"ttlSecondsAfterFinished": 60, "workloads": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "default"}]},
}
MEMBER: dict[str, Any] = {  # cluster-scoped, Karmada's Cluster
    "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
    "metadata": {"name": "member1", "labels": {"region": "eu"}},
    "spec": {"syncMode": "Pull", "region": "eu", "zones": ["eu-1"]},
}
POLICY: dict[str, Any] = {
    "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
             "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]},
                           "replicaScheduling": {"replicaSchedulingType": "Divided",
                                                 "replicaDivisionPreference": "Weighted",
                                                 "weightPreference": {
                                                     "dynamicWeight": "AvailableReplicas"}}}},
}
CLUSTER_POLICY: dict[str, Any] = {  # cluster-scoped
    "apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
    "metadata": {"name": "roles"},
    "spec": {"resourceSelectors": [{"apiVersion": "rbac.authorization.k8s.io/v1",
                                    "kind": "ClusterRole", "name": "demo-role"}],
             "placement": {"clusterAffinity": {"clusterNames": ["member1"]}}},
}
BINDING: dict[str, Any] = {
    "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
    "metadata": {"name": "web-deployment", "namespace": "default"},
    "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                          "name": "web"},
             "replicas": 3, "clusters": [{"name": "member1", "replicas": 3}]},
}
CLUSTER_BINDING: dict[str, Any] = {  # cluster-scoped
    "apiVersion": "work.karmada.io/v1alpha2", "kind": "ClusterResourceBinding",
    "metadata": {"name": "demo-role-clusterrole"},
    "spec": {"resource": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                          "name": "demo-role"},
             "clusters": [{"name": "member1"}]},
}
Edit = Callable[[dict[str, Any]], None]


def spread_in_v1beta1(ws: dict[str, Any]) -> None:
    ws["apiVersion"] = "apps.kruise.io/v1beta1"
    for subset in ws["spec"]["subsets"]:
        subset["requiredNodeSelector"] = subset.pop("requiredNodeSelectorTerm")
        if "preferredNodeSelectorTerms" in subset:
            subset["preferredNodeSelector"] = subset.pop("preferredNodeSelectorTerms")


def alpha_names_in_v1beta1(ws: dict[str, Any]) -> None:
    spread_in_v1beta1(ws)
    subset = ws["spec"]["subsets"][1]
    subset["requiredNodeSelectorTerm"] = subset.pop("requiredNodeSelector")


# (id, object, edit, the fields both sides must name)
CASES: list[tuple[str, dict[str, Any], Edit, list[str]]] = [
    ("ws as written", SPREAD, lambda o: None, []),
    ("ws v1beta1 as written", SPREAD, spread_in_v1beta1, []),
    ("ws unknown field in a patch is kept", SPREAD,
     lambda o: o["spec"]["subsets"][0]["patch"].update({"anything": {"goes": 1}}), []),
    ("ws label in metadata", SPREAD,
     lambda o: o["metadata"].update({"labels": {"team": "a"}}), []),
    ("ws typo in a subset", SPREAD,
     lambda o: o["spec"]["subsets"][0].update({"maxReplica": 3}),
     ["spec.subsets[0].maxReplica"]),
    ("ws subset field at spec level", SPREAD,
     lambda o: o["spec"].update({"maxReplicas": 3, "tolerations": []}),
     ["spec.maxReplicas", "spec.tolerations"]),
    ("ws spec field inside a subset", SPREAD,
     lambda o: o["spec"]["subsets"][1].update({"targetRef": o["spec"]["targetRef"]}),
     ["spec.subsets[1].targetRef"]),
    ("ws spec field at the root", SPREAD,
     lambda o: o.update({"subsets": o["spec"]["subsets"]}), ["subsets"]),
    ("ws typo in the adaptive strategy", SPREAD,
     lambda o: o["spec"]["scheduleStrategy"]["adaptive"].update({"rescheduleCriticalSecond": 5}),
     ["spec.scheduleStrategy.adaptive.rescheduleCriticalSecond"]),
    ("ws typo inside a node selector term", SPREAD,
     lambda o: o["spec"]["subsets"][1]["requiredNodeSelectorTerm"]["matchExpressions"][0]
     .update({"value": ["zone-b"]}),
     ["spec.subsets[1].requiredNodeSelectorTerm.matchExpressions[0].value"]),
    ("ws typo in metadata", SPREAD,
     lambda o: o["metadata"].update({"lables": {"team": "a"}}), ["metadata.lables"]),
    ("ws v1alpha1 field names in v1beta1", SPREAD, alpha_names_in_v1beta1,
     ["spec.subsets[1].requiredNodeSelectorTerm"]),
    ("ud as written", UNITED, lambda o: None, []),
    ("ud unknown field in a template is kept", UNITED,
     lambda o: o["spec"]["template"]["statefulSetTemplate"]["spec"].update({"x": 1}), []),
    ("ud typo in a subset", UNITED,
     lambda o: o["spec"]["topology"]["subsets"][0].update({"replica": 2}),
     ["spec.topology.subsets[0].replica"]),
    ("ud topology field at spec level", UNITED,
     lambda o: o["spec"].update({"subsets": o["spec"]["topology"]["subsets"]}),
     ["spec.subsets"]),
    ("ud two unknown fields", UNITED,
     lambda o: (o["spec"].update({"replica": 3}), o["spec"]["topology"].update({"x": 1})),
     ["spec.replica", "spec.topology.x"]),
    ("pub as written", BUDGET, lambda o: None, []),
    ("pub typo in spec", BUDGET,
     lambda o: o["spec"].update({"maxUnavailible": 1}), ["spec.maxUnavailible"]),
    ("pub target field at spec level", BUDGET,
     lambda o: o["spec"].update({"name": "web"}), ["spec.name"]),
    ("wr as written", REBALANCER, lambda o: None, []),
    ("wr typo in a workload", REBALANCER,
     lambda o: o["spec"]["workloads"][0].update({"namespaces": ["a"]}),
     ["spec.workloads[0].namespaces"]),
    ("wr ttl at the root", REBALANCER,
     lambda o: o.update({"ttlSecondsAfterFinished": 5}), ["ttlSecondsAfterFinished"]),
    ("cluster as written", MEMBER, lambda o: None, []),
    ("cluster typo in spec", MEMBER,
     lambda o: o["spec"].update({"regoin": "eu"}), ["spec.regoin"]),
    ("pp as written", POLICY, lambda o: None, []),
    ("pp typo in the cluster affinity", POLICY,
     lambda o: o["spec"]["placement"]["clusterAffinity"].update({"clusterName": ["member1"]}),
     ["spec.placement.clusterAffinity.clusterName"]),
    ("pp placement field at spec level", POLICY,
     lambda o: o["spec"].update({"replicaScheduling": {}}), ["spec.replicaScheduling"]),
    ("pp typo in a resource selector", POLICY,
     lambda o: o["spec"]["resourceSelectors"][0].update({"names": ["web"]}),
     ["spec.resourceSelectors[0].names"]),
    ("cpp as written", CLUSTER_POLICY, lambda o: None, []),
    ("cpp typo in spec", CLUSTER_POLICY,
     lambda o: o["spec"].update({"priorty": 1}), ["spec.priorty"]),
    ("rb as written", BINDING, lambda o: None, []),
    ("rb typo in a target cluster", BINDING,
     lambda o: o["spec"]["clusters"][0].update({"replica": 3}), ["spec.clusters[0].replica"]),
    ("rb resource field at spec level", BINDING,
     lambda o: o["spec"].update({"kind": "Deployment"}), ["spec.kind"]),
    ("crb as written", CLUSTER_BINDING, lambda o: None, []),
    ("crb typo in the resource", CLUSTER_BINDING,
     lambda o: o["spec"]["resource"].update({"namspace": "x"}), ["spec.resource.namspace"]),
]


def case(edit: Edit, obj: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(obj)
    edit(changed)
    return changed


@pytest.fixture(scope="module")
def online(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimCluster]:
    with cluster_serving_crds(tmp_path_factory.mktemp("online")) as cluster:
        yield cluster


def offline_answer(obj: dict[str, Any], tmp_path: Path,
                   capsys: pytest.CaptureFixture[str]) -> tuple[bool, list[str]]:
    path = tmp_path / "object.json"
    path.write_text(json.dumps(obj))
    code = main(["validate", "-f", str(path), "-o", "json"])
    answer = json.loads(capsys.readouterr().out)
    assert code == (0 if answer["allowed"] else 1)
    unknown = [e["field"] for e in answer["errors"] if e["message"].startswith("unknown field")]
    assert unknown or answer["allowed"], f"refused for another reason: {answer['errors']}"
    return answer["allowed"], unknown


def online_answer(cluster: SimCluster, obj: dict[str, Any]) -> tuple[bool, list[str]]:
    result = cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=json.dumps(obj),
                             check=False)
    if result.returncode == 0:
        return True, []
    assert "strict decoding error" in result.stderr, result.stderr
    return False, re.findall(r'unknown field "([^"]+)"', result.stderr)


@pytest.mark.parametrize(("obj", "edit", "fields"),
                         [pytest.param(o, e, f, id=name) for name, o, e, f in CASES])
def test_offline_and_online_agree_on_unknown_and_misplaced_fields(
    obj: dict[str, Any], edit: Edit, fields: list[str], online: SimCluster, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    written = case(edit, obj)
    offline = offline_answer(written, tmp_path, capsys)
    assert online_answer(online, written) == offline
    assert offline == (not fields, fields)


def test_without_the_crds_offline_says_unknown_fields_go_unchecked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "object.json"
    path.write_text(json.dumps(case(lambda o: o["spec"].update({"x": 1}), SPREAD)))
    assert main(["validate", "-f", str(path), "--crds", str(tmp_path / "none")]) == 0
    assert "unknown fields are not checked" in capsys.readouterr().err


def test_the_table_covers_every_kind_spreadbus_validates() -> None:
    """Every kind spreadbus validates has its CRD in deploy/crds and cases in the table."""
    from spreadbus.features.registry import BUILTIN

    served = {doc["spec"]["names"]["kind"] for path in (ROOT / "deploy" / "crds").glob("*.yaml")
              for doc in yaml.safe_load_all(path.read_text()) if doc}
    validated = {kind for feature in BUILTIN for (_, kind) in feature.validators}
    assert validated <= served
    assert {o["kind"] for _, o, _, _ in CASES} == validated
