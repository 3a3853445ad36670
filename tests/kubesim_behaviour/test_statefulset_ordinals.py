"""StatefulSets create, remove and update pods by ordinal."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kubesim.interface import PODS
from tests.fixtures.cluster import SimCluster, is_ready, is_terminating
from tests.kubesim_behaviour.workloads import statefulset


class PodEvents:
    """Records (type, name, terminating) for pod watch events in the order the API sent them."""

    def __init__(self, cluster: SimCluster) -> None:
        self.events: list[tuple[str, str, bool]] = []
        self._cluster = cluster
        self._stop = threading.Event()

    async def _follow(self) -> None:
        stream = self._cluster.sim.cluster.watch(PODS, namespace="default")
        async for event in stream:
            meta = event.object.get("metadata") or {}
            self.events.append(
                (event.type, meta.get("name", ""), bool(meta.get("deletionTimestamp")))
            )

    def start(self) -> None:
        import asyncio

        self._task = asyncio.run_coroutine_threadsafe(self._follow(), self._cluster.sim.loop)

    def stop(self) -> None:
        self._task.cancel()

    def first(self, predicate: Callable[[str, bool], bool]) -> list[str]:
        seen: list[str] = []
        for kind, name, terminating in self.events:
            if predicate(kind, terminating) and name not in seen:
                seen.append(name)
        return seen


@pytest.fixture
def pod_events(cluster: SimCluster) -> Iterator[PodEvents]:
    events = PodEvents(cluster)
    events.start()
    yield events
    events.stop()


def create(cluster: SimCluster, body: dict[str, Any]) -> None:
    created = cluster.apps.create_namespaced_stateful_set("default", body)
    assert created.status.replicas == 0, "served defaulted, as the typed model requires"


def live(cluster: SimCluster, app: str) -> list[str]:
    return sorted(
        p["metadata"]["name"] for p in cluster.pods(selector=f"app={app}") if not is_terminating(p)
    )


def test_ordered_ready_creates_ordinals_in_order_and_removes_from_the_highest(
    cluster: SimCluster, pod_events: PodEvents
) -> None:
    create(cluster, statefulset("db", 3))
    cluster.wait_for(
        lambda: sum(is_ready(p) for p in cluster.pods(selector="app=db")) == 3, what="3 ready"
    )
    assert pod_events.first(lambda kind, _t: kind == "ADDED") == ["db-0", "db-1", "db-2"]
    pods = cluster.pods(selector="app=db")
    for pod in pods:
        labels = pod["metadata"]["labels"]
        assert labels["statefulset.kubernetes.io/pod-name"] == pod["metadata"]["name"]
        assert labels["controller-revision-hash"].startswith("db-")
    cluster.apps.patch_namespaced_stateful_set_scale("db", "default", {"spec": {"replicas": 1}})
    cluster.wait_for(
        lambda: (
            cluster.pods(selector="app=db")
            and live(cluster, "db") == ["db-0"]
            and len(cluster.pods(selector="app=db")) == 1
        ),
        what="only db-0 left",
    )
    removed = pod_events.first(lambda kind, terminating: kind == "DELETED" or terminating)
    assert removed == ["db-2", "db-1"]
    status = cluster.wait_for(
        lambda: (
            (s := cluster.apps.read_namespaced_stateful_set("db", "default").status)
            and s.replicas == 1
            and s.ready_replicas == 1
            and s
        ),
        what="status",
    )
    assert status.current_revision == status.update_revision


def test_a_not_ready_pod_holds_back_the_next_ordinal(cluster: SimCluster) -> None:
    create(cluster, statefulset("slow", 1))
    cluster.wait_for(
        lambda: any(is_ready(p) for p in cluster.pods(selector="app=slow")), what="ready"
    )
    cluster.set_pod_ready("default", "slow-0", False)
    cluster.wait_for(
        lambda: not any(is_ready(p) for p in cluster.pods(selector="app=slow")),
        what="slow-0 not ready",
    )
    cluster.apps.patch_namespaced_stateful_set_scale("slow", "default", {"spec": {"replicas": 3}})
    with pytest.raises(pytest.fail.Exception):
        cluster.wait_for(lambda: "slow-1" in live(cluster, "slow"), timeout=0.5, what="slow-1")
    cluster.set_pod_ready("default", "slow-0", True)
    cluster.wait_for(lambda: live(cluster, "slow") == ["slow-0", "slow-1", "slow-2"], what="3 pods")


def test_parallel_pods_all_start_at_once(cluster: SimCluster) -> None:
    body = statefulset("par", 4, podManagementPolicy="Parallel")
    body["spec"]["template"]["metadata"]["annotations"] = {"kubesim.spreadbus.io/ready": "false"}
    create(cluster, body)
    cluster.wait_for(
        lambda: live(cluster, "par") == ["par-0", "par-1", "par-2", "par-3"],
        what="4 pods without any being ready",
    )


def test_a_rolling_update_with_partition_only_replaces_ordinals_at_or_above_it(
    cluster: SimCluster,
) -> None:
    body = statefulset(
        "part", 4, updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}
    )
    create(cluster, body)
    cluster.wait_for(
        lambda: sum(is_ready(p) for p in cluster.pods(selector="app=part")) == 4, what="4 ready"
    )
    before = {
        p["metadata"]["name"]: p["metadata"]["labels"]["controller-revision-hash"]
        for p in cluster.pods(selector="app=part")
    }
    cluster.apps.patch_namespaced_stateful_set(
        "part",
        "default",
        {
            "spec": {
                "template": {
                    "spec": {"containers": [{"name": "app", "image": "registry.example/part:2"}]}
                }
            }
        },
    )

    def revisions() -> dict[str, str] | None:
        pods = [
            p for p in cluster.pods(selector="app=part") if not is_terminating(p) and is_ready(p)
        ]
        if len(pods) != 4:
            return None
        current = {
            p["metadata"]["name"]: p["metadata"]["labels"]["controller-revision-hash"] for p in pods
        }
        return (
            current
            if current["part-2"] != before["part-2"] and current["part-3"] != before["part-3"]
            else None
        )

    after = cluster.wait_for(revisions, what="ordinals 2 and 3 updated")
    assert after["part-0"] == before["part-0"]
    assert after["part-1"] == before["part-1"]
    status = cluster.apps.read_namespaced_stateful_set("part", "default").status
    assert status.update_revision == after["part-3"]
    assert status.current_revision == before["part-0"]
