"""Shared builders for kubesim tests."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client


def pod(
    name: str, *, labels: dict[str, str] | None = None, node: str | None = None, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}], **spec},
    }
    if node:
        body["spec"]["nodeName"] = node
    return body


def deployment(
    name: str, replicas: int = 1, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    labels = labels or {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            },
        },
    }


@pytest.fixture
def core(kube_api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(kube_api_client)


@pytest.fixture
def apps(kube_api_client: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(kube_api_client)
