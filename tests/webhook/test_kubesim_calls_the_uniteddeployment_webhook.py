"""kubectl against kubesim, which calls the UnitedDeployment webhooks over HTTPS.

Real parts: kubesim with the installation's CRDs and webhook configurations (addressed to the
local replica by URL), the pinned kubectl, and a webhook replica on a nats-server. kubectl runs in
a thread, because kubesim's admission calls land on this test's event loop.
"""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from nats.aio.client import Client

from events import subjects
from events.codec import encode
from events.messages import Observation
from tests.fixtures.cluster import SimCluster
from tests.fixtures.polling import wait_until_async
from tests.uniteddeployment.test_validation_rules import base
from tests.webhook.conftest import RunningWebhook, local_configurations

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "uniteddeployment" / "cloneset-max-replicas.yaml"


@pytest.fixture
async def api(cluster: SimCluster, webhook: RunningWebhook) -> SimCluster:
    await asyncio.to_thread(cluster.kubectl, "apply", "-f", str(ROOT / "deploy" / "crds"))
    manifests = local_configurations(webhook.service.port, webhook.tls.ca.cert_pem)
    await asyncio.to_thread(
        cluster.kubectl, "apply", "-f", "-", stdin=yaml.safe_dump_all(manifests))
    return cluster


async def kubectl(cluster: SimCluster, *args: str, stdin: str | None = None) -> tuple[int, str]:
    result = await asyncio.to_thread(cluster.kubectl, *args, stdin=stdin, check=False)
    return result.returncode, result.stdout + result.stderr


async def stored(cluster: SimCluster, name: str) -> dict[str, Any]:
    code, out = await kubectl(cluster, "get", "uniteddeployment", name, "-o", "json")
    assert code == 0, out
    result: dict[str, Any] = json.loads(out)
    return result


async def test_a_bad_uniteddeployment_is_refused_naming_the_field(api: SimCluster) -> None:
    bad = base()
    bad["spec"]["topology"]["subsets"][2]["name"] = "subset-a"
    code, out = await kubectl(api, "apply", "-f", "-", stdin=json.dumps(bad))
    assert code != 0
    # kubectl prints a 422's causes, field by field.
    assert "spec.topology.subsets[2].name: duplicated subset name subset-a" in out
    code, out = await kubectl(api, "get", "uniteddeployment", "sample-ud")
    assert code != 0
    assert "NotFound" in out


async def test_subsets_in_other_clusters_are_stored_and_checked_online(api: SimCluster) -> None:
    """The schema keeps ``clusterRegistry`` and ``targetCluster``; the webhook refuses a target
    without a registry and a registry of a kind that is not served, naming each field."""
    karmada = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster"}
    orphan = base()
    orphan["spec"]["topology"]["subsets"][0]["targetCluster"] = {"name": "member1"}
    code, out = await kubectl(api, "apply", "-f", "-", stdin=json.dumps(orphan))
    assert code != 0
    assert "spec.topology.subsets[0].targetCluster: a target cluster is found through " \
        "spec.topology.clusterRegistry" in out
    unserved = copy.deepcopy(orphan)
    unserved["spec"]["topology"]["clusterRegistry"] = {
        "clusterType": {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster"}}
    code, out = await kubectl(api, "apply", "-f", "-", stdin=json.dumps(unserved))
    assert code != 0
    assert "spec.topology.clusterRegistry.clusterType: " in out
    assert "cluster.karmada.io/v1alpha1, Kind=Cluster" in out
    good = copy.deepcopy(orphan)
    good["spec"]["topology"]["clusterRegistry"] = {"clusterType": karmada,
                                                   "selector": {"env": "prod"}}
    code, out = await kubectl(api, "apply", "-f", "-", stdin=json.dumps(good))
    assert code == 0, out
    topology = (await stored(api, "sample-ud"))["spec"]["topology"]
    assert topology["clusterRegistry"] == {"clusterType": karmada, "selector": {"env": "prod"}}
    assert topology["subsets"][0]["targetCluster"] == {"name": "member1"}


async def test_a_target_the_observed_registry_lacks_is_refused(
        api: SimCluster, nats_client: Client) -> None:
    """Once the webhook has observed a Cluster of the registry's kind, a target that is not
    among them is refused, and one that is, is stored."""
    cluster = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
               "metadata": {"name": "member1", "uid": "u1"}, "spec": {"syncMode": "Pull"}}
    observed = Observation(cluster="c1", group="cluster.karmada.io", version="v1alpha1",
                           resource="clusters", event="ADDED", object=cluster)
    await nats_client.jetstream().publish(
        subjects.observation("c1", "cluster.karmada.io", "clusters", "", "member1"),
        encode(observed))
    ud = base()
    ud["spec"]["topology"]["clusterRegistry"] = {"clusterType": {
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster"}}
    ud["spec"]["topology"]["subsets"][0]["targetCluster"] = {"name": "member2"}

    async def refused() -> str | None:
        code, out = await kubectl(api, "apply", "--dry-run=server", "-f", "-",
                                  stdin=json.dumps(ud))
        return out if code != 0 else None

    out = await wait_until_async(refused, what="the webhook to know member1 and refuse member2")
    assert ("spec.topology.subsets[0].targetCluster.name: spec.topology.clusterRegistry finds "
            "no cluster.karmada.io/v1alpha1 Cluster named member2") in out
    ud["spec"]["topology"]["subsets"][0]["targetCluster"] = {"name": "member1"}
    code, out = await kubectl(api, "apply", "-f", "-", stdin=json.dumps(ud))
    assert code == 0, out


async def test_the_maxreplicas_example_is_stored_with_kruises_defaults(api: SimCluster) -> None:
    code, out = await kubectl(api, "apply", "-f", str(EXAMPLE))
    assert code == 0, out
    spec = (await stored(api, "sample-ud"))["spec"]
    assert spec["replicas"] == 5
    assert spec["revisionHistoryLimit"] == 10
    assert spec["updateStrategy"] == {"type": "Manual", "manualUpdate": {}}
    assert [s.get("minReplicas") for s in spec["topology"]["subsets"]] == [0, 0]


async def test_an_update_may_not_move_a_subset_and_a_protected_one_is_not_deleted(
    api: SimCluster,
) -> None:
    ud = base()
    ud["metadata"]["labels"] = {"policy.kruise.io/delete-protection": "Cascading"}
    code, out = await kubectl(api, "apply", "-f", "-", stdin=json.dumps(ud))
    assert code == 0, out
    moved = base()
    moved["metadata"]["labels"] = ud["metadata"]["labels"]
    moved["spec"]["topology"]["subsets"][0]["nodeSelectorTerm"]["matchExpressions"][0][
        "values"] = ["zone-b"]
    code, out = await kubectl(api, "apply", "-f", "-", stdin=json.dumps(moved))
    assert code != 0
    assert "spec.topology.subsets[0].nodeSelectorTerm: may not be changed in an update" in out
    code, out = await kubectl(api, "delete", "uniteddeployment", "sample-ud")
    assert code != 0
    assert "delete-protection=Cascading and replicas 6>0" in out
    code, out = await kubectl(api, "scale", "uniteddeployment", "sample-ud", "--replicas=0")
    assert code == 0, out
    code, out = await kubectl(api, "delete", "uniteddeployment", "sample-ud")
    assert code == 0, out
