"""Workload manifests the cluster behaviour tests create."""

from __future__ import annotations

from typing import Any


def pod_template(app: str, *, cpu: str = "100m", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "app",
                    "image": f"registry.example/{app}:1",
                    "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                }
            ],
            **spec,
        },
    }


def deployment(name: str, replicas: int, **template_spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": pod_template(name, **template_spec),
        },
    }


def statefulset(name: str, replicas: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": pod_template(name),
            **spec,
        },
    }


def cloneset(name: str, replicas: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": pod_template(name),
            **spec,
        },
    }


def advanced_statefulset(name: str, replicas: int, **spec: Any) -> dict[str, Any]:
    """Kruise's Advanced StatefulSet (``apps.kruise.io/v1beta1``)."""
    body = statefulset(name, replicas, **spec)
    body["apiVersion"] = "apps.kruise.io/v1beta1"
    return body
