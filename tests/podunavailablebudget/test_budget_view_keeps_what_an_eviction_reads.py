"""The budget webhook's view folds pods from the stream and keeps what an eviction reads.

Pods arrive as the watcher publishes them; the view answers a pod with only the fields the
decision reads (and drops the rest of a realistic pod: its spec but container images, labels
and annotations the decision does not read), forgets it when it is deleted, ignores other
clusters, and still tells when pods have been listed.
"""

from __future__ import annotations

from typing import Any

from events import codec, subjects
from events.messages import Observation, SyncMarker, WatchEventType
from spreadbus.features.podunavailablebudget.admission.kept_pod import kept
from spreadbus.features.podunavailablebudget.admission.view import (
    PUB_GROUP,
    PUB_RESOURCE,
    BudgetView,
)
from tests.podunavailablebudget.builders import budget, pod


class Stream:
    def __init__(self, view: BudgetView) -> None:
        self.view = view
        self.seq = 0

    def observe(self, obj: dict[str, Any], event: WatchEventType = "ADDED", *,
                cluster: str = "c1", group: str = "", resource: str = "pods") -> None:
        self.seq += 1
        meta = obj["metadata"]
        message = Observation(cluster=cluster, group=group, version="v1", resource=resource,
                              event=event, object=obj)
        subject = subjects.observation(cluster, group, resource, meta.get("namespace", ""),
                                       meta["name"])
        self.view.apply_message(self.seq, subject, codec.encode(message))

    def listed(self, group: str, resource: str) -> None:
        self.seq += 1
        marker = SyncMarker(cluster="c1", group=group, version="v1", resource=resource,
                            complete=True)
        self.view.apply_message(self.seq, subjects.sync("c1", group, resource),
                                codec.encode(marker))


def realistic(name: str) -> dict[str, Any]:
    whole = pod(name, annotations={"prometheus.io/scrape": "true"})
    whole["spec"]["containers"][0]["env"] = [{"name": "LOG_LEVEL", "value": "info"}]
    whole["spec"]["nodeName"] = "n1"
    whole["metadata"]["labels"]["unavailable-pod.kruise.io/drain"] = "true"
    return whole


def test_a_pod_is_kept_as_what_its_eviction_reads_until_it_is_deleted() -> None:
    view = BudgetView("c1")
    stream = Stream(view)
    whole = realistic("a")
    stream.observe(whole)
    found = view.pod("web", "a")
    assert found == kept(whole)
    assert found["metadata"]["annotations"] == {"kruise.io/related-pub": "web-server-pub"}
    assert found["metadata"]["labels"] == {"unavailable-pod.kruise.io/drain": "true"}
    assert found["spec"] == {"containers": [{"name": "main", "image": "nginx:1.25"}]}
    assert view.seq == 1
    stream.observe(whole, "DELETED")
    assert view.pod("web", "a") is None
    assert view.seq == 2


def test_other_clusters_pods_are_not_kept_and_listing_is_still_told() -> None:
    view = BudgetView("c1")
    stream = Stream(view)
    stream.observe(realistic("a"), cluster="c2")
    assert view.pod("web", "a") is None
    assert not view.synced()
    stream.listed("", "pods")
    stream.listed(PUB_GROUP, PUB_RESOURCE)
    stream.observe(budget(), group=PUB_GROUP, resource=PUB_RESOURCE)
    assert view.synced()
    assert [b["metadata"]["name"] for b in view.budgets_in("web")] == ["web-server-pub"]
    assert view.seq == 4


def test_the_view_keeps_the_hosts_bindings_members_and_the_workloads_a_copy_may_be() -> None:
    view = BudgetView("c1")
    stream = Stream(view)
    deployment = {"metadata": {"name": "web", "namespace": "ns", "annotations": {
        "resourcebinding.karmada.io/name": "web-deployment"}}, "spec": {"replicas": 3}}
    stream.observe(deployment, group="apps", resource="deployments")
    binding = {"metadata": {"name": "web-deployment", "namespace": "ns"},
               "spec": {"resource": {"kind": "Deployment", "name": "web"}}}
    stream.observe(binding, group="work.karmada.io", resource="resourcebindings")
    assert view.workload("deployments", "ns", "web") == {"metadata": deployment["metadata"]}
    assert view.workload("statefulsets", "ns", "web") is None
    assert view.binding("ns", "web-deployment") == binding
    assert not view.registers("member1")
    stream.observe({"metadata": {"name": "member1"}}, group="cluster.karmada.io",
                   resource="clusters")
    assert view.registers("member1")
    assert not view.registers("member2")
    stream.observe(deployment, "DELETED", group="apps", resource="deployments")
    assert view.workload("deployments", "ns", "web") is None
