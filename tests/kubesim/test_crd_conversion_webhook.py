"""CRDs with a conversion webhook: kubesim stores the storage version and converts every read and
write through ConversionReview v1 over HTTPS, verified against the caBundle."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from kubernetes import client, watch
from kubernetes.client import ApiException

from kubesim import KubeSimThread
from tlsserving import issue_server_cert, make_ca

GROUP = "example.com"
WIDGETS = "widgets"


def v1_to_v2(obj: dict[str, Any]) -> dict[str, Any]:
    spec = dict(obj.get("spec") or {})
    if "size" in spec:
        spec["dimensions"] = {"size": spec.pop("size")}
    return {**obj, "apiVersion": f"{GROUP}/v2", "spec": spec}


def v2_to_v1(obj: dict[str, Any]) -> dict[str, Any]:
    spec = dict(obj.get("spec") or {})
    dimensions = spec.pop("dimensions", None) or {}
    if "size" in dimensions:
        spec["size"] = dimensions["size"]
    return {**obj, "apiVersion": f"{GROUP}/v1", "spec": spec}


@dataclass
class ConversionWebhook:
    url: str
    ca_bundle: str
    reviews: list[dict[str, Any]] = field(default_factory=list)
    fail: str = ""
    delay: float = 0.0


@pytest.fixture
async def conversion_webhook(tmp_path: Path) -> AsyncIterator[ConversionWebhook]:
    ca = make_ca("conversion test CA")
    paths = issue_server_cert(ca, ["127.0.0.1"]).write(tmp_path / "tls", "hook")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(paths.cert), str(paths.key))
    hook = ConversionWebhook("", base64.b64encode(ca.cert_pem).decode())

    async def convert(request: web.Request) -> web.Response:
        review = await request.json()
        hook.reviews.append(review)
        await asyncio.sleep(hook.delay)
        req = review["request"]
        desired = req["desiredAPIVersion"]
        if hook.fail:
            result: dict[str, Any] = {"status": "Failure", "message": hook.fail}
            return web.json_response({**review, "response": {"uid": req["uid"], "result": result}})
        step = v1_to_v2 if desired.endswith("/v2") else v2_to_v1
        converted = [step(o) if o["apiVersion"] != desired else o for o in req["objects"]]
        response = {
            "uid": req["uid"],
            "convertedObjects": converted,
            "result": {"status": "Success"},
        }
        return web.json_response({**review, "response": response})

    app = web.Application()
    app.router.add_post("/convert", convert)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    hook.url = f"https://127.0.0.1:{port}/convert"
    try:
        yield hook
    finally:
        await runner.cleanup()


def widget_crd(hook: ConversionWebhook) -> dict[str, Any]:
    def version(name: str, spec: dict[str, Any], storage: bool) -> dict[str, Any]:
        return {
            "name": name,
            "served": True,
            "storage": storage,
            "schema": {
                "openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": spec}},
                }
            },
        }

    size = {"size": {"type": "integer"}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{WIDGETS}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": WIDGETS, "singular": "widget", "kind": "Widget"},
            "versions": [
                version("v1", size, True),
                version("v2", {"dimensions": {"type": "object", "properties": size}}, False),
            ],
            "conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": {"url": hook.url, "caBundle": hook.ca_bundle},
                },
            },
        },
    }


@pytest.fixture
async def widgets(
    conversion_webhook: ConversionWebhook, kubesim_factory: Callable[..., KubeSimThread]
) -> AsyncIterator[client.CustomObjectsApi]:
    sim = await asyncio.to_thread(kubesim_factory)
    api = client.ApiClient(sim.kube_configuration())
    await asyncio.to_thread(
        client.ApiextensionsV1Api(api).create_custom_resource_definition,
        widget_crd(conversion_webhook),
    )
    try:
        yield client.CustomObjectsApi(api)
    finally:
        api.close()


def widget_v1(name: str, size: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": size},
    }


def widget_v2(name: str, size: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v2",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"dimensions": {"size": size}},
    }


async def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Client calls off the loop: the webhook answering them runs on it."""
    return await asyncio.to_thread(fn, *args, **kwargs)


async def test_a_write_in_one_version_is_stored_and_read_in_each_through_the_webhook(
    widgets: client.CustomObjectsApi, conversion_webhook: ConversionWebhook
) -> None:
    created = await call(
        widgets.create_namespaced_custom_object, GROUP, "v2", "default", WIDGETS, widget_v2("w", 3)
    )
    assert created["apiVersion"] == f"{GROUP}/v2"
    assert created["spec"] == {"dimensions": {"size": 3}}
    as_v1 = await call(widgets.get_namespaced_custom_object, GROUP, "v1", "default", WIDGETS, "w")
    assert as_v1["apiVersion"] == f"{GROUP}/v1"
    assert as_v1["spec"] == {"size": 3}, "stored in v1, the storage version"
    assert as_v1["metadata"]["uid"] == created["metadata"]["uid"]
    desired = [r["request"]["desiredAPIVersion"] for r in conversion_webhook.reviews]
    assert desired == [f"{GROUP}/v1", f"{GROUP}/v2"], "to storage on create, back for the reply"
    assert conversion_webhook.reviews[0]["apiVersion"] == "apiextensions.k8s.io/v1"
    assert conversion_webhook.reviews[0]["kind"] == "ConversionReview"


