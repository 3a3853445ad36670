"""Watch through the official client: resume, bookmarks, 410 and relist, selectors, timeouts."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest
from kubernetes import client, watch
from kubernetes.client import ApiException

from kubesim import KubeSim, KubeSimThread
from kubesim.interface import GVR, NAMESPACES
from tests.kubesim.conftest import pod

CM = GVR("", "v1", "configmaps")


def _cm(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "data": {"v": "0"}}


def _collect(core: client.CoreV1Api, rv: str, count: int, **kw: Any) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    w = watch.Watch()
    for ev in w.stream(
        core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=5, **kw
    ):
        obj = ev["object"]
        out.append((ev["type"], obj.metadata.name, obj.metadata.resource_version))
        if len(out) == count:
            w.stop()
    return out


def test_watch_resumes_after_a_disconnect_without_missing_or_repeating(
    core: client.CoreV1Api,
) -> None:
    start_rv = core.list_namespaced_config_map("default").metadata.resource_version
    for i in range(3):
        core.create_namespaced_config_map("default", _cm(f"c{i}"))
    first = _collect(core, start_rv, 3)
    assert [(t, n) for t, n, _ in first] == [("ADDED", "c0"), ("ADDED", "c1"), ("ADDED", "c2")]

    core.patch_namespaced_config_map("c0", "default", {"data": {"v": "1"}})
    core.delete_namespaced_config_map("c1", "default")
    core.create_namespaced_config_map("default", _cm("c3"))
    resumed = _collect(core, first[-1][2], 3)
    assert [(t, n) for t, n, _ in resumed] == [
        ("MODIFIED", "c0"),
        ("DELETED", "c1"),
        ("ADDED", "c3"),
    ]
    versions = [int(rv) for _, _, rv in first + resumed]
    assert versions == sorted(versions)
    assert len(set(versions)) == len(versions)


def test_watch_without_version_starts_with_current_objects_as_added(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", _cm("existing"))
    events = []
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_config_map, "default", timeout_seconds=2):
        events.append((ev["type"], ev["object"].metadata.name))
        w.stop()
    assert events == [("ADDED", "existing")]


def test_bookmarks_arrive_periodically_with_the_current_version(
    kubesim_factory: Callable[..., KubeSimThread],
) -> None:
    sim = kubesim_factory(bookmark_interval=0.2)
    with client.ApiClient(sim.kube_configuration()) as api:
        core = client.CoreV1Api(api)
        core.create_namespaced_config_map("default", _cm("a"))
        rv = core.list_namespaced_config_map("default").metadata.resource_version
        w = watch.Watch()
        bookmarks = []
        for ev in w.stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=5,
        ):
            if ev["type"] == "BOOKMARK":
                bookmarks.append(ev["raw_object"]["metadata"]["resourceVersion"])
                if len(bookmarks) == 2:
                    w.stop()
        assert bookmarks == [rv, rv]
        assert w.resource_version == rv


def test_a_compacted_version_gets_410_and_a_relist_recovers(
    kubesim_factory: Callable[..., KubeSimThread],
) -> None:
    sim = kubesim_factory(watch_history=5)
    with client.ApiClient(sim.kube_configuration()) as api:
        core = client.CoreV1Api(api)
        old_rv = core.list_namespaced_config_map("default").metadata.resource_version
        for i in range(10):
            core.create_namespaced_config_map("default", _cm(f"c{i}"))
        with pytest.raises(ApiException) as info:
            for _ in watch.Watch().stream(
                core.list_namespaced_config_map,
                "default",
                resource_version=old_rv,
                timeout_seconds=5,
            ):
                pass
        assert info.value.status == 410

        listed = core.list_namespaced_config_map("default")
        assert len(listed.items) == 10
        core.create_namespaced_config_map("default", _cm("after"))
        events = _collect(core, listed.metadata.resource_version, 1)
        assert [(t, n) for t, n, _ in events] == [("ADDED", "after")]


def test_label_selector_watch_turns_label_changes_into_added_and_deleted(
    core: client.CoreV1Api,
) -> None:
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", _cm("x", tier="back"))
    core.patch_namespaced_config_map("x", "default", {"metadata": {"labels": {"tier": "front"}}})
    core.patch_namespaced_config_map("x", "default", {"data": {"v": "2"}})
    core.patch_namespaced_config_map("x", "default", {"metadata": {"labels": {"tier": "back"}}})
    events = _collect(core, rv, 3, label_selector="tier in (front)")
    assert [(t, n) for t, n, _ in events] == [("ADDED", "x"), ("MODIFIED", "x"), ("DELETED", "x")]


def test_watch_timeout_ends_the_stream(core: client.CoreV1Api) -> None:
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    events = list(
        watch.Watch().stream(
            core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1
        )
    )
    assert events == []


def test_field_selector_filters_lists_and_watches(core: client.CoreV1Api) -> None:
    rv = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", pod("on-n1", node="n1"))
    core.create_namespaced_pod("default", pod("on-n2", node="n2"))
    core.create_namespaced_pod("default", pod("nowhere"))
    names = [
        p.metadata.name
        for p in core.list_namespaced_pod("default", field_selector="spec.nodeName=n1").items
    ]
    assert names == ["on-n1"]
    unbound = core.list_namespaced_pod(
        "default", field_selector="spec.nodeName=,status.phase=Pending"
    ).items
    assert [p.metadata.name for p in unbound] == ["nowhere"]
    not_n1 = core.list_pod_for_all_namespaces(
        field_selector="spec.nodeName!=n1,metadata.namespace=default"
    ).items
    assert sorted(p.metadata.name for p in not_n1) == ["nowhere", "on-n2"]
    w = watch.Watch()
    seen = []
    for ev in w.stream(
        core.list_namespaced_pod,
        "default",
        resource_version=rv,
        field_selector="spec.nodeName=n2",
        timeout_seconds=5,
    ):
        seen.append(ev["object"].metadata.name)
        w.stop()
    assert seen == ["on-n2"]


def test_unsupported_field_selector_is_400(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as info:
        core.list_namespaced_pod("default", field_selector="spec.hostname=x")
    assert info.value.status == 400
    assert "field label not supported: spec.hostname" in info.value.body


def test_invalid_label_selector_is_400(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as info:
        core.list_namespaced_pod("default", label_selector="app in (a")
    assert info.value.status == 400


def test_list_pages_with_limit_and_continue(core: client.CoreV1Api) -> None:
    for i in range(5):
        core.create_namespaced_config_map("default", _cm(f"p{i}"))
    page = core.list_namespaced_config_map("default", limit=2)
    names = [c.metadata.name for c in page.items]
    assert page.metadata.remaining_item_count == 3
    while page.metadata._continue:
        core.create_namespaced_config_map("default", _cm(f"z-late-{len(names)}"))
        page = core.list_namespaced_config_map(
            "default", limit=2, _continue=page.metadata._continue
        )
        names += [c.metadata.name for c in page.items]
    assert names == ["p0", "p1", "p2", "p3", "p4"]


async def test_a_watcher_that_falls_too_far_behind_is_closed_without_blocking_writers() -> None:
    sim = KubeSim(tls=False, max_watch_queue=5)
    await sim.start()
    try:
        api = sim.api
        rt = api.rt_for(CM)
        slow = api.open_watch(
            rt, "default", api.list_options(rt, None, None, resource_version=str(api.store.rv))
        )
        for i in range(20):
            await sim.cluster.create(CM, _cm(f"c{i}"), namespace="default")
        assert slow.closed
        assert slow.overflowed
        assert slow not in api.store.watchers.get(rt.storage_key, set()) or slow.closed
        items, _ = await sim.cluster.list(CM, namespace="default")
        assert len(items) == 20
    finally:
        await sim.stop()


def test_list_at_an_exact_resource_version_shows_the_past(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", _cm("old"))
    then = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", _cm("new"))
    core.delete_namespaced_config_map("old", "default")
    past = core.list_namespaced_config_map(
        "default", resource_version=then, resource_version_match="Exact"
    )
    assert [c.metadata.name for c in past.items] == ["old"]
    assert past.metadata.resource_version == then
    now = core.list_namespaced_config_map(
        "default", resource_version=then, resource_version_match="NotOlderThan"
    )
    assert [c.metadata.name for c in now.items] == ["new"]
    with pytest.raises(ApiException) as info:
        core.list_namespaced_config_map(
            "default", resource_version="999999", resource_version_match="NotOlderThan"
        )
    assert info.value.status == 504


def test_a_watcher_that_never_reads_does_not_stall_writers_over_http(
    kubesim_factory: Callable[..., KubeSimThread],
) -> None:
    import socket
    import ssl

    sim = kubesim_factory(max_watch_queue=20)
    ctx = ssl.create_default_context(cafile=sim.ca_file)
    host, port = sim.url.removeprefix("https://").rsplit(":", 1)
    raw = ctx.wrap_socket(socket.create_connection((host, int(port))), server_hostname=host)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.sendall(
        f"GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nHost: {host}\r\n"
        f"Authorization: Bearer {sim.token}\r\n\r\n".encode()
    )
    try:
        with client.ApiClient(sim.kube_configuration()) as api:
            core = client.CoreV1Api(api)
            big = "x" * 65536
            for i in range(100):
                core.create_namespaced_config_map(
                    "default", {"metadata": {"name": f"c{i}"}, "data": {"v": big}}
                )
            assert len(core.list_namespaced_config_map("default").items) == 100
        # The stalled watch is cut off once its bounded queue overflows.
        stalled = list(sim.api.store.watchers.get(("", "configmaps"), ()))
        assert len(stalled) == 1
        assert stalled[0].overflowed
        assert len(stalled[0].queue) <= 20
    finally:
        raw.close()


def _read_chunk(stream: Any) -> bytes:
    """One chunk of a chunked HTTP body, read from the raw socket file."""
    size = int(stream.readline().split(b";")[0], 16)
    data = stream.read(size)
    assert stream.read(2) == b"\r\n"
    return bytes(data)


def test_events_queued_together_reach_a_watcher_in_order_as_one_chunk(
    kubesim_factory: Callable[..., KubeSimThread],
) -> None:
    sim = kubesim_factory(tls=False)
    sim.call(sim.cluster.create(NAMESPACES, {"metadata": {"name": "burst"}}))
    url = urlsplit(sim.url)
    with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
        stream = sock.makefile("rb")
        sock.sendall(
            b"GET /api/v1/namespaces/burst/configmaps?watch=true HTTP/1.1\r\nHost: kubesim\r\n"
            + f"Authorization: Bearer {sim.token}\r\n\r\n".encode()
        )
        while stream.readline() not in (b"\r\n", b""):
            pass  # the headers: the watch is open once they are sent

        async def burst() -> None:
            # no await in between suspends: all five are queued before the watch runs again
            for i in range(5):
                await sim.cluster.create(CM, _cm(f"b{i}"), namespace="burst")

        sim.call(burst())
        lines = _read_chunk(stream).splitlines()
    events = [json.loads(line) for line in lines]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", f"b{i}") for i in range(5)
    ]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions)
