"""A rebalancer naming workloads in two shards' namespaces: each shard decides its entries, the
writes land one after the other (a write decided on an older status fails and is decided again),
and the status ends as one planner writes it; only the shard of cluster-scoped objects deletes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from events.shards import Shards
from spreadbus.features.workloadrebalancer.core.model import WorkloadRef, from_object
from spreadbus.features.workloadrebalancer.core.status import Placement, Sync, sync

NOW = datetime(2024, 5, 22, 11, 40, 10, tzinfo=UTC)


def namespaces_of_each_shard(count: int) -> list[str]:
    """One namespace per shard, found by the partition function."""
    found: dict[int, str] = {}
    k = 0
    while len(found) < count:
        namespace = f"team-{k}"
        for index in range(count):
            if Shards(count, index).owns(namespace):
                found.setdefault(index, namespace)
        k += 1
    return [found[i] for i in range(count)]


def rebalancer(namespaces: list[str], status: dict[str, Any] | None = None,
               ttl: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"workloads": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": ns}
        for ns in namespaces]}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    obj: dict[str, Any] = {"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
                           "metadata": {"name": "rb", "uid": "u-rb", "generation": 1,
                                        "creationTimestamp": "2024-05-22T11:36:10Z"},
                           "spec": spec}
    if status is not None:
        obj["status"] = status
    return obj


def resolve(ref: WorkloadRef) -> Placement | None:
    """Every workload is governed and already holds the request, but one that is absent."""
    if ref.name == "absent":
        return None
    return Placement(kind="WorkloadSpread", namespace=ref.namespace, name="ws", delivered=True)


def decide(obj: dict[str, Any], shards: Shards, now: datetime = NOW) -> Sync:
    return sync(from_object(obj), resolve, now, shards.owns)


def test_two_shards_write_the_status_one_planner_writes_in_either_order() -> None:
    namespaces = namespaces_of_each_shard(3)
    one = decide(rebalancer(namespaces), Shards())
    assert one.write
    assert one.status.finish_time is not None
    for order in ([0, 1, 2], [2, 0, 1], [1, 2, 0]):
        status: dict[str, Any] | None = None
        for step, index in enumerate(order):
            outcome = decide(rebalancer(namespaces, status), Shards(3, index))
            assert outcome.write
            last = step == len(order) - 1
            # Finished only once no shard's entry waits any longer.
            assert (outcome.status.finish_time is not None) == last
            status = outcome.status.to_json()
        assert status == one.status.to_json()


def test_a_write_decided_on_an_older_status_is_decided_again_on_the_newer_one() -> None:
    namespaces = namespaces_of_each_shard(2)
    first = decide(rebalancer(namespaces), Shards(2, 0))
    stale = decide(rebalancer(namespaces), Shards(2, 1))  # on the same status: it fails
    landed = first.status.to_json()
    again = decide(rebalancer(namespaces, landed), Shards(2, 1))
    assert stale.status != again.status
    assert again.status.to_json() == decide(rebalancer(namespaces), Shards()).status.to_json()
    # Nothing is left for the first shard to write.
    assert not decide(rebalancer(namespaces, again.status.to_json()), Shards(2, 0)).write


def test_an_entry_of_another_shard_is_never_decided_here() -> None:
    namespaces = namespaces_of_each_shard(2)
    mine = decide(rebalancer(namespaces), Shards(2, 0)).status.to_json()["observedWorkloads"]
    results = {entry["workload"]["namespace"]: entry.get("result") for entry in mine}
    assert results == {namespaces[0]: "Successful", namespaces[1]: None}


def test_only_the_shard_of_cluster_scoped_objects_deletes_after_the_ttl() -> None:
    namespaces = namespaces_of_each_shard(3)
    final = decide(rebalancer(namespaces, ttl=0), Shards()).status.to_json()
    later = NOW + timedelta(seconds=5)
    deleting = [index for index in range(3)
                if decide(rebalancer(namespaces, final, ttl=0), Shards(3, index), later).delete]
    assert deleting == [index for index in range(3) if Shards(3, index).owns("")]
    assert len(deleting) == 1
    assert decide(rebalancer(namespaces, final, ttl=0), Shards(), later).delete
