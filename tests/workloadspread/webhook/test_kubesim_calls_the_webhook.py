"""kubesim calls the webhook over HTTPS with the caBundle, as an API server would.

Real parts only: kubesim with its simulated controllers and scheduler, a nats-server, the watcher
as its own process feeding the bus, and the webhook replica reading the bus. Blocking client
calls run in threads, because kubesim's admission calls land on this test's event loop.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from spreadbus.cli import main
from spreadbus.features.workloadspread.core.validation import MAX_PATCH_BYTES
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.parent_death import die_with_parent
from tests.fixtures.cluster import SimCluster
from tests.fixtures.polling import wait_until_async
from tests.webhook.conftest import RunningWebhook, local_configurations
from tests.workloadspread.webhook.cluster_state import MATCHED, spread, zone_subset

ROOT = Path(__file__).resolve().parents[3]
T = TypeVar("T")


async def eventually(check: Callable[[], T | None], what: str, timeout: float = 30) -> T:
    """Poll ``check`` in a thread: it may block on the API server, which calls this loop."""
    return await wait_until_async(
        lambda: asyncio.to_thread(check), what=what, timeout=timeout, interval=0.1
    )


CLONESET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "clonesets.apps.kruise.io"},
    "spec": {
        "group": "apps.kruise.io",
        "names": {
            "kind": "CloneSet",
            "listKind": "CloneSetList",
            "plural": "clonesets",
            "singular": "cloneset",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


@pytest.fixture
async def wired(
    cluster: SimCluster, webhook: RunningWebhook, nats_server: NatsServer, tmp_path: Path
) -> AsyncIterator[SimCluster]:
    """kubesim with the CRDs, the webhook configurations and a watcher feeding the bus."""
    await asyncio.to_thread(cluster.kubectl, "apply", "-f", str(ROOT / "deploy" / "crds"))
    # Kruise's CloneSet, as a cluster with Kruise has it; batch Jobs and Advanced StatefulSets
    # stay absent (kubesim serves neither), which must not hold anything up.
    await asyncio.to_thread(cluster.kubectl, "apply", "-f", "-", stdin=json.dumps(CLONESET_CRD))
    manifests = local_configurations(webhook.service.port, webhook.tls.ca.cert_pem)
    await asyncio.to_thread(
        cluster.kubectl, "apply", "-f", "-", stdin=yaml.safe_dump_all(manifests)
    )
    log = (tmp_path / "watcher.log").open("wb")
    watcher = subprocess.Popen(  # noqa: ASYNC220 (starting a process does not wait for it)
        [
            sys.executable,
            "-m",
            "services.watcher",
            f"--kubeconfig={cluster.kubeconfig}",
            f"--nats-url={nats_server.url}",
            "--cluster=c1",
            "--http-host=127.0.0.1",
            "--http-port=0",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
        preexec_fn=die_with_parent(),
    )
    try:
        admission = webhook.service.sides["workloadspread"].admission
        assert admission is not None
        await eventually(lambda: admission.synced, "the webhook's view to sync")
        yield cluster
    finally:
        watcher.terminate()
        try:
            await asyncio.to_thread(watcher.wait, 20)
        except subprocess.TimeoutExpired:
            watcher.kill()
            await asyncio.to_thread(watcher.wait)
        log.close()


def create_spread(cluster: SimCluster, body: dict[str, Any]) -> None:
    client.CustomObjectsApi(cluster.api_client).create_namespaced_custom_object(
        "apps.kruise.io", "v1alpha1", "default", "workloadspreads", body
    )


async def test_an_invalid_workloadspread_is_refused_by_the_api_server(wired: SimCluster) -> None:
    bad = spread([zone_subset("zone-a", 2), zone_subset("zone-a")])
    with pytest.raises(ApiException) as refused:
        await asyncio.to_thread(create_spread, wired, bad)
    assert refused.value.status == 422
    assert "duplicated subset name zone-a" in str(refused.value.body)


async def test_a_patch_no_pod_could_take_is_refused_online_with_the_offline_errors(
    wired: SimCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Too large a patch and resources no pod may have: the API server's answer (through the
    webhook) names the same fields and limits as ``spreadbus validate``."""
    too_large = zone_subset("zone-a", 2)
    too_large["patch"] = {"spec": {"containers": [
        {"name": "web", "env": [{"name": "X", "value": "x" * MAX_PATCH_BYTES}]}]}}
    impossible = zone_subset("zone-b")
    impossible["patch"] = {"spec": {"containers": [
        {"name": "web", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]}}
    bad = spread([too_large, impossible])
    (tmp_path / "ws.json").write_text(json.dumps(bad))
    assert main(["validate", "-f", str(tmp_path / "ws.json"), "-o", "json"]) == 1
    offline = json.loads(capsys.readouterr().out)["errors"]
    assert [(e["field"], e["type"]) for e in offline] == [
        ("spec.subsets[0].patch", "TooLong"),
        ("spec.subsets[1].patch.spec.containers[0].resources.requests", "Invalid"),
    ]
    with pytest.raises(ApiException) as refused:
        await asyncio.to_thread(create_spread, wired, bad)
    assert refused.value.status == 422
    body = str(refused.value.body)
    for error in offline:
        assert error["field"] in body
        assert error["message"] in body


async def test_pods_of_a_deployment_are_steered_into_subsets_by_the_api_servers_calls(
    wired: SimCluster, webhook: RunningWebhook
) -> None:
    await asyncio.to_thread(
        create_spread, wired, spread([zone_subset("zone-a", 2), zone_subset("zone-b")])
    )
    view = webhook.service.sides["workloadspread"].view
    await eventually(lambda: view.spreads_in("default"), "the spread to reach the view")
    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 5,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }
    await asyncio.to_thread(wired.kubectl, "apply", "-f", "-", stdin=json.dumps(deployment))

    def placed() -> list[tuple[str, str]] | None:
        """(subset, zone of the node) per scheduled pod, once all five are scheduled."""
        pods = [
            p for p in wired.pods(selector="app=web") if not p["metadata"].get("deletionTimestamp")
        ]
        if len(pods) != 5 or not all(p["spec"].get("nodeName") for p in pods):
            return None
        out = []
        for pod in pods:
            subset = json.loads(pod["metadata"]["annotations"][MATCHED])["subset"]
            node = wired.core.read_node(pod["spec"]["nodeName"])
            assert node.metadata is not None
            assert node.metadata.labels is not None
            out.append((subset, node.metadata.labels["topology.kubernetes.io/zone"]))
        return out

    result = await eventually(placed, "five scheduled pods")
    assert Counter(subset for subset, _ in result) == {"zone-a": 2, "zone-b": 3}
    assert all(subset == zone for subset, zone in result), "each pod runs in its subset's zone"
    assert webhook.service.sides["workloadspread"].admission is not None
    assert webhook.service.sides["workloadspread"].admission.steered == 5


