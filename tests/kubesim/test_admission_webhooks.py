"""Admission webhooks over real HTTPS: mutation, denial, failure policies, matching, dry run."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from kubernetes import client
from kubernetes.client import ApiException

from kubesim import KubeSimThread
from kubesim.interface import PODS
from tests.fixtures.apiserver_metrics import fail_open_counts
from tests.kubesim.conftest import pod
from tlsserving import CertKeyPair, issue_server_cert, make_ca

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class WebhookServer:
    """A real HTTPS admission webhook on kubesim's loop; each path answers with a handler."""

    def __init__(self, sim: KubeSimThread, ca: CertKeyPair, cert_dir: Path) -> None:
        self.sim = sim
        self.ca = ca
        self.requests: list[dict[str, Any]] = []
        self.queries: list[str] = []
        """The query string of each request, as the API server sent it."""
        self.peers: list[Any] = []
        """The client address of each request: one per connection the webhook was called on."""
        self.handlers: dict[str, Handler] = {}
        paths = issue_server_cert(ca, ["127.0.0.1", "hooks.webhooks.svc"]).write(cert_dir, "hook")
        self._paths = paths
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def _handle(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.requests.append(review["request"])
        self.queries.append(request.query_string)
        self.peers.append(
            request.transport.get_extra_info("peername") if request.transport else None
        )
        response = await self.handlers[request.path](review["request"])
        response["uid"] = review["request"]["uid"]
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )

    async def start(self) -> None:
        import ssl

        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(self._paths.cert, self._paths.key)
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=ctx)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca.cert_pem).decode()


@pytest.fixture
def hooks(kubesim: KubeSimThread, tmp_path: Path) -> Iterator[WebhookServer]:
    server = WebhookServer(kubesim, make_ca("webhook-ca"), tmp_path)
    kubesim.call(server.start())
    try:
        yield server
    finally:
        kubesim.call(server.stop())


