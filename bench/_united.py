"""Shared set-up for the UnitedDeployment benchmarks: a UD, its CloneSets and realistic pods,
as the watcher publishes them (``managedFields`` stripped), folded into a projection."""

from __future__ import annotations

from typing import Any

from events import codec, subjects
from events.messages import Observation
from spreadbus.features.uniteddeployment.core.model import from_object
from spreadbus.features.uniteddeployment.core.revision import ud_revision_name
from spreadbus.projection.kube_state import KubeProjection

CLUSTER = "bench"
NS = "bench"
SUBSETS = ("zone-a", "zone-b", "zone-c")
KINDS = {
    "Pod": ("", "v1", "pods"),
    "CloneSet": ("apps.kruise.io", "v1alpha1", "clonesets"),
    "UnitedDeployment": ("apps.kruise.io", "v1alpha1", "uniteddeployments"),
}


def united(name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "generation": 1,
                     "resourceVersion": "1", "creationTimestamp": "2027-01-01T00:00:00Z"},
        "spec": {
            "replicas": replicas, "revisionHistoryLimit": 10, "selector": {"matchLabels": labels},
            "template": {"cloneSetTemplate": {"metadata": {"labels": labels}, "spec": {
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [{
                    "name": "app", "image": "registry.example/app:1",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}}},
            "topology": {"subsets": [
                {"name": zone, "nodeSelectorTerm": {"matchExpressions": [{
                    "key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}}
                for zone in SUBSETS]},
        },
    }


def realistic_pod(ud: str, subset: str, i: int, revision: str) -> dict[str, Any]:
    """A pod as a CloneSet subset's pod looks once Running, about 3.5 kB of JSON."""
    name = f"{ud}-{subset}-abcde-{i:06d}"
    labels = {"app": ud, "apps.kruise.io/subset-name": subset,
              "apps.kruise.io/controller-revision-hash": revision,
              "controller-revision-hash": f"{ud}-{subset}-abcde-7d9f8c6b5",
              "apps.kruise.io/cloneset-instance-id": f"{i:05x}",
              "pod-template-hash": "7d9f8c6b5"}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": NS, "uid": f"00000000-0000-4000-8000-{i:012d}",
            "resourceVersion": str(1000 + i), "creationTimestamp": "2027-01-01T00:00:05Z",
            "labels": labels,
            "annotations": {"kubernetes.io/psp": "restricted",
                            "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                                 "name": f"{ud}-{subset}-abcde", "uid": f"uid-{ud}-{subset}",
                                 "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {
            "containers": [{
                "name": "app", "image": "registry.example/app:1",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"},
                          {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
                "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {
                    "apiVersion": "v1", "fieldPath": "metadata.name"}}},
                        {"name": "LOG_LEVEL", "value": "info"}],
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                              "limits": {"cpu": "500m", "memory": "256Mi"}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080,
                                               "scheme": "HTTP"},
                                   "periodSeconds": 10, "timeoutSeconds": 1,
                                   "successThreshold": 1, "failureThreshold": 3},
                "volumeMounts": [{"name": "kube-api-access-x7k2p", "readOnly": True,
                                  "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent",
            }],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{
                    "key": "topology.kubernetes.io/zone", "operator": "In",
                    "values": [subset]}]}]}}},
            "volumes": [{"name": "kube-api-access-x7k2p", "projected": {
                "defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt",
                                   "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}],
            "nodeName": f"{subset}-{i % 20 + 1}", "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "serviceAccount": "default",
            "securityContext": {}, "schedulerName": "default-scheduler",
            "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300}],
        },
        "status": {
            "phase": "Running", "qosClass": "Burstable",
            "hostIP": "10.0.0.1", "podIP": f"10.64.{i // 250 % 250}.{i % 250}",
            "podIPs": [{"ip": f"10.64.{i // 250 % 250}.{i % 250}"}],
            "startTime": "2027-01-01T00:00:06Z",
            "conditions": [
                {"type": t, "status": "True", "lastProbeTime": None,
                 "lastTransitionTime": "2027-01-01T00:00:08Z"}
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "containerStatuses": [{
                "name": "app", "ready": True, "restartCount": 0, "started": True,
                "image": "registry.example/app:1",
                "imageID": "registry.example/app@sha256:" + "3f" * 32,
                "containerID": "containerd://" + f"{i:064x}",
                "state": {"running": {"startedAt": "2027-01-01T00:00:07Z"}},
                "lastState": {}}],
        },
    }


def cloneset(ud: dict[str, Any], subset: str, replicas: int, revision: str) -> dict[str, Any]:
    name = ud["metadata"]["name"]
    template = ud["spec"]["template"]["cloneSetTemplate"]
    labels = {"app": name, "apps.kruise.io/subset-name": subset,
              "apps.kruise.io/controller-revision-hash": revision}
    spec = {**template["spec"], "replicas": replicas,
            "selector": {"matchLabels": {"app": name, "apps.kruise.io/subset-name": subset}}}
    return {
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": f"{name}-{subset}-abcde", "namespace": NS,
                     "uid": f"uid-{name}-{subset}", "generation": 1, "resourceVersion": "2",
                     "labels": labels,
                     "annotations": {"apps.kruise.io/subset-patch": ""},
                     "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1",
                                          "kind": "UnitedDeployment", "name": name,
                                          "uid": f"uid-{name}", "controller": True,
                                          "blockOwnerDeletion": True}]},
        "spec": spec,
        "status": {"replicas": replicas, "readyReplicas": replicas,
                   "updatedReplicas": replicas, "updatedReadyReplicas": replicas,
                   "availableReplicas": replicas, "observedGeneration": 1},
    }


class Feed:
    """Observations encoded as the watcher publishes them, folded into a projection."""

    def __init__(self) -> None:
        self.view = KubeProjection()
        self.seq = 0

    def message(self, obj: dict[str, Any]) -> tuple[int, str, bytes]:
        self.seq += 1
        group, version, resource = KINDS[obj["kind"]]
        meta = obj["metadata"]
        message = Observation(cluster=CLUSTER, group=group, version=version, resource=resource,
                              event="MODIFIED", object=obj, ts=float(self.seq))
        subject = subjects.observation(CLUSTER, group, resource, meta["namespace"], meta["name"])
        return self.seq, subject, codec.encode(message)

    def put(self, obj: dict[str, Any]) -> None:
        self.view.apply(*self.message(obj))


def revision_of(ud: dict[str, Any]) -> str:
    """The revision the reconcile names for the UD's template."""
    return ud_revision_name(from_object(ud))