async def test_pods_of_a_cloneset_are_steered_by_its_own_replica_count(
    wired: SimCluster, webhook: RunningWebhook
) -> None:
    objects = client.CustomObjectsApi(wired.api_client)
    cloneset: Any = await asyncio.to_thread(
        objects.create_namespaced_custom_object,
        "apps.kruise.io",
        "v1alpha1",
        "default",
        "clonesets",
        {
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "CloneSet",
            "metadata": {"name": "cache"},
            "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "cache"}}},
        },
    )
    body = spread([zone_subset("zone-a", "50%"), zone_subset("zone-b")], name="cache")
    body["spec"]["targetRef"] = {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet",
        "name": "cache",
    }
    await asyncio.to_thread(create_spread, wired, body)
    view = webhook.service.sides["workloadspread"].view
    await eventually(
        lambda: (
            view.spreads_in("default")
            and view.lookup("default", "apps.kruise.io", "CloneSet", "cache")
        ),
        "the spread and the CloneSet to reach the view",
    )
    owner = {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet",
        "name": "cache",
        "uid": cloneset["metadata"]["uid"],
        "controller": True,
    }
    subsets = []
    for i in range(4):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"cache-{i}",
                "labels": {"app": "cache"},
                "ownerReferences": [owner],
            },
            "spec": {"containers": [{"name": "cache", "image": "redis"}]},
        }
        created = await asyncio.to_thread(
            wired.core.create_namespaced_pod, "default", cast(Any, pod)
        )
        assert created.metadata is not None
        assert created.metadata.annotations is not None
        subsets.append(json.loads(created.metadata.annotations[MATCHED])["subset"])
    # 50% of the CloneSet's 4 replicas: unobserved, the CloneSet would count as 0 (and before
    # that, its pods were refused outright).
    assert subsets == ["zone-a", "zone-a", "zone-b", "zone-b"]
