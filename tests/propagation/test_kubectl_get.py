"""``kubectl get pp,cpp,rb,crb,clusters`` (the pinned kubectl) against kubesim serving
``deploy/crds``: Karmada's short names and printer columns."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.cluster import SimCluster, cluster_serving_crds

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = Path(__file__).resolve().parents[2] / "examples" / "propagation"

POLICY: dict[str, Any] = {
    "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"priority": 5,
             "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": "web"}],
             "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}},
}


def binding(kind: str, name: str, namespace: str | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    resource: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    if namespace is not None:
        metadata["namespace"] = namespace
        resource["namespace"] = namespace
    else:
        resource = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "name": "demo-role"}
    return {"apiVersion": "work.karmada.io/v1alpha2", "kind": kind, "metadata": metadata,
            "spec": {"resource": resource, "clusters": [{"name": "member1", "replicas": 2}]}}


SCHEDULED = {"status": {"conditions": [
    {"type": "Scheduled", "status": "True", "reason": "Success", "message": "scheduled",
     "lastTransitionTime": "2024-05-22T11:36:10Z"},
    {"type": "FullyApplied", "status": "False", "reason": "Applying", "message": "applying",
     "lastTransitionTime": "2024-05-22T11:36:10Z"}]}}


@pytest.fixture(scope="module")
def online(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimCluster]:
    with cluster_serving_crds(tmp_path_factory.mktemp("kubectl")) as cluster:
        yield cluster


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.strip()]


def test_get_pp_cpp_rb_crb_clusters_prints_karmadas_columns(online: SimCluster) -> None:
    online.kubectl("apply", "-f", str(MANIFESTS / "members.yaml"))
    online.kubectl("apply", "-f", str(MANIFESTS / "batch.yaml"))
    online.kubectl("apply", "-f", "-", stdin=json.dumps(POLICY))
    for kind, name, namespace in (("ResourceBinding", "web-deployment", "default"),
                                  ("ClusterResourceBinding", "demo-role-clusterrole", None)):
        online.kubectl("apply", "-f", "-", stdin=json.dumps(binding(kind, name, namespace)))
    where = ["-n", "default"]
    online.kubectl("patch", "rb", "web-deployment", *where, "--subresource=status",
                   "--type=merge", "-p", json.dumps(SCHEDULED))
    online.kubectl("patch", "crb", "demo-role-clusterrole", "--subresource=status",
                   "--type=merge", "-p", json.dumps(SCHEDULED))
    ready = {"status": {"kubernetesVersion": "v1.31.0", "conditions": [
        {"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "ok",
         "lastTransitionTime": "2024-05-22T11:36:10Z"}]}}
    online.kubectl("patch", "cluster", "member1", "--subresource=status", "--type=merge",
                   "-p", json.dumps(ready))

    rows = _rows(online.kubectl("get", "pp,cpp,rb,crb,clusters", *where).stdout)
    headers = [r for r in rows if r[0] == "NAME"]
    assert headers == [
        ["NAME", "CONFLICT-RESOLUTION", "PRIORITY", "AGE"],
        ["NAME", "CONFLICT-RESOLUTION", "PRIORITY", "AGE"],
        ["NAME", "SCHEDULED", "FULLYAPPLIED", "AGE"],
        ["NAME", "SCHEDULED", "FULLYAPPLIED", "AGE"],
        ["NAME", "VERSION", "MODE", "READY", "AGE"],
    ]
    named = {r[0]: r[1:-1] for r in rows if r[0] != "NAME"}
    # The CRD's default fills conflictResolution in, as Karmada's does.
    assert named["propagationpolicy.policy.karmada.io/web"] == ["Abort", "5"]
    assert named["clusterpropagationpolicy.policy.karmada.io/demo"] == ["Abort", "0"]
    assert named["resourcebinding.work.karmada.io/web-deployment"] == ["True", "False"]
    assert named["clusterresourcebinding.work.karmada.io/demo-role-clusterrole"] == [
        "True", "False"]
    assert named["cluster.cluster.karmada.io/member1"] == ["v1.31.0", "Pull", "True"]