def allow(patch: list[dict[str, Any]] | None = None) -> Handler:
    async def handler(req: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"allowed": True}
        if patch is not None:
            out["patchType"] = "JSONPatch"
            out["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        return out

    return handler


def deny(message: str, code: int = 403) -> Handler:
    async def handler(req: dict[str, Any]) -> dict[str, Any]:
        return {
            "allowed": False,
            "status": {"code": code, "message": message, "reason": "Forbidden"},
        }

    return handler


def webhook(
    name: str,
    url: str,
    ca_bundle: str,
    *,
    resources: list[str],
    operations: list[str] | None = None,
    groups: list[str] | None = None,
    scope: str = "*",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca_bundle},
        "rules": [
            {
                "operations": operations or ["CREATE"],
                "apiGroups": groups or [""],
                "apiVersions": ["v1"],
                "resources": resources,
                "scope": scope,
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **extra,
    }


def _register(api: client.ApiClient, kind: str, *hooks_: dict[str, Any]) -> None:
    adm = client.AdmissionregistrationV1Api(api)
    body = {
        "metadata": {"name": f"cfg-{hooks_[0]['name'].split('.')[0]}"},
        "webhooks": list(hooks_),
    }
    if kind == "mutating":
        adm.create_mutating_webhook_configuration(body)
    else:
        adm.create_validating_webhook_configuration(body)


def test_mutating_webhook_patches_pods_and_sees_no_name_for_generate_name(
    kube_api_client: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    hooks.handlers["/mutate"] = allow(
        [{"op": "add", "path": "/metadata/labels/zone", "value": "a"}]
    )
    _register(
        kube_api_client,
        "mutating",
        webhook("zone.example.com", hooks.url("/mutate"), hooks.ca_bundle, resources=["pods"]),
    )
    body = pod("")
    del body["metadata"]["name"]
    body["metadata"]["generateName"] = "web-"
    created = core.create_namespaced_pod("default", body)
    assert created.metadata.labels == {"zone": "a"}
    req = hooks.requests[-1]
    assert (req["operation"], req["name"], req["namespace"]) == ("CREATE", "", "default")
    assert "uid" not in req["object"]["metadata"]
    assert req["kind"] == {"group": "", "version": "v1", "kind": "Pod"}


def test_in_process_creates_go_through_webhooks(
    kubesim: KubeSimThread, kube_api_client: client.ApiClient, hooks: WebhookServer
) -> None:
    hooks.handlers["/mutate"] = allow(
        [{"op": "add", "path": "/metadata/labels/seen", "value": "yes"}]
    )
    _register(
        kube_api_client,
        "mutating",
        webhook("seen.example.com", hooks.url("/mutate"), hooks.ca_bundle, resources=["pods"]),
    )

    async def make() -> dict[str, Any]:
        return await kubesim.cluster.create(PODS, pod("inproc"), namespace="default")

    assert kubesim.call(make())["metadata"]["labels"] == {"seen": "yes"}


def test_validating_webhook_denial_carries_its_message_and_code(
    kube_api_client: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    hooks.handlers["/deny"] = deny("no pods today")
    _register(
        kube_api_client,
        "validating",
        webhook("deny.example.com", hooks.url("/deny"), hooks.ca_bundle, resources=["pods"]),
    )
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", pod("p"))
    status = json.loads(info.value.body)
    assert info.value.status == 403
    assert (
        status["message"]
        == 'admission webhook "deny.example.com" denied the request: no pods today'
    )
    with pytest.raises(ApiException):
        core.read_namespaced_pod("p", "default")


@pytest.mark.parametrize(("policy", "created"), [("Fail", False), ("Ignore", True)])
def test_unreachable_webhook_follows_failure_policy(
    kube_api_client: client.ApiClient,
    core: client.CoreV1Api,
    hooks: WebhookServer,
    policy: str,
    created: bool,
) -> None:
    _register(
        kube_api_client,
        "mutating",
        webhook(
            "down.example.com",
            "https://127.0.0.1:1/never",
            hooks.ca_bundle,
            resources=["pods"],
            failurePolicy=policy,
        ),
    )
    if created:
        assert core.create_namespaced_pod("default", pod("p")).metadata.name == "p"
        assert fail_open_counts(kube_api_client) == {("down.example.com", "admit"): 1}
    else:
        with pytest.raises(ApiException) as info:
            core.create_namespaced_pod("default", pod("p"))
        status = json.loads(info.value.body)
        assert (info.value.status, status["reason"]) == (500, "InternalError")
        assert 'failed calling webhook "down.example.com"' in status["message"]


@pytest.mark.parametrize(("policy", "created"), [("Fail", False), ("Ignore", True)])
def test_a_certificate_not_signed_by_the_ca_bundle_is_a_call_failure(
    kube_api_client: client.ApiClient,
    core: client.CoreV1Api,
    hooks: WebhookServer,
    policy: str,
    created: bool,
) -> None:
    hooks.handlers["/mutate"] = allow([{"op": "add", "path": "/metadata/labels/x", "value": "y"}])
    other_ca = base64.b64encode(make_ca("someone-else").cert_pem).decode()
    _register(
        kube_api_client,
        "mutating",
        webhook(
            "tls.example.com",
            hooks.url("/mutate"),
            other_ca,
            resources=["pods"],
            failurePolicy=policy,
        ),
    )
    if created:
        assert core.create_namespaced_pod("default", pod("p")).metadata.labels == {}
    else:
        with pytest.raises(ApiException) as info:
            core.create_namespaced_pod("default", pod("p"))
        assert info.value.status == 500
    assert hooks.requests == []


def test_slow_webhook_times_out_after_timeout_seconds(
    kube_api_client: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    async def slow(req: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(3)
        return {"allowed": True}

    hooks.handlers["/slow"] = slow
    _register(
        kube_api_client,
        "validating",
        webhook(
            "slow.example.com",
            hooks.url("/slow"),
            hooks.ca_bundle,
            resources=["pods"],
            timeoutSeconds=1,
        ),
    )
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", pod("p"))
    assert info.value.status == 500
    message = json.loads(info.value.body)["message"]
    assert f'Post "{hooks.url("/slow")}?timeout=1s": context deadline exceeded' in message


def test_each_call_tells_the_webhook_its_timeout_in_the_url(
    kube_api_client: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    """As upstream's API server does (``/path?timeout=10s``), from timeoutSeconds or its default."""
    hooks.handlers["/mutate"] = allow()
    hooks.handlers["/validate"] = allow()
    _register(kube_api_client, "mutating",
              webhook("m.example.com", hooks.url("/mutate"), hooks.ca_bundle, resources=["pods"]))
    _register(kube_api_client, "validating",
              webhook("v.example.com", hooks.url("/validate"), hooks.ca_bundle,
                      resources=["pods"], timeoutSeconds=3))
    core.create_namespaced_pod("default", pod("p"))
    assert sorted(hooks.queries) == ["timeout=10s", "timeout=3s"]


def _register_selective_denial(api: client.ApiClient, hooks: WebhookServer) -> None:
    """A validating webhook denying config maps in namespaces labelled ``guarded=true``, unless
    the config map is labelled ``skip``."""
    hooks.handlers["/deny"] = deny("selected")
    _register(
        api,
        "validating",
        webhook(
            "sel.example.com",
            hooks.url("/deny"),
            hooks.ca_bundle,
            resources=["configmaps"],
            namespaceSelector={"matchLabels": {"guarded": "true"}},
            objectSelector={"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
        ),
    )


def test_namespace_and_object_selectors_limit_which_requests_are_sent(
    kube_api_client: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    _register_selective_denial(kube_api_client, hooks)
    core.create_namespace({"metadata": {"name": "guarded", "labels": {"guarded": "true"}}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "free"}})
    core.create_namespaced_config_map(
        "guarded", {"metadata": {"name": "skipped", "labels": {"skip": "1"}}}
    )
    with pytest.raises(ApiException) as info:
        core.create_namespaced_config_map("guarded", {"metadata": {"name": "caught"}})
    assert info.value.status == 403
    assert [r["name"] for r in hooks.requests] == ["caught"]


def test_rules_match_subresources_such_as_pod_eviction(
    kube_api_client: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    hooks.handlers["/evict"] = deny("evictions are frozen", code=429)
    _register(
        kube_api_client,
        "validating",
        webhook(
            "evict.example.com", hooks.url("/evict"), hooks.ca_bundle, resources=["pods/eviction"]
        ),
    )
    core.create_namespaced_pod("default", pod("p", node="n1"))
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod_eviction(
            "p", "default", client.V1Eviction(metadata=client.V1ObjectMeta(name="p"))
        )
    assert info.value.status == 429
    req = hooks.requests[-1]
    assert (req["subResource"], req["kind"]["kind"], req["resource"]["resource"]) == (
        "eviction",
        "Eviction",
        "pods",
    )
    assert len(hooks.requests) == 1  # the plain pod create did not match "pods/eviction"


def test_operations_and_scope_are_honoured(
    kube_api_client: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    hooks.handlers["/deny"] = deny("no updates")
    _register(
        kube_api_client,
        "validating",
        webhook(
            "upd.example.com",
            hooks.url("/deny"),
            hooks.ca_bundle,
            resources=["*"],
            operations=["UPDATE"],
            scope="Namespaced",
        ),
    )
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    core.create_namespace({"metadata": {"name": "other"}})
    core.patch_namespace("other", {"metadata": {"labels": {"a": "b"}}})
    with pytest.raises(ApiException):
        core.patch_namespaced_config_map("cm", "default", {"data": {"a": "b"}})
    assert [r["operation"] for r in hooks.requests] == ["UPDATE"]
    assert hooks.requests[0]["oldObject"]["metadata"]["name"] == "cm"


def test_dry_run_requests_reach_side_effect_free_webhooks_and_persist_nothing(
    kube_api_client: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    hooks.handlers["/mutate"] = allow([{"op": "add", "path": "/metadata/labels/m", "value": "1"}])
    _register(
        kube_api_client,
        "mutating",
        webhook("dry.example.com", hooks.url("/mutate"), hooks.ca_bundle, resources=["pods"]),
    )
    out = core.create_namespaced_pod("default", pod("p"), dry_run="All")
    assert out.metadata.labels == {"m": "1"}
    assert hooks.requests[-1]["dryRun"] is True
    with pytest.raises(ApiException):
        core.read_namespaced_pod("p", "default")


def test_webhook_configurations_are_validated_like_upstream_v1(
    kube_api_client: client.ApiClient, hooks: WebhookServer
) -> None:
    bad = webhook(
        "fx.example.com",
        "http://127.0.0.1/plain",
        hooks.ca_bundle,
        resources=["pods"],
        sideEffects="Some",
        timeoutSeconds=60,
    )
    with pytest.raises(ApiException) as info:
        _register(kube_api_client, "mutating", bad)
    status = json.loads(info.value.body)
    assert info.value.status == 422
    assert {c["field"] for c in status["details"]["causes"]} == {
        "webhooks[0].sideEffects",
        "webhooks[0].timeoutSeconds",
        "webhooks[0].clientConfig.url",
    }


def test_service_reference_resolves_through_the_service_and_verifies_its_dns_name(
    kube_api_client: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    core.create_namespace({"metadata": {"name": "webhooks"}})
    core.create_namespaced_service(
        "webhooks",
        {
            "metadata": {"name": "hooks"},
            "spec": {"clusterIP": "127.0.0.1", "ports": [{"port": 443, "targetPort": hooks.port}]},
        },
    )
    hooks.handlers["/svc"] = allow(
        [{"op": "add", "path": "/metadata/labels/via", "value": "service"}]
    )
    hook = webhook("svc.example.com", "", hooks.ca_bundle, resources=["pods"])
    hook["clientConfig"] = {
        "service": {"namespace": "webhooks", "name": "hooks", "path": "/svc"},
        "caBundle": hooks.ca_bundle,
    }
    _register(kube_api_client, "mutating", hook)
    assert core.create_namespaced_pod("default", pod("p")).metadata.labels == {"via": "service"}


@pytest.mark.parametrize(("policy", "called"), [("Equivalent", True), ("Exact", False)])
def test_match_policy_equivalent_matches_another_served_version(
    kube_api_client: client.ApiClient, hooks: WebhookServer, policy: str, called: bool
) -> None:
    from tests.kubesim.test_custom_resources import WIDGET_CRD, widget

    client.ApiextensionsV1Api(kube_api_client).create_custom_resource_definition(WIDGET_CRD)
    hooks.handlers["/w"] = allow()
    hook = webhook(
        "w.example.com",
        hooks.url("/w"),
        hooks.ca_bundle,
        resources=["widgets"],
        groups=["example.com"],
        matchPolicy=policy,
    )
    hook["rules"][0]["apiVersions"] = ["v1beta1"]
    _register(kube_api_client, "validating", hook)
    client.CustomObjectsApi(kube_api_client).create_namespaced_custom_object(
        "example.com", "v1", "default", "widgets", widget("w1")
    )
    assert bool(hooks.requests) is called
    if called:
        req = hooks.requests[0]
        assert req["kind"]["version"] == "v1beta1"
        assert req["requestKind"]["version"] == "v1"
        assert req["object"]["apiVersion"] == "example.com/v1beta1"


def test_if_needed_webhooks_are_reinvoked_after_a_later_mutation(
    kube_api_client: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    calls: list[dict[str, str]] = []

    async def first(req: dict[str, Any]) -> dict[str, Any]:
        calls.append(dict(req["object"]["metadata"].get("labels") or {}))
        return await allow([{"op": "add", "path": "/metadata/labels/first", "value": "1"}])(req)

    hooks.handlers["/first"] = first
    hooks.handlers["/second"] = allow(
        [{"op": "add", "path": "/metadata/labels/second", "value": "2"}]
    )
    _register(
        kube_api_client,
        "mutating",
        webhook(
            "first.example.com",
            hooks.url("/first"),
            hooks.ca_bundle,
            resources=["pods"],
            reinvocationPolicy="IfNeeded",
        ),
        webhook("second.example.com", hooks.url("/second"), hooks.ca_bundle, resources=["pods"]),
    )
    created = core.create_namespaced_pod("default", pod("p"))
    assert created.metadata.labels == {"first": "1", "second": "2"}
    assert calls == [{}, {"first": "1", "second": "2"}]


def test_a_changed_or_removed_configuration_applies_to_the_very_next_request(
    kube_api_client: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    adm = client.AdmissionregistrationV1Api(kube_api_client)
    hooks.handlers["/deny"] = deny("guarded kind")
    core.create_namespaced_config_map("default", {"metadata": {"name": "before"}})
    _register(
        kube_api_client,
        "validating",
        webhook("kind.example.com", hooks.url("/deny"), hooks.ca_bundle, resources=["configmaps"]),
    )
    with pytest.raises(ApiException):
        core.create_namespaced_config_map("default", {"metadata": {"name": "denied"}})
    core.create_namespaced_secret("default", {"metadata": {"name": "s1"}})

    cfg = adm.read_validating_webhook_configuration("cfg-kind")
    cfg.webhooks[0].rules[0].resources = ["secrets"]
    adm.replace_validating_webhook_configuration("cfg-kind", cfg)
    core.create_namespaced_config_map("default", {"metadata": {"name": "after"}})
    with pytest.raises(ApiException):
        core.create_namespaced_secret("default", {"metadata": {"name": "s2"}})

    adm.delete_validating_webhook_configuration("cfg-kind")
    core.create_namespaced_secret("default", {"metadata": {"name": "s3"}})
    assert [(r["kind"]["kind"], r["name"]) for r in hooks.requests] == [
        ("ConfigMap", "denied"),
        ("Secret", "s2"),
    ]


def test_selectors_are_evaluated_per_request_while_the_configuration_is_unchanged(
    kube_api_client: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    _register_selective_denial(kube_api_client, hooks)
    core.create_namespace({"metadata": {"name": "later"}})
    core.create_namespaced_config_map("later", {"metadata": {"name": "open"}})
    core.patch_namespace("later", {"metadata": {"labels": {"guarded": "true"}}})
    with pytest.raises(ApiException):
        core.create_namespaced_config_map("later", {"metadata": {"name": "caught"}})
    core.create_namespaced_config_map(
        "later", {"metadata": {"name": "skipped", "labels": {"skip": "1"}}}
    )
    core.patch_namespace("later", {"metadata": {"labels": {"guarded": None}}})
    core.create_namespaced_config_map("later", {"metadata": {"name": "open-again"}})
    assert [r["name"] for r in hooks.requests] == ["caught"]


def test_webhook_calls_reuse_one_kept_alive_connection(
    kube_api_client: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    hooks.handlers["/ok"] = allow()
    _register(
        kube_api_client,
        "validating",
        webhook("ok.example.com", hooks.url("/ok"), hooks.ca_bundle, resources=["configmaps"]),
    )
    for i in range(5):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"cm{i}"}})
    assert len(hooks.requests) == 5
    assert len(set(hooks.peers)) == 1


def test_a_patch_changing_the_uid_reaches_mutating_webhooks_before_the_uid_is_refused(
    kube_api_client: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    """Upstream runs mutating admission on the patched object, then BeforeUpdate's checks: a
    webhook sees the uid the patch names, and one that puts the stored uid back saves it."""
    seen: list[tuple[str, str]] = []

    async def restore(req: dict[str, Any]) -> dict[str, Any]:
        seen.append((req["object"]["metadata"]["uid"], req["oldObject"]["metadata"]["uid"]))
        if req["object"]["metadata"].get("labels", {}).get("restore") != "yes":
            return {"allowed": True}
        stored = req["oldObject"]["metadata"]["uid"]
        return await allow([{"op": "replace", "path": "/metadata/uid", "value": stored}])(req)

    hooks.handlers["/restore"] = restore
    _register(
        kube_api_client,
        "mutating",
        webhook(
            "restore.example.com",
            hooks.url("/restore"),
            hooks.ca_bundle,
            resources=["pods"],
            operations=["UPDATE"],
        ),
    )
    uid = core.create_namespaced_pod("default", pod("p")).metadata.uid
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_pod("p", "default", {"metadata": {"uid": "other"}})
    assert info.value.status == 422
    assert json.loads(info.value.body)["message"] == (
        'Pod "p" is invalid: metadata.uid: Invalid value: "other": field is immutable'
    )
    assert seen == [("other", uid)]

    patched = core.patch_namespaced_pod(
        "p", "default", {"metadata": {"uid": "other", "labels": {"restore": "yes"}}}
    )
    assert (patched.metadata.uid, patched.metadata.labels) == (uid, {"restore": "yes"})
    assert seen[1] == ("other", uid)