async def test_lists_patches_and_updates_in_the_other_version_convert_both_ways(
    widgets: client.CustomObjectsApi, conversion_webhook: ConversionWebhook
) -> None:
    for name, size in (("a", 1), ("b", 2)):
        await call(
            widgets.create_namespaced_custom_object,
            GROUP,
            "v1",
            "default",
            WIDGETS,
            widget_v1(name, size),
        )
    conversion_webhook.reviews.clear()
    listed = await call(widgets.list_namespaced_custom_object, GROUP, "v2", "default", WIDGETS)
    assert [(i["metadata"]["name"], i["spec"]) for i in listed["items"]] == [
        ("a", {"dimensions": {"size": 1}}),
        ("b", {"dimensions": {"size": 2}}),
    ]
    assert len(conversion_webhook.reviews) == 1, "one review for the whole list"
    assert len(conversion_webhook.reviews[0]["request"]["objects"]) == 2

    patched = await call(
        widgets.patch_namespaced_custom_object,
        GROUP,
        "v2",
        "default",
        WIDGETS,
        "a",
        {"spec": {"dimensions": {"size": 5}}},
    )
    assert patched["spec"] == {"dimensions": {"size": 5}}
    assert patched["metadata"]["generation"] == 2
    read = await call(widgets.get_namespaced_custom_object, GROUP, "v1", "default", WIDGETS, "a")
    assert read["spec"] == {"size": 5}

    current = await call(widgets.get_namespaced_custom_object, GROUP, "v2", "default", WIDGETS, "b")
    current["metadata"]["labels"] = {"tier": "x"}
    replaced = await call(
        widgets.replace_namespaced_custom_object, GROUP, "v2", "default", WIDGETS, "b", current
    )
    assert replaced["spec"] == {"dimensions": {"size": 2}}
    assert replaced["metadata"]["generation"] == 1, "same spec once converted: no new generation"
    read = await call(widgets.get_namespaced_custom_object, GROUP, "v1", "default", WIDGETS, "b")
    assert (read["spec"], read["metadata"]["labels"]) == ({"size": 2}, {"tier": "x"})


async def test_patches_racing_through_a_slow_webhook_both_land(
    widgets: client.CustomObjectsApi, conversion_webhook: ConversionWebhook
) -> None:
    # Each patch waits on the webhook between reading the object and writing it; the one that
    # writes second must be applied to what the first wrote, not to what it read before.
    await call(widgets.create_namespaced_custom_object, GROUP, "v1", "default", WIDGETS,
               widget_v1("w", 1))
    conversion_webhook.delay = 0.2

    def patch(body: dict[str, Any]) -> Any:
        return call(widgets.patch_namespaced_custom_object, GROUP, "v2", "default", WIDGETS,
                    "w", body)

    await asyncio.gather(patch({"spec": {"dimensions": {"size": 5}}}),
                         patch({"metadata": {"labels": {"tier": "x"}}}))
    conversion_webhook.delay = 0.0
    read = await call(widgets.get_namespaced_custom_object, GROUP, "v1", "default", WIDGETS, "w")
    assert (read["spec"], read["metadata"].get("labels")) == ({"size": 5}, {"tier": "x"})
    assert read["metadata"]["generation"] == 2


async def test_watch_events_arrive_converted_to_the_watched_version(
    widgets: client.CustomObjectsApi,
) -> None:
    await call(
        widgets.create_namespaced_custom_object, GROUP, "v1", "default", WIDGETS, widget_v1("w", 7)
    )

    def first_event() -> dict[str, Any]:
        stream = watch.Watch().stream(
            widgets.list_namespaced_custom_object,
            GROUP,
            "v2",
            "default",
            WIDGETS,
            resource_version="0",
            timeout_seconds=5,
        )
        for event in stream:
            return dict(event)
        raise AssertionError("no event")

    event = await asyncio.to_thread(first_event)
    assert event["type"] == "ADDED"
    assert event["object"]["apiVersion"] == f"{GROUP}/v2"
    assert event["object"]["spec"] == {"dimensions": {"size": 7}}


async def test_a_failing_conversion_is_a_500_naming_the_webhook_failure(
    widgets: client.CustomObjectsApi, conversion_webhook: ConversionWebhook
) -> None:
    await call(
        widgets.create_namespaced_custom_object, GROUP, "v1", "default", WIDGETS, widget_v1("w", 1)
    )
    conversion_webhook.fail = "widgets are not convertible today"
    with pytest.raises(ApiException) as caught:
        await call(widgets.get_namespaced_custom_object, GROUP, "v2", "default", WIDGETS, "w")
    status = json.loads(caught.value.body)
    assert caught.value.status == 500
    assert status["reason"] == "InternalError"
    assert status["message"] == (
        f"Internal error occurred: conversion webhook for {GROUP}/v1, Kind=Widget failed: "
        "widgets are not convertible today"
    )
    same = await call(widgets.get_namespaced_custom_object, GROUP, "v1", "default", WIDGETS, "w")
    assert same["spec"] == {"size": 1}, "a read in the stored version needs no conversion"


async def test_a_webhook_with_an_untrusted_certificate_is_refused(
    conversion_webhook: ConversionWebhook, kubesim_factory: Callable[..., KubeSimThread]
) -> None:
    sim = await asyncio.to_thread(kubesim_factory)
    other_ca = base64.b64encode(make_ca("someone else").cert_pem).decode()
    crd = widget_crd(conversion_webhook)
    crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] = other_ca
    with client.ApiClient(sim.kube_configuration()) as api:
        await call(client.ApiextensionsV1Api(api).create_custom_resource_definition, crd)
        objects = client.CustomObjectsApi(api)
        with pytest.raises(ApiException) as caught:
            await call(
                objects.create_namespaced_custom_object,
                GROUP,
                "v2",
                "default",
                WIDGETS,
                widget_v2("w", 1),
            )
    assert caught.value.status == 500
    assert "tls: failed to verify certificate" in json.loads(caught.value.body)["message"]
    assert conversion_webhook.reviews == []
