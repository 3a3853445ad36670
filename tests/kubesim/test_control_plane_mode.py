"""``kubesim --control-plane``: a multi-cluster host's API server, over HTTP with the official
client and kubectl. It serves objects, namespaces and garbage collection, but has no nodes, no
scheduler and no workload controllers, so the Deployment applied there stays a template; and it
serves Karmada's Cluster API with the columns ``kubectl get clusters`` prints under Karmada."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client import ApiException

from tests.fixtures.kubesim import ROOT, KubeSimProcess, kubesim_process
from tests.fixtures.polling import wait_until
from tests.kubesim.conftest import deployment, pod
from tests.kubesim.test_kubectl import kubectl


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeSimProcess]:
    directory = tmp_path_factory.mktemp("host")
    with kubesim_process(directory / "kubeconfig", "--control-plane") as sim:
        yield sim


@pytest.fixture(scope="module")
def api(host: KubeSimProcess) -> Iterator[client.ApiClient]:
    api_client: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(host.kubeconfig))
    with api_client:
        yield api_client


def gone(read: Any, *args: str) -> bool:
    try:
        read(*args)
    except ApiException as exc:
        return bool(exc.status == 404)
    return False


def test_templates_stay_templates_and_namespaces_and_garbage_collection_work(
        api: client.ApiClient) -> None:
    core: Any = client.CoreV1Api(api)
    apps: Any = client.AppsV1Api(api)
    assert core.list_node().items == []  # no kubelet registered any
    core.create_namespace({"metadata": {"name": "templates"}})
    apps.create_namespaced_deployment("templates", deployment("web", replicas=3))
    core.create_namespaced_pod("templates", pod("bare"))
    # Garbage collection: a dependent of a deleted owner goes.
    owner = core.create_namespaced_config_map("templates", {"metadata": {"name": "owner"}})
    core.create_namespaced_config_map("templates", {"metadata": {
        "name": "dependent",
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                             "uid": owner.metadata.uid}]}})
    core.delete_namespaced_config_map("owner", "templates")
    wait_until(lambda: gone(core.read_namespaced_config_map, "dependent", "templates"),
               what="the garbage collector to delete the dependent")
    # By now a Deployment controller would long have made its ReplicaSet, a scheduler bound the
    # pod and a kubelet started it: here nothing did.
    assert apps.list_namespaced_replica_set("templates").items == []
    assert [p.metadata.name for p in core.list_namespaced_pod("templates").items] == ["bare"]
    bare = core.read_namespaced_pod("bare", "templates")
    assert bare.spec.node_name is None
    assert bare.status.phase == "Pending"
    assert apps.read_namespaced_deployment("web", "templates").status.replicas is None
    # The namespace controller empties and removes a deleted namespace.
    core.delete_namespace("templates")
    wait_until(lambda: gone(core.read_namespace, "templates"),
               what="the namespace controller to remove the namespace")
    assert gone(apps.read_namespaced_deployment, "web", "templates")


def test_kubectl_get_clusters_prints_karmadas_columns(host: KubeSimProcess) -> None:
    for name in ("cluster.karmada.io_clusters.yaml", "clusterregistry.k8s.io_clusters.yaml"):
        kubectl(host.kubeconfig, "apply", "-f", str(ROOT / "deploy" / "crds" / name))
    kubectl(host.kubeconfig, "wait", "--for=condition=Established", "--timeout=30s",
            "crd/clusters.cluster.karmada.io", "crd/clusters.clusterregistry.k8s.io")
    member = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
              "metadata": {"name": "member1"},
              "spec": {"syncMode": "Pull", "region": "eu-west", "zones": ["a", "b"]}}
    kubectl(host.kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump(member))
    status = {"status": {"kubernetesVersion": "v1.31.0", "conditions": [
        {"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "ready",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    kubectl(host.kubeconfig, "patch", "clusters.cluster.karmada.io", "member1",
            "--subresource=status", "--type=merge", "-p", yaml.safe_dump(status))
    lines = kubectl(host.kubeconfig, "get", "clusters.cluster.karmada.io").stdout.splitlines()
    assert lines[0].split() == ["NAME", "VERSION", "MODE", "READY", "AGE"]
    assert lines[1].split()[:4] == ["member1", "v1.31.0", "Pull", "True"]
    wide = kubectl(host.kubeconfig, "get", "clusters.cluster.karmada.io", "-o", "wide").stdout
    header, row = wide.splitlines()[:2]
    assert header.split() == ["NAME", "VERSION", "MODE", "READY", "AGE", "ZONES", "REGION",
                              "PROVIDER", "API-ENDPOINT", "PROXY-URL"]
    assert row.split()[5:7] == ["a,b", "eu-west"]  # zones joined by commas, as Karmada's


def test_the_cluster_registry_kind_is_namespaced(host: KubeSimProcess, tmp_path: Path) -> None:
    kubectl(host.kubeconfig, "apply", "-f",
            str(ROOT / "deploy" / "crds" / "clusterregistry.k8s.io_clusters.yaml"))
    kubectl(host.kubeconfig, "wait", "--for=condition=Established", "--timeout=30s",
            "crd/clusters.clusterregistry.k8s.io")
    cluster = {"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
               "metadata": {"name": "member2", "namespace": "default"},
               "spec": {"kubernetesApiEndpoints": {"serverEndpoints": [
                   {"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.0.2:6443"}]}}}
    kubectl(host.kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump(cluster))
    lines = kubectl(host.kubeconfig, "get", "clusters.clusterregistry.k8s.io", "-n",
                    "default").stdout.splitlines()
    assert lines[0].split() == ["NAME", "SERVER", "AGE"]
    assert lines[1].split()[:2] == ["member2", "10.0.0.2:6443"]
