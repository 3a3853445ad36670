"""UnitedDeployments on the local stack: building them, and reading back where their pods run."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from kubernetes import client

from tests.workloadspread_e2e.stack import kubectl, wait_for

SUBSET_LABEL = "apps.kruise.io/subset-name"
TEMPLATE_KIND = {
    "statefulSetTemplate": ("apps/v1", "StatefulSet"),
    "cloneSetTemplate": ("apps.kruise.io/v1alpha1", "CloneSet"),
    "deploymentTemplate": ("apps/v1", "Deployment"),
}


def term(key: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}


def subset(name: str, node_term: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"name": name, "nodeSelectorTerm": node_term, **fields}


def united(name: str, replicas: int, subsets: list[dict[str, Any]], *,
           template: str = "cloneSetTemplate", image: str = "nginx:1",
           cpu: str = "10m", **spec: Any) -> dict[str, Any]:
    labels = {"app": name}
    pod_spec: dict[str, Any] = {"containers": [{
        "name": "main", "image": image,
        "resources": {"requests": {"cpu": cpu, "memory": "16Mi"}},
    }]}
    workload_spec: dict[str, Any] = {"selector": {"matchLabels": labels},
                                     "template": {"metadata": {"labels": labels},
                                                  "spec": pod_spec}}
    return {
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {template: {"metadata": {"labels": labels},
                                         "spec": workload_spec}},
                 "topology": {"subsets": subsets}, **spec},
    }


def two_cluster_united(name: str, replicas: int, *, adaptive: bool, m1_max: int
                       ) -> dict[str, Any]:
    """A host UnitedDeployment of StatefulSets: subset ``m1`` in member1 (at most ``m1_max``),
    ``m2`` in member2 (the rest), each on zone-a's nodes there."""
    labels = {"app": name}

    def target(subset: str, cluster: str, **fields: Any) -> dict[str, Any]:
        return {"name": subset, "targetCluster": {"name": cluster}, **fields,
                "nodeSelectorTerm": term("topology.kubernetes.io/zone", "zone-a")}

    topology: dict[str, Any] = {
        "clusterRegistry": {"clusterType": {"apiVersion": "cluster.karmada.io/v1alpha1",
                                            "kind": "Cluster"}},
        "subsets": [target("m1", "member1", maxReplicas=m1_max), target("m2", "member2")]}
    if adaptive:
        topology["scheduleStrategy"] = {"type": "Adaptive"}
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"statefulSetTemplate": {
                         "metadata": {"labels": labels},
                         "spec": {"selector": {"matchLabels": labels}, "serviceName": name,
                                  "template": {"metadata": {"labels": labels},
                                               "spec": {"containers": [
                                                   {"name": "c", "image": "nginx:alpine"}]}}}}},
                     "topology": topology}}


class Stack:
    """The stack's API: the official client, kubectl with its kubeconfig."""

    def __init__(self, api: client.ApiClient, kubeconfig: Path) -> None:
        self.api = api
        self.kubeconfig = kubeconfig
        self.core: Any = client.CoreV1Api(api)
        self.custom: Any = client.CustomObjectsApi(api)

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        return kubectl(self.kubeconfig, *args, stdin=stdin)

    def apply(self, obj: dict[str, Any]) -> None:
        self.kubectl("apply", "-f", "-", stdin=json.dumps(obj))

    def get_ud(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.custom.get_namespaced_custom_object(
            "apps.kruise.io", "v1alpha1", "default", "uniteddeployments", name)
        return found

    def patch_ud(self, name: str, patch: dict[str, Any]) -> None:
        self.kubectl("patch", "ud", name, "--type=merge", "-p", json.dumps(patch))

    def delete_ud(self, name: str) -> None:
        self.kubectl("delete", "ud", name, "--wait=false", "--ignore-not-found")
        wait_for(f"{name}'s pods to go", lambda: not self.pods(name), 60,
                 lambda: len(self.pods(name)))

    def pods(self, app: str) -> list[Any]:
        pods = self.core.list_namespaced_pod("default", label_selector=f"app={app}").items
        return [p for p in pods if p.metadata.deletion_timestamp is None
                and p.status.phase not in ("Succeeded", "Failed")]

    def node_labels(self) -> dict[str, dict[str, str]]:
        return {n.metadata.name: n.metadata.labels or {} for n in self.core.list_node().items}

    def placement(self, app: str, node_label: str) -> Counter[tuple[str, str]]:
        """(subset, node label value) -> running pods of the UD labelled ``app``."""
        nodes = self.node_labels()
        return Counter(
            (p.metadata.labels.get(SUBSET_LABEL, "?"),
             nodes.get(p.spec.node_name or "", {}).get(node_label, "-"))
            for p in self.pods(app) if p.status.phase == "Running"
        )

    def settled(self, app: str, node_label: str, wanted: dict[tuple[str, str], int],
                timeout: float = 90) -> None:
        """Wait until exactly ``wanted`` run and no other pod of the UD is live."""
        def done() -> bool:
            pods = self.pods(app)
            running = self.placement(app, node_label)
            return len(pods) == sum(wanted.values()) and running == Counter(wanted)

        wait_for(f"{app} to run {wanted}", done, timeout,
                 lambda: (self.placement(app, node_label), len(self.pods(app))))

    def subset_replicas(self, name: str) -> dict[str, int]:
        """Subset -> spec.replicas of its workload, as the UD's workloads say."""
        ud = self.get_ud(name)
        templates = ud["spec"]["template"]
        (template,) = templates
        api_version, kind = TEMPLATE_KIND[template]
        group = api_version.rpartition("/")[0]
        resource = f"{kind.lower()}s.{group}"
        listed = json.loads(self.kubectl("get", resource, "-l", SUBSET_LABEL, "-o", "json"))
        return {
            w["metadata"]["labels"][SUBSET_LABEL]: w["spec"]["replicas"]
            for w in listed["items"]
            if any(r.get("uid") == ud["metadata"]["uid"]
                   for r in w["metadata"].get("ownerReferences") or ())
            and not w["metadata"].get("deletionTimestamp")
        }
