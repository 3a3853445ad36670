"""A feature brings its own custom resource, its status history and its part of the audit log
through its declaration alone: nothing shared names it.

The tests' plugin (:mod:`tests.fixtures.generation_feature`) declares a ``GenerationStamp``
resource. With it loaded, the watcher lists it, records its status transitions in ``HISTORY``
(real kubesim, real nats-server), the audit folds them with the plugin's columns and rows, and
``why`` tells its story; the built-in features' audit knows nothing of it. ``spreadbus audit
replay`` and ``spreadbus why`` take the plugin by ``--feature-plugins``, as the services do.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any, cast

import nats
import pytest
from kubernetes import client

from events.codec import encode
from events.messages import PodLifecycle, StatusChange
from kubesim import KubeSimThread
from services.watcher.service import prepare_watches
from services.watcher.settings import WatcherSettings
from spreadbus.audit.registered import registered_schema
from spreadbus.audit.replay import replay
from spreadbus.audit.schema import AuditSchema
from spreadbus.audit.store import STREAM, AuditStore
from spreadbus.audit.why import pod_story, render_counts, render_pod, subset_counts_at
from spreadbus.cli import main
from spreadbus.features.registry import features
from spreadbus.runtime.kube_client import KubeClient, kube_api_client
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.settings import load_settings
from spreadbus.runtime.stream_setup import ensure_streams
from tests.audit.bus_history import publish_all
from tests.fixtures.generation_feature import (
    GROUP,
    KIND,
    PLUGIN,
    RESOURCE,
    STAMP_ANNOTATION,
    STAMPS_CRD,
)
from tests.fixtures.polling import wait_until, wait_until_async

ROOT = Path(__file__).resolve().parents[2]
RESOURCE_SPEC = f"{GROUP}/v1/{RESOURCE}"


def _settings() -> WatcherSettings:
    loaded = load_settings(WatcherSettings, env={
        "SPREADBUS_FEATURE_PLUGINS": PLUGIN, "SPREADBUS_CLUSTER": "c1",
        "SPREADBUS_RESOURCES": RESOURCE_SPEC, "SPREADBUS_MODIFIED_HOLD_SECONDS": "0"})
    assert isinstance(loaded, WatcherSettings), loaded
    return loaded


def test_the_watcher_takes_the_plugins_resource_kind_and_status_history() -> None:
    settings = _settings()
    assert settings.kinds()[RESOURCE] == KIND
    assert (GROUP, RESOURCE) in settings.status_history()
    without = load_settings(WatcherSettings, env={})
    assert isinstance(without, WatcherSettings)
    assert RESOURCE not in without.kinds()
    assert (GROUP, RESOURCE) not in without.status_history()


def test_no_shared_module_names_the_plugin() -> None:
    shared = [*(ROOT / "services").rglob("*.py"), *(ROOT / "spreadbus").rglob("*.py")]
    naming = [str(p.relative_to(ROOT)) for p in shared
              if RESOURCE in p.read_text() or KIND in p.read_text()]
    assert naming == []
    assert "generationstamp" not in registered_schema().governing


def test_a_pods_stamp_gets_the_plugins_column_and_line(tmp_path: Path) -> None:
    schema = AuditSchema.of(features([PLUGIN]))
    assert "generation_stamp" not in registered_schema().tables["pods"]["columns"]
    store = AuditStore(tmp_path / "audit.db", schema)
    created = PodLifecycle(cluster="c1", namespace="ns", name="web-1", uid="u1",
                           point="created", annotations={STAMP_ANNOTATION: "stamp-a"}, ts=1.0)
    store.apply([(1, "history.x", encode(created))])
    store.close()
    conn = sqlite3.connect(tmp_path / "audit.db")
    story = pod_story(conn, "ns", "web-1", schema=schema)
    assert story is not None
    assert story["pod"]["generation_stamp"] == "stamp-a"
    assert render_pod(story, schema).splitlines()[1] == (
        f"  stamped by    {KIND} ns/stamp-a")
    # The built-in features' schema has no line for it.
    assert "stamped by" not in render_pod(story, registered_schema())


async def test_the_plugins_status_changes_reach_the_history_and_why(
    kubesim: KubeSimThread, tmp_path: Path
) -> None:
    api = kube_api_client(str(kubesim.write_kubeconfig(tmp_path / "kubeconfig")))
    crds = client.ApiextensionsV1Api(api)
    crds.create_custom_resource_definition(cast(Any, STAMPS_CRD))

    def established() -> bool:
        status = crds.read_custom_resource_definition(f"{RESOURCE}.{GROUP}").status
        return any(c.type == "Established" and c.status == "True"
                   for c in (status.conditions if status else None) or ())
    wait_until(established, what="the CRD established")
    stamps = client.CustomObjectsApi(api)
    stamps.create_namespaced_custom_object(GROUP, "v1", "default", RESOURCE, {
        "apiVersion": f"{GROUP}/v1", "kind": KIND, "metadata": {"name": "s1"},
        "status": {"seen": {"web": 2}}})
    settings = _settings()
    schema = AuditSchema.of(settings.features())
    with NatsServer(store_dir=tmp_path / "nats") as server:
        nc = await nats.connect(server.url)
        try:
            await ensure_streams(nc.jetstream())
            watches = await prepare_watches(nc, settings, KubeClient(api))
            stopping = asyncio.Event()
            tasks = [asyncio.create_task(w.run(stopping)) for w in watches]
            try:
                async def recorded() -> bool:
                    info = await nc.jetstream().stream_info(STREAM)
                    return info.state.messages >= 1
                await wait_until_async(recorded, what="the stamp's status in HISTORY")
            finally:
                stopping.set()
                await asyncio.gather(*tasks, return_exceptions=True)
            store = AuditStore(tmp_path / "audit.db", schema)
            try:
                await replay(nc, store)
            finally:
                store.close()
        finally:
            await nc.close()
    conn = sqlite3.connect(tmp_path / "audit.db")
    told = subset_counts_at(conn, "generationstamp", "default", "s1", schema=schema)
    assert told is not None
    lines = render_counts(told).splitlines()
    assert lines[0] == "generationstamp default/s1 at now"
    assert lines[-1] == "    web          replicas 2"


def _stamp_story() -> list[object]:
    """A stamped pod's creation and a stamp's status, as the services record them."""
    return [
        PodLifecycle(cluster="c1", namespace="ns", name="web-1", uid="u1", point="created",
                     annotations={STAMP_ANNOTATION: "stamp-a"}, ts=1.0),
        StatusChange(cluster="c1", group=GROUP, version="v1", resource=RESOURCE,
                     namespace="ns", name="s1", uid="s1-uid", status={"seen": {"web": 2}},
                     ts=2.0),
    ]


async def _publish(url: str, events: list[object]) -> None:
    nc = await nats.connect(url)
    try:
        await ensure_streams(nc.jetstream())
        await publish_all(nc, events)
    finally:
        await nc.close()


def test_audit_replay_and_why_take_the_plugin_by_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "audit.db")
    with NatsServer(store_dir=tmp_path / "nats") as server:
        asyncio.run(_publish(server.url, _stamp_story()))
        assert main(["audit", "replay", "--db", db, "--quiet", "--nats-url", server.url,
                     "--data-dir", str(tmp_path / "no-stack"), "--feature-plugins", PLUGIN]) == 0
    capsys.readouterr()
    conn = sqlite3.connect(db)
    stamps = conn.execute("SELECT generation_stamp FROM pods WHERE name = 'web-1'").fetchall()
    conn.close()
    assert stamps == [("stamp-a",)]

    assert main(["why", "pod", "ns/web-1", "--db", db, "--feature-plugins", PLUGIN]) == 0
    assert f"  stamped by    {KIND} ns/stamp-a" in capsys.readouterr().out.splitlines()
    assert main(["why", "generationstamp", "ns/s1", "--db", db,
                 "--feature-plugins", PLUGIN]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "    web          replicas 2"

    # Without the plugin, its kind is none why explains, and its line is not told.
    assert main(["why", "generationstamp", "ns/s1", "--db", db]) == 2
    assert "why: KIND 'generationstamp': choose from pod, " in capsys.readouterr().err
    assert main(["why", "pod", "ns/web-1", "--db", db]) == 0
    assert "stamped by" not in capsys.readouterr().out


def test_an_unusable_plugin_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "audit.db")
    assert main(["why", "pod", "ns/web-1", "--db", db,
                 "--feature-plugins", "tests.fixtures.no_such_module:FEATURE"]) == 2
    assert "feature_plugins (from --feature-plugins): 'tests.fixtures.no_such_module:FEATURE'" \
        in capsys.readouterr().err
    assert main(["audit", "serve", "--db", db, "--feature-plugins", "nocolon"]) == 2
    assert "audit serve: --feature-plugins: 'nocolon': expected module:attribute" \
        in capsys.readouterr().err
