"""State persisted across restarts, server-side Table printing, and initial-events watches."""

from __future__ import annotations

import json
from pathlib import Path

import urllib3
from kubernetes import client, watch
from kubernetes.dynamic import DynamicClient

from kubesim import KubeSim
from kubesim.interface import GVR, PODS
from tests.kubesim.conftest import pod

CM = GVR("", "v1", "configmaps")


async def test_state_file_keeps_objects_and_crds_across_restarts(tmp_path: Path) -> None:
    from tests.kubesim.test_custom_resources import WIDGET_CRD, widget

    state = tmp_path / "state.json"
    crd_gvr = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    widgets = GVR("example.com", "v1", "widgets")
    first = KubeSim(tls=False, state_file=state)
    await first.start()
    try:
        await first.cluster.create(crd_gvr, WIDGET_CRD)
        await first.cluster.create(widgets, widget("w1", 4), namespace="default")
        made = await first.cluster.create(CM, {"metadata": {"name": "kept"}}, namespace="default")
        _, rv_before = await first.cluster.list(CM)
    finally:
        await first.stop()

    second = KubeSim(tls=False, state_file=state)
    await second.start()
    try:
        kept = await second.cluster.get(CM, "kept", namespace="default")
        assert kept["metadata"]["uid"] == made["metadata"]["uid"]
        assert (await second.cluster.get(widgets, "w1", namespace="default"))["spec"]["size"] == 4
        again = await second.cluster.create(CM, {"metadata": {"name": "new"}}, namespace="default")
        assert int(again["metadata"]["resourceVersion"]) > int(rv_before)
    finally:
        await second.stop()


def _get_table(api: client.ApiClient, path: str, include: str = "") -> dict:
    cfg = api.configuration
    http = urllib3.PoolManager(ca_certs=cfg.ssl_ca_cert)
    auth = cfg.api_key_prefix["authorization"] + " " + cfg.api_key["authorization"]
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    query = f"?includeObject={include}" if include else ""
    resp = http.request(
        "GET", cfg.host + path + query, headers={"Accept": accept, "Authorization": auth}
    )
    assert resp.status == 200
    return json.loads(resp.data)


def test_table_responses_carry_columns_rows_and_partial_metadata(
    kube_api_client: client.ApiClient, core: client.CoreV1Api
) -> None:
    core.create_namespaced_pod("default", pod("p", node="n1"))
    table = _get_table(kube_api_client, "/api/v1/namespaces/default/pods")
    assert table["kind"] == "Table"
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names[:5] == ["Name", "Ready", "Status", "Restarts", "Age"]
    row = table["rows"][0]
    assert row["cells"][:3] == ["p", "0/1", "Pending"]
    assert row["cells"][6] == "n1"
    assert row["object"]["kind"] == "PartialObjectMetadata"
    full = _get_table(kube_api_client, "/api/v1/namespaces/default/pods/p", include="Object")
    assert full["rows"][0]["object"]["spec"]["nodeName"] == "n1"


def test_send_initial_events_ends_with_a_marked_bookmark(
    kube_api_client: client.ApiClient, core: client.CoreV1Api
) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "b"}})
    events = []
    w = watch.Watch()
    for ev in w.stream(
        core.list_namespaced_config_map,
        "default",
        send_initial_events=True,
        resource_version_match="NotOlderThan",
        allow_watch_bookmarks=True,
        timeout_seconds=5,
    ):
        events.append(ev)
        if ev["type"] == "BOOKMARK":
            w.stop()
    assert [(e["type"], e["object"].metadata.name) for e in events[:2]] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
    ]
    marker = events[2]["raw_object"]["metadata"]["annotations"]
    assert marker == {"k8s.io/initial-events-end": "true"}


def test_dynamic_client_watch_and_delete_collection(
    kube_api_client: client.ApiClient, core: client.CoreV1Api
) -> None:
    dyn = DynamicClient(kube_api_client)
    pods = dyn.resources.get(api_version="v1", kind="Pod")
    rv = pods.get(namespace="default").metadata.resourceVersion
    core.create_namespaced_pod("default", pod("a", labels={"batch": "1"}))
    core.create_namespaced_pod("default", pod("b", labels={"batch": "1"}))
    core.create_namespaced_pod("default", pod("c"))
    seen = []
    for ev in pods.watch(namespace="default", resource_version=rv, timeout=5):
        seen.append(ev["object"].metadata.name)
        if len(seen) == 3:
            break
    assert seen == ["a", "b", "c"]
    core.delete_collection_namespaced_pod("default", label_selector="batch=1")
    assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["c"]


async def test_list_through_the_cluster_applies_selectors() -> None:
    sim = KubeSim(tls=False)
    await sim.start()
    try:
        await sim.cluster.create(PODS, pod("a", labels={"tier": "web"}), namespace="default")
        await sim.cluster.create(
            PODS, pod("b", labels={"tier": "db"}, node="n1"), namespace="default"
        )
        web, _ = await sim.cluster.list(PODS, label_selector="tier notin (db)")
        bound, _ = await sim.cluster.list(PODS, field_selector="spec.nodeName=n1")
        assert [p["metadata"]["name"] for p in web] == ["a"]
        assert [p["metadata"]["name"] for p in bound] == ["b"]
    finally:
        await sim.stop()


def test_events_and_secrets_print_the_columns_kubectl_users_expect(
    kube_api_client: client.ApiClient, core: client.CoreV1Api
) -> None:
    core.create_namespaced_secret(
        "default", {"metadata": {"name": "s"}, "type": "Opaque", "data": {"a": "Yg=="}}
    )
    core.create_namespaced_event(
        "default",
        {
            "metadata": {"name": "e"},
            "type": "Warning",
            "reason": "FailedScheduling",
            "message": "0/3 nodes",
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        },
    )
    secrets = _get_table(kube_api_client, "/api/v1/namespaces/default/secrets")
    assert [c["name"] for c in secrets["columnDefinitions"]] == ["Name", "Type", "Data", "Age"]
    assert secrets["rows"][0]["cells"][:3] == ["s", "Opaque", 1]
    events = _get_table(kube_api_client, "/api/v1/namespaces/default/events")
    assert events["rows"][0]["cells"][1:] == ["Warning", "FailedScheduling", "pod/p", "0/3 nodes"]
