"""kubesim converts WorkloadSpreads between versions through the spreadbus webhook's ``/convert``.

The CRD is the one in ``deploy/crds`` (storage version v1beta1), pointed at the running webhook
as ``spreadbus up`` installs it. Client calls run in threads: kubesim's conversion calls land on
this test's event loop, where the webhook serves.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import yaml
from kubernetes import client

from kubesim import KubeSimThread
from spreadbus.cli.local_install import local_conversion
from tests.webhook.conftest import RunningWebhook

ROOT = Path(__file__).resolve().parents[3]
GROUP = "apps.kruise.io"
TERM = {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In",
                              "values": ["zone-a"]}]}


def workloadspread_crd(webhook: RunningWebhook) -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load(
        (ROOT / "deploy" / "crds" / "apps.kruise.io_workloadspreads.yaml").read_text()
    )
    ca_bundle = base64.b64encode(webhook.tls.ca.cert_pem).decode()
    return local_conversion(crd, webhook.service.port, ca_bundle)


async def test_a_v1alpha1_workloadspread_is_stored_as_v1beta1_and_read_back_unchanged(
    webhook: RunningWebhook, kubesim_factory: Callable[..., KubeSimThread]
) -> None:
    sim = await asyncio.to_thread(kubesim_factory)
    api = client.ApiClient(sim.kube_configuration())
    try:
        await asyncio.to_thread(
            client.ApiextensionsV1Api(api).create_custom_resource_definition,
            cast(Any, workloadspread_crd(webhook)),
        )
        objects = client.CustomObjectsApi(api)
        alpha = {
            "apiVersion": f"{GROUP}/v1alpha1",
            "kind": "WorkloadSpread",
            "metadata": {"name": "ws"},
            "spec": {
                "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "subsets": [{"name": "a", "requiredNodeSelectorTerm": TERM, "maxReplicas": 3}],
            },
        }
        created: Any = await asyncio.to_thread(
            objects.create_namespaced_custom_object,
            GROUP, "v1alpha1", "default", "workloadspreads", alpha,
        )
        assert created["spec"]["subsets"][0]["requiredNodeSelectorTerm"] == TERM
        beta: Any = await asyncio.to_thread(
            objects.get_namespaced_custom_object,
            GROUP, "v1beta1", "default", "workloadspreads", "ws",
        )
        subset = beta["spec"]["subsets"][0]
        assert subset["requiredNodeSelector"] == TERM, "renamed by the webhook, kept by v1beta1"
        assert "requiredNodeSelectorTerm" not in subset
        again: Any = await asyncio.to_thread(
            objects.get_namespaced_custom_object,
            GROUP, "v1alpha1", "default", "workloadspreads", "ws",
        )
        assert again["spec"] == created["spec"]
    finally:
        api.close()  # type: ignore[no-untyped-call]
