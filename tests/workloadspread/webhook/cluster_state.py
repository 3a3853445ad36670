"""A webhook view filled the way the observation stream fills it, for the webhook tests."""

from __future__ import annotations

import itertools
import json
from typing import Any

from events.codec import encode
from events.messages import Observation, SyncMarker, WatchEventType
from spreadbus.features.workloadspread.admission.view import View

RESOURCES = {
    "Pod": ("", "v1", "pods"),
    "ReplicaSet": ("apps", "v1", "replicasets"),
    "Deployment": ("apps", "v1", "deployments"),
    "WorkloadSpread": ("apps.kruise.io", "v1alpha1", "workloadspreads"),
    "Job": ("batch", "v1", "jobs"),
    "CloneSet": ("apps.kruise.io", "v1alpha1", "clonesets"),
    "TFJob": ("kubeflow.org", "v1", "tfjobs"),
    "Widget": ("example.com", "v1", "widgets"),
}
MATCHED = "apps.kruise.io/matched-workloadspread"
LISTED = ("Pod", "WorkloadSpread", "ReplicaSet", "Deployment")
"""The kinds a webhook's view must have listed before it steers a Deployment's pods."""


class Feed:
    """Folds objects into a view through encoded bus messages, with increasing sequences."""

    def __init__(self, view: View) -> None:
        self.view = view
        self._seq = itertools.count(view.seq + 1)

    def sync(self, *kinds: str) -> None:
        for kind in kinds:
            group, version, resource = RESOURCES[kind]
            marker = SyncMarker(
                cluster=self.view.cluster,
                group=group,
                version=version,
                resource=resource,
                complete=True,
            )
            self.view.apply_message(next(self._seq), "kube.sync", encode(marker))

    def put(self, obj: dict[str, Any], event: WatchEventType = "ADDED") -> None:
        group, version, resource = RESOURCES[obj["kind"]]
        message = Observation(
            cluster=self.view.cluster,
            group=group,
            version=version,
            resource=resource,
            event=event,
            object=obj,
        )
        self.view.apply_message(next(self._seq), "kube.obs", encode(message))


def fold_pods(view: View, history: list[tuple[WatchEventType, dict[str, Any]]]) -> None:
    """Folds pod observations as they are, whatever fields they lack, one sequence each."""
    for event, obj in history:
        message = Observation(
            cluster=view.cluster, group="", version="v1", resource="pods", event=event, object=obj
        )
        view.apply_message(view.seq + 1, "kube.obs", encode(message))


def synced_feed(view: View | None = None) -> Feed:
    """A feed on ``view`` (a fresh one of cluster ``c1`` by default) with :data:`LISTED` synced."""
    feed = Feed(view or View(cluster="c1"))
    feed.sync(*LISTED)
    return feed


def deployment(name: str = "web", replicas: int = 10) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}},
    }


def replicaset(name: str = "web-5f7c", owner: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "labels": {"pod-template-hash": name.rsplit("-", 1)[-1]},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": owner,
                    "uid": f"uid-{owner}",
                    "controller": True,
                }
            ],
        },
    }


def spread(subsets: list[dict[str, Any]], name: str = "ws", target: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "WorkloadSpread",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "subsets": subsets,
        },
    }


def zone_subset(zone: str, max_replicas: int | str | None = None) -> dict[str, Any]:
    subset: dict[str, Any] = {
        "name": zone,
        "requiredNodeSelectorTerm": {
            "matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}
            ]
        },
    }
    if max_replicas is not None:
        subset["maxReplicas"] = max_replicas
    return subset


def new_pod(rs: str = "web-5f7c", name: str = "") -> dict[str, Any]:
    """A pod as a ReplicaSet controller sends it: generateName, labels with the hash, owner."""
    metadata: dict[str, Any] = {
        "generateName": f"{rs}-",
        "namespace": "default",
        "labels": {"app": "web", "pod-template-hash": rs.rsplit("-", 1)[-1]},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": rs,
                "uid": f"uid-{rs}",
                "controller": True,
            }
        ],
    }
    if name:
        metadata["name"] = name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }


def stored_pod(created: dict[str, Any], name: str, patched: dict[str, Any]) -> dict[str, Any]:
    """The pod the API server stores after admission: named, with the webhook's changes."""
    pod: dict[str, Any] = json.loads(json.dumps(patched))
    pod["metadata"]["name"] = name
    pod["status"] = {"phase": "Pending"}
    return pod


def owned_pod(api_version: str, kind: str, owner: str, labels: dict[str, str]) -> dict[str, Any]:
    """A pod as a workload controller of ``kind`` sends it, named by generateName."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"{owner}-",
            "namespace": "default",
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": api_version,
                    "kind": kind,
                    "name": owner,
                    "uid": f"uid-{owner}",
                    "controller": True,
                }
            ],
        },
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }


def workload(api_version: str, kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": spec,
    }


def targeting(body: dict[str, Any], api_version: str, kind: str, name: str) -> dict[str, Any]:
    """The WorkloadSpread ``body`` aimed at another workload."""
    body["spec"]["targetRef"] = {"apiVersion": api_version, "kind": kind, "name": name}
    return body
