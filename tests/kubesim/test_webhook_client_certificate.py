"""kubesim presents its client certificate to admission webhooks, and to conversion webhooks not.

kube-apiserver authenticates to admission webhooks with the client certificate its
AdmissionConfiguration's kubeconfig names, and to conversion webhooks with nothing; kubesim's
``--webhook-client-cert`` does the same, and ``--webhook-client-cert-for-conversions`` presents
it to conversion webhooks too. The webhook here asks for a certificate without requiring one
and records the subject each call presented.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from kubernetes import client

from kubesim import KubeSimThread
from kubesim.webhook_client import ClientCertificate
from tlsserving import CertKeyPair, issue_client_cert, issue_server_cert, make_ca

GROUP = "example.com"
IDENTITY = "kube-apiserver-webhook-client"


@dataclass
class Recorder:
    port: int
    ca: CertKeyPair
    presented: dict[str, list[str]] = field(default_factory=dict)
    """The subject common names each path was called with ("" for no certificate)."""

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca.cert_pem).decode()


def common_name(peer: dict[str, Any] | None) -> str:
    for rdn in (peer or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return ""


@pytest.fixture
async def recorder(tmp_path: Path) -> AsyncIterator[Recorder]:
    ca = make_ca("hook CA")
    served = issue_server_cert(ca, ["127.0.0.1"]).write(tmp_path, "hook")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(served.cert, served.key)
    context.load_verify_locations(cadata=ca.cert_pem.decode())
    context.verify_mode = ssl.CERT_OPTIONAL
    hook = Recorder(0, ca)

    async def admit(request: web.Request) -> web.Response:
        review = await request.json()
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        hook.presented.setdefault(request.path, []).append(common_name(peer))
        if review["kind"] == "ConversionReview":
            objects = [{**o, "apiVersion": review["request"]["desiredAPIVersion"]}
                       for o in review["request"]["objects"]]
            response: dict[str, Any] = {"uid": review["request"]["uid"],
                                        "convertedObjects": objects,
                                        "result": {"status": "Success"}}
        else:
            response = {"uid": review["request"]["uid"], "allowed": True}
        return web.json_response({"apiVersion": review["apiVersion"], "kind": review["kind"],
                                  "response": response})

    app = web.Application()
    app.router.add_post("/{tail:.*}", admit)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    hook.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield hook
    finally:
        await runner.cleanup()


def crd(hook: Recorder) -> dict[str, Any]:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{GROUP}"},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget",
                      "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema},
                         {"name": "v2", "served": True, "storage": False, "schema": schema}],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"url": hook.url("/convert"), "caBundle": hook.ca_bundle}}},
        },
    }


def pod_webhook(hook: Recorder) -> dict[str, Any]:
    return {"metadata": {"name": "pods"}, "webhooks": [{
        "name": "pods.example.com",
        "clientConfig": {"url": hook.url("/pods"), "caBundle": hook.ca_bundle},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["pods"]}],
        "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"],
    }]}


def exercise(sim: KubeSimThread, hook: Recorder) -> None:
    """One pod CREATE through the admission webhook, one v2 Widget converted for storage."""
    with client.ApiClient(sim.kube_configuration()) as api:
        client.AdmissionregistrationV1Api(api).create_mutating_webhook_configuration(
            pod_webhook(hook))
        client.CoreV1Api(api).create_namespaced_pod("default", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "app", "image": "nginx:1"}]}})
        client.ApiextensionsV1Api(api).create_custom_resource_definition(crd(hook))
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            GROUP, "v2", "default", "widgets",
            {"apiVersion": f"{GROUP}/v2", "kind": "Widget", "metadata": {"name": "w"}})


async def test_admission_calls_present_the_certificate_and_conversion_calls_none(
    recorder: Recorder, tmp_path: Path, kubesim_factory: Callable[..., KubeSimThread],
) -> None:
    paths = issue_client_cert(recorder.ca, IDENTITY).write(tmp_path, "apiserver")
    sim = kubesim_factory(webhook_client_certificate=ClientCertificate(paths.cert, paths.key))
    await asyncio.to_thread(exercise, sim, recorder)
    assert set(recorder.presented["/pods"]) == {IDENTITY}
    assert recorder.presented["/convert"]
    assert set(recorder.presented["/convert"]) == {""}


async def test_for_conversions_too_both_calls_present_the_certificate(
    recorder: Recorder, tmp_path: Path, kubesim_factory: Callable[..., KubeSimThread],
) -> None:
    paths = issue_client_cert(recorder.ca, IDENTITY).write(tmp_path, "apiserver")
    sim = kubesim_factory(webhook_client_certificate=ClientCertificate(paths.cert, paths.key),
                          webhook_client_certificate_for_conversions=True)
    await asyncio.to_thread(exercise, sim, recorder)
    assert set(recorder.presented["/pods"]) == {IDENTITY}
    assert recorder.presented["/convert"]
    assert set(recorder.presented["/convert"]) == {IDENTITY}


async def test_without_the_flag_no_call_presents_a_certificate(
    recorder: Recorder, kubesim_factory: Callable[..., KubeSimThread],
) -> None:
    await asyncio.to_thread(exercise, kubesim_factory(), recorder)
    assert set(recorder.presented["/pods"]) == {""}


def test_the_flags_go_together_and_must_load(tmp_path: Path) -> None:
    paths = issue_client_cert(make_ca("x"), IDENTITY).write(tmp_path, "client")
    other = issue_client_cert(make_ca("y"), IDENTITY).write(tmp_path, "other")
    for args, said in (
        ([f"--webhook-client-cert={paths.cert}"], "go together"),
        ([f"--webhook-client-cert={paths.cert}", f"--webhook-client-key={other.key}"],
         "cannot load"),
        (["--webhook-client-cert-for-conversions"], "needs --webhook-client-cert"),
    ):
        done = subprocess.run([sys.executable, "-m", "kubesim", "--port=0", *args],
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 2, done.stderr
        assert said in done.stderr
