"""Seed 003's multi-cluster UnitedDeployment on ``spreadbus up --members member1,member2``.

The UnitedDeployment is applied in the host (a control plane, no nodes) with a cluster registry
of Karmada Clusters and three subsets over the two members: ``m1-zone-a`` and ``m1-zone-b`` on
their zones' nodes of member1, ``m2-zone-c`` on zone-c's of member2. Scaled 6 -> 10 -> 4, each
subset's pods run in its own cluster on its own zone (read through the member's context), none in
the host, and the host's status sums every cluster. Then a Manual canary: partitions keep the
low ordinals of each subset on the old image while the template's image changes, so only the
un-partitioned pods get the new revision, in whichever cluster they run; partitions of 0 then
release it everywhere. The host being a control plane, its webhook refuses a subset that names
no cluster. One stack serves the module, as a user would start it.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.runtime.parent_death import die_with_parent
from tests.examples.manifests import ROOT
from tests.examples.test_readme_several_clusters import (
    KUBECTL,
    MEMBERS,
    Clusters,
    ready_members,
    zones,
)
from tests.fixtures.polling import wait_until
from tests.stack.test_local_stack import tear_down, while_up

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
KARMADA = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster"}
ZONE = "topology.kubernetes.io/zone"
OLD, NEW = "nginx:alpine", "nginx:1.27-alpine"
SUBSETS = {"m1-zone-a": ("member1", "zone-a"), "m1-zone-b": ("member1", "zone-b"),
           "m2-zone-c": ("member2", "zone-c")}
"""Subset -> the cluster and zone its pods run in."""
SUBSET_LABEL = "apps.kruise.io/subset-name"


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clusters]:
    workdir = tmp_path_factory.mktemp("seed-003")
    data_dir = workdir / "stack"
    with (workdir / "up.log").open("w") as log:
        proc = subprocess.Popen(
            [str(Path(KUBECTL).parent / "spreadbus"), "up", "--members", ",".join(MEMBERS),
             "--data-dir", str(data_dir)],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True,
            preexec_fn=die_with_parent(),
        )
    try:
        kubeconfig = data_dir / "kubeconfig"
        wait_until(while_up(proc, kubeconfig.exists), what="the clusters to be ready",
                   timeout=180, interval=0.2)
        found = Clusters(workdir, proc, kubeconfig)
        wait_until(while_up(proc, lambda: ready_members(found) == set(MEMBERS)),
                   what="both members Ready in the host's registry", timeout=90, interval=0.2)
        yield found
    finally:
        tear_down(proc)


def united(replicas: int, image: str = OLD,
           partitions: dict[str, int] | None = None) -> dict[str, Any]:
    labels = {"app": "seed"}
    subsets = [{"name": name, "targetCluster": {"name": cluster},
                "nodeSelectorTerm": {"matchExpressions": [
                    {"key": ZONE, "operator": "In", "values": [zone]}]}}
               for name, (cluster, zone) in SUBSETS.items()]
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": labels},
        "template": {"statefulSetTemplate": {
            "metadata": {"labels": labels},
            "spec": {"selector": {"matchLabels": labels}, "serviceName": "seed",
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}},
        "topology": {"clusterRegistry": {"clusterType": KARMADA}, "subsets": subsets},
        "updateStrategy": {"type": "Manual",
                           "manualUpdate": {"partitions": partitions or {}}},
    }
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
            "metadata": {"name": "seed", "namespace": "default"}, "spec": spec}


def apply(clusters: Clusters, ud: dict[str, Any]) -> None:
    done = subprocess.run([KUBECTL, "--kubeconfig", str(clusters.kubeconfig), "apply", "-f", "-"],
                          input=yaml.safe_dump(ud), capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr


def pods_by_cluster(clusters: Clusters) -> Counter[tuple[str, str, str, int, str]] | None:
    """(cluster, subset, zone, ordinal, image) of every app=seed pod in every cluster; None while
    one is not Running and Ready, or is being deleted."""
    found: Counter[tuple[str, str, str, int, str]] = Counter()
    for context in ("host", *MEMBERS):
        zone_of = zones(clusters, context)
        pods = clusters.json("--context", context, "get", "pods", "-n", "default",
                             "-l", "app=seed")["items"]
        for pod in pods:
            ready = any(c["type"] == "Ready" and c["status"] == "True"
                        for c in pod.get("status", {}).get("conditions", []))
            if pod["metadata"].get("deletionTimestamp") or not ready:
                return None
            found[(context, pod["metadata"]["labels"][SUBSET_LABEL],
                   zone_of.get(pod["spec"].get("nodeName", ""), ""),
                   int(pod["metadata"]["name"].rpartition("-")[2]),
                   pod["spec"]["containers"][0]["image"])] += 1
    return found


def placed(split: dict[str, int], image_of: dict[str, list[str]] | None = None,
           ) -> Counter[tuple[str, str, str, int, str]]:
    """Each subset's pods in its cluster and zone, ordinals 0..n-1, on ``image_of[subset]``
    (by ordinal; the old image when not given)."""
    want: Counter[tuple[str, str, str, int, str]] = Counter()
    for subset, count in split.items():
        cluster, zone = SUBSETS[subset]
        images = (image_of or {}).get(subset, [OLD] * count)
        for ordinal in range(count):
            want[(cluster, subset, zone, ordinal, images[ordinal])] += 1
    return want


def status_of(clusters: Clusters, replicas: int, updated: int) -> dict[str, Any] | None:
    """The UnitedDeployment's status once it sums ``replicas`` ready pods, ``updated`` of them
    on the current revision."""
    status = clusters.json("get", "uniteddeployment", "seed", "-n", "default").get("status", {})
    done = (status.get("replicas"), status.get("readyReplicas"),
            status.get("updatedReplicas")) == (replicas, replicas, updated)
    return status if done else None


def member_partitions(clusters: Clusters) -> dict[str, int]:
    """Subset -> the partition of its StatefulSet, as each member holds it."""
    return {s["metadata"]["labels"][SUBSET_LABEL]:
            s["spec"]["updateStrategy"]["rollingUpdate"]["partition"]
            for member in MEMBERS
            for s in clusters.json("--context", member, "get", "statefulsets", "-n",
                                   "default")["items"]}


def pods_are(clusters: Clusters,
             want: Counter[tuple[str, str, str, int, str]]) -> Callable[[], bool]:
    return lambda: pods_by_cluster(clusters) == want


def status_is(clusters: Clusters, replicas: int,
              updated: int) -> Callable[[], dict[str, Any] | None]:
    return lambda: status_of(clusters, replicas, updated)


def test_a_host_uniteddeployment_scales_three_subsets_over_two_members(
    clusters: Clusters,
) -> None:
    apply(clusters, united(6))
    for replicas, split in ((6, {"m1-zone-a": 2, "m1-zone-b": 2, "m2-zone-c": 2}),
                            (10, {"m1-zone-a": 3, "m1-zone-b": 3, "m2-zone-c": 4}),
                            (4, {"m1-zone-a": 1, "m1-zone-b": 1, "m2-zone-c": 2})):
        if replicas != 6:
            clusters.kubectl("patch", "uniteddeployment", "seed", "-n", "default",
                             "--type", "merge", "-p", json.dumps({"spec": {"replicas": replicas}}))
        wait_until(while_up(clusters.proc, pods_are(clusters, placed(split))),
                   what=f"{replicas} pods, each subset's in its cluster and zone",
                   timeout=90, interval=0.5)
        status = wait_until(while_up(clusters.proc, status_is(clusters, replicas, replicas)),
                            what=f"the host's status summing {replicas}", timeout=60,
                            interval=0.5)
        assert status["subsetReplicas"] == split
    assert clusters.json("get", "statefulsets", "-n", "default")["items"] == [], \
        "the host runs no workload of its own"
    for member in MEMBERS:
        sets = clusters.json("--context", member, "get", "statefulsets", "-n", "default")
        assert {s["metadata"]["labels"][SUBSET_LABEL] for s in sets["items"]} == {
            subset for subset, (cluster, _) in SUBSETS.items() if cluster == member}


def test_a_manual_canary_updates_only_the_unpartitioned_pods_in_whichever_cluster(
    clusters: Clusters,
) -> None:
    split = {"m1-zone-a": 1, "m1-zone-b": 1, "m2-zone-c": 2}
    apply(clusters, united(4))
    wait_until(while_up(clusters.proc, lambda: pods_by_cluster(clusters) == placed(split)),
               what="4 pods on the old image", timeout=90, interval=0.5)

    # Partitions: m1-zone-a keeps its only pod, m2-zone-c its ordinal 0; m1-zone-b none.
    apply(clusters, united(4, NEW, {"m1-zone-a": 1, "m1-zone-b": 0, "m2-zone-c": 1}))
    canary = placed(split, {"m1-zone-a": [OLD], "m1-zone-b": [NEW], "m2-zone-c": [OLD, NEW]})
    wait_until(while_up(clusters.proc, lambda: pods_by_cluster(clusters) == canary),
               what="the new image on m1-zone-b's pod and m2-zone-c's ordinal 1 only",
               timeout=90, interval=0.5)
    wait_until(while_up(clusters.proc, lambda: status_of(clusters, 4, 2)),
               what="the host's status counting 2 of 4 updated", timeout=60, interval=0.5)
    assert member_partitions(clusters) == {"m1-zone-a": 1, "m1-zone-b": 0, "m2-zone-c": 1}

    apply(clusters, united(4, NEW))
    released = placed(split, {"m1-zone-a": [NEW], "m1-zone-b": [NEW],
                              "m2-zone-c": [NEW, NEW]})
    wait_until(while_up(clusters.proc, lambda: pods_by_cluster(clusters) == released),
               what="every pod on the new image once the partitions are 0", timeout=90,
               interval=0.5)
    wait_until(while_up(clusters.proc, lambda: status_of(clusters, 4, 4)),
               what="the host's status counting 4 of 4 updated", timeout=60, interval=0.5)


def test_the_hosts_webhook_refuses_a_subset_without_a_target_cluster(clusters: Clusters) -> None:
    ud = united(2)
    ud["metadata"]["name"] = "in-the-host"
    del ud["spec"]["topology"]["subsets"][1]["targetCluster"]
    done = subprocess.run([KUBECTL, "--kubeconfig", str(clusters.kubeconfig), "apply", "-f", "-"],
                          input=yaml.safe_dump(ud), capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode != 0
    assert "spec.topology.subsets[1].targetCluster" in done.stderr, done.stderr
    assert "control plane" in done.stderr, done.stderr
