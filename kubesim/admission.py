"""Dynamic admission: mutating, then validating webhooks called with ``AdmissionReview`` v1.

Webhooks come from the stored Mutating/ValidatingWebhookConfiguration objects. They are compiled
again after any write of a configuration (selectors parsed, rules kept per webhook; the store
counts writes per resource, so the check costs two lookups), so a new or changed configuration
applies to the very next request (upstream caches them for a moment; tests prefer no delay).
Every write asks :meth:`Admission.applies` first: the webhooks whose rules could match an
(operation, group, resource, subresource, scope) are indexed on first use, and a request that
none can match skips admission altogether (no namespace read, no second defaulting and
validation pass). Matching follows upstream:

- ``rules``: operations, apiGroups, apiVersions, resources (``*`` is every resource but no
  subresource, ``*/*`` everything, ``pods/*`` every pod subresource, ``*/scale``), and scope;
- ``matchPolicy``: ``Exact``, or ``Equivalent`` (default), which also matches a rule written for
  another served version of the same resource and then sends the object in that version;
- ``namespaceSelector`` on the namespace's labels (the object's own labels for a Namespace;
  ignored for other cluster-scoped resources) and ``objectSelector`` on the new or old object;
- requests for webhook configurations themselves are never sent to webhooks (as upstream).

Calls go over HTTPS only, verified against ``caBundle`` (or the system roots without one) and
bounded by ``timeoutSeconds``; with :attr:`Admission.client_certificate` set (kubesim's
``--webhook-client-cert``) every admission call presents it, as the API server's
AdmissionConfiguration makes it authenticate to webhooks; conversion calls do not (upstream's
AdmissionConfiguration does not reach them) unless :attr:`Admission.certificate_for_conversions`
is set (``--webhook-client-cert-for-conversions``), for a webhook that asks for it on its
conversion port as well. One :class:`kubesim.webhook_client.WebhookClient`
serves every webhook: its connections are kept alive and pooled per address, TLS context and
server name, at most 25 per address, so a burst of pod creations costs a few TLS handshakes, not
one per request. ``failurePolicy: Ignore`` skips a webhook that cannot be called or answers
nonsense; ``Fail`` turns that into a 500 ``InternalError``. A denial becomes the webhook's
``status`` with ``admission webhook "x" denied the request: ...``. Mutating webhooks run in
order and may return a base64 JSONPatch;
``reinvocationPolicy: IfNeeded`` webhooks run once more if a later webhook changed the object.
Validating webhooks run concurrently. ``dryRun`` requests are refused for webhooks whose
``sideEffects`` are not None/NoneOnDryRun.

Service references (``clientConfig.service``) resolve through the stored Service; the TLS name is
always ``<name>.<namespace>.svc``. A Service with an ``Endpoints`` object of the same name (``v1``,
a built-in resource) is reached at one of its ready endpoints, chosen round robin per call, the way
kube-proxy spreads a Service's connections over its ready pods: the Service port (matched by
``port``) names its endpoint port by ``name``, and every ``addresses`` entry of every subset
listing a port of that name is a candidate, so several webhook processes on one host can stand
behind one Service with a port each. Addresses under ``notReadyAddresses`` are skipped; an
Endpoints object with no ready address fails the call ("no endpoints available"), which the
webhook's ``failurePolicy`` then handles. Upstream's endpoint resolver takes a random address of
the first matching subset only; taking every subset is what the Service's traffic does. A Service
without an Endpoints object is reached at its ``spec.externalName`` or ``spec.clusterIP`` (so a
local webhook can be addressed as a Service whose clusterIP is 127.0.0.1) on the target port from
its port list. EndpointSlices are not read: one Endpoints object per Service is the simpler
contract for a simulator.

``matchConditions`` (CEL) are not evaluated: a webhook that declares them is treated as matching.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import logging
import ssl
import uuid
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import msgspec

from kubesemantics import label_selector
from kubesim import errors, jsonpatch
from kubesim.interface import ApiError
from kubesim.webhook_client import CallError, ClientCertificate, WebhookClient

log = logging.getLogger("kubesim.admission")

if TYPE_CHECKING:
    from kubesim.apiserver import ApiServer
    from kubesim.registry import ResourceType

JsonObject = dict[str, Any]

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode

MUTATING = ("admissionregistration.k8s.io", "mutatingwebhookconfigurations")
VALIDATING = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")

USER_INFO = {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}

CONNECTIONS_PER_ENDPOINT = 25
"""Connections open at most to one webhook address, as upstream's API server keeps 25 idle per
host. They open only as calls overlap, so a webhook that answers at once is reached over a few;
one that awaits something per review (spreadbus's reserves through NATS) has up to 25 reviews in
flight, which measured clearly faster end to end than 4, 8 or 16. A burst beyond that queues
rather than paying a TLS handshake on both sides per extra connection."""


_SUB_KINDS = {
    "eviction": {"group": "policy", "version": "v1", "kind": "Eviction"},
    "binding": {"group": "", "version": "v1", "kind": "Binding"},
    "scale": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
}


@dataclass(frozen=True, slots=True)
class Attributes:
    operation: str
    rt: ResourceType
    subresource: str
    namespace: str
    name: str
    dry_run: bool
    options: JsonObject


@dataclass(frozen=True, slots=True)
class _Hook:
    """One webhook of a configuration, its selectors parsed once."""

    spec: JsonObject
    rules: tuple[JsonObject, ...]
    namespace_selector: label_selector.Selector | None
    """``None``: the selector does not parse, and the webhook matches no namespaced request."""
    object_selector: label_selector.Selector | None
    """``None``: the selector does not parse, and the webhook matches nothing."""


def _hook(spec: JsonObject) -> _Hook:
    rules = tuple(r for r in spec.get("rules") or () if isinstance(r, dict))
    return _Hook(
        spec, rules, _selector(spec, "namespaceSelector"), _selector(spec, "objectSelector")
    )


def _selector(spec: JsonObject, field: str) -> label_selector.Selector | None:
    """The webhook's selector ``field`` parsed (absent: everything), ``None`` if it does not."""
    try:
        return label_selector.from_label_selector(spec.get(field) or {})
    except label_selector.SelectorError:
        return None


_ResourceKey = tuple[str, str, str, str, bool]
"""(operation, group, plural, subresource, namespaced): what a rule checks besides the version."""


class _Phase:
    """The webhooks of one phase in order, with the ones each kind of request may reach."""

    def __init__(self, hooks: list[_Hook]) -> None:
        self.hooks = hooks
        self._reachable: dict[_ResourceKey, tuple[tuple[_Hook, tuple[JsonObject, ...]], ...]] = {}

    def reachable(
        self, operation: str, rt: ResourceType, subresource: str
    ) -> tuple[tuple[_Hook, tuple[JsonObject, ...]], ...]:
        """The webhooks with a rule matching such a request but maybe for its version, each
        with those rules."""
        key = (operation, rt.group, rt.plural, subresource, rt.namespaced)
        found = self._reachable.get(key)
        if found is None:
            matching = []
            for h in self.hooks:
                rules = tuple(
                    r for r in h.rules if _rule_matches_resource(r, operation, rt, subresource)
                )
                if rules:
                    matching.append((h, rules))
            found = self._reachable[key] = tuple(matching)
        return found


@dataclass(frozen=True, slots=True)
class _Webhooks:
    """Both phases compiled from the configurations as they were after ``writes`` writes."""

    writes: tuple[int, int]
    mutating: _Phase
    validating: _Phase


def _phase(bucket: dict[Any, JsonObject] | None) -> _Phase:
    hooks: list[_Hook] = []
    for _, cfg in sorted((bucket or {}).items()):
        for w in cfg.get("webhooks") or ():
            if isinstance(w, dict):
                hooks.append(_hook(w))
    return _Phase(hooks)


class CallFailed(Exception):
    """The webhook could not be called or gave an unusable answer."""


ENDPOINTS = ("", "endpoints")


@dataclass(frozen=True, slots=True)
class _Endpoint:
    """Where one call goes: ``url`` names it in messages, the rest is what is dialled."""

    url: str
    host: str
    port: int
    path: str
    server_name: str

    def with_query(self, query: str) -> _Endpoint:
        joined = "&" if "?" in self.path else "?"
        return replace(self, url=self.url + joined + query, path=self.path + joined + query)


class Admission:
    def __init__(self, server: ApiServer) -> None:
        self.server = server
        self._client = WebhookClient(connections_per_endpoint=CONNECTIONS_PER_ENDPOINT)
        self._ssl_cache: dict[tuple[str, bool], ssl.SSLContext] = {}
        self.client_certificate: ClientCertificate | None = None
        """Presented to every admission webhook when set."""
        self.certificate_for_conversions = False
        """Whether conversion webhooks are shown :attr:`client_certificate` too, which
        kube-apiserver has no setting for (``--webhook-client-cert-for-conversions``)."""
        self._url_endpoints: dict[str, _Endpoint] = {}
        self._next_endpoint: dict[tuple[str, str, int], int] = {}
        self._compiled = _Webhooks((0, 0), _Phase([]), _Phase([]))
        self.fail_open: collections.Counter[tuple[str, str]] = collections.Counter()
        """``(webhook name, "admit" | "validating")`` -> calls that failed and were let through by
        ``failurePolicy: Ignore``: kube-apiserver's ``apiserver_admission_webhook_fail_open_count``,
        by which a test tells a guarantee broken from a review that never reached the webhook."""

    def _current(self) -> _Webhooks:
        """The compiled webhooks, compiled again once a configuration was written."""
        store = self.server.store
        writes = (store.writes.get(MUTATING, 0), store.writes.get(VALIDATING, 0))
        if writes != self._compiled.writes:
            objs = store.objects
            self._compiled = _Webhooks(
                writes, _phase(objs.get(MUTATING)), _phase(objs.get(VALIDATING))
            )
        return self._compiled

    def applies(self, operation: str, rt: ResourceType, subresource: str = "") -> bool:
        """Whether any webhook's rules may match such a request (a cheap test before building
        the request's attributes; selectors and versions are checked by the phases)."""
        if rt.storage_key in (MUTATING, VALIDATING):
            return False
        current = self._current()
        return bool(
            current.mutating.reachable(operation, rt, subresource)
            or current.validating.reachable(operation, rt, subresource)
        )

    async def close(self) -> None:
        await self._client.close()

    # --- matching ------------------------------------------------------------------------------

    def _match_rules(
        self, w: JsonObject, attrs: Attributes, rules: tuple[JsonObject, ...]
    ) -> ResourceType | None:
        """The resource type (maybe an equivalent version) the webhook sees, or None.

        ``rules`` passed every test but the version (operation, group, resource and scope, which
        no version changes: equivalent versions share group, plural and scope); the registry is
        scanned only when the request's own version matches none of them.
        """
        rt = attrs.rt
        if any(_rule_matches_version(rule, rt) for rule in rules):
            return rt
        if w.get("matchPolicy", "Equivalent") != "Equivalent":
            return None
        for other in self.server.registry:
            if (
                other.storage_key == rt.storage_key
                and other.version != rt.version
                and any(_rule_matches_version(rule, other) for rule in rules)
            ):
                return other
        return None

    def _namespace_labels(self, attrs: Attributes, obj: Any, old: Any) -> dict[str, str] | None:
        if attrs.rt.kind == "Namespace" and not attrs.rt.group:
            src = obj if isinstance(obj, dict) else old
            return dict((src or {}).get("metadata", {}).get("labels") or {})
        if not attrs.rt.namespaced:
            return None
        ns = self.server.store.get(("", "namespaces"), "", attrs.namespace)
        return dict(((ns or {}).get("metadata") or {}).get("labels") or {})

    def _matches(
        self, hook: _Hook, rules: tuple[JsonObject, ...], attrs: Attributes, obj: Any, old: Any
    ) -> ResourceType | None:
        seen_as = self._match_rules(hook.spec, attrs, rules)
        if seen_as is None:
            return None
        ns_labels = self._namespace_labels(attrs, obj, old)
        if ns_labels is not None and (
            hook.namespace_selector is None or not hook.namespace_selector.matches(ns_labels)
        ):
            return None
        obj_sel = hook.object_selector
        if obj_sel is None:
            return None
        if not obj_sel.empty:
            labels = [
                (o.get("metadata") or {}).get("labels") or {}
                for o in (obj, old)
                if isinstance(o, dict) and attrs.subresource not in ("eviction", "binding")
            ]
            if not any(obj_sel.matches(lab) for lab in labels):
                return None
        return seen_as

    # --- calling -------------------------------------------------------------------------------

    def _review(self, attrs: Attributes, seen_as: ResourceType, obj: Any, old: Any) -> JsonObject:
        rt = attrs.rt
        kind = {"group": seen_as.group, "version": seen_as.version, "kind": seen_as.kind}
        request_kind = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        if attrs.subresource in _SUB_KINDS:
            kind = request_kind = dict(_SUB_KINDS[attrs.subresource])

        def as_version(o: Any) -> Any:
            if isinstance(o, dict) and o.get("kind") == seen_as.kind:
                return {**o, "apiVersion": seen_as.api_version}
            return o

        req: JsonObject = {
            "uid": str(uuid.uuid4()),
            "kind": kind,
            "resource": {"group": seen_as.group, "version": seen_as.version, "resource": rt.plural},
            "requestKind": request_kind,
            "requestResource": {"group": rt.group, "version": rt.version, "resource": rt.plural},
            "name": attrs.name,
            "operation": attrs.operation,
            "userInfo": USER_INFO,
            "object": as_version(obj),
            "oldObject": as_version(old),
            "dryRun": attrs.dry_run,
            "options": attrs.options,
        }
        if attrs.subresource:
            req["subResource"] = attrs.subresource
            req["requestSubResource"] = attrs.subresource
        if attrs.namespace:
            req["namespace"] = attrs.namespace
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}

    def _endpoint(self, w: JsonObject) -> _Endpoint:
        """Where to call ``w``: its URL, or an address of its Service."""
        cc = w.get("clientConfig") or {}
        if cc.get("url"):
            url = str(cc["url"])
            endpoint = self._url_endpoints.get(url)
            if endpoint is None:
                endpoint = self._url_endpoints[url] = _url_endpoint(w, url)
            return endpoint
        svc = cc.get("service")
        if not isinstance(svc, dict):
            raise CallFailed("clientConfig needs a url or a service")
        ns, name = svc.get("namespace", ""), svc.get("name", "")
        port = int(svc.get("port", 443))
        path = svc.get("path") or "/"
        service = self.server.store.get(("", "services"), ns, name)
        if service is None:
            raise CallFailed(f'service "{ns}/{name}" not found')
        spec = service.get("spec") or {}
        service_port: JsonObject = next(
            (
                p
                for p in spec.get("ports") or ()
                if isinstance(p, dict) and int(p.get("port", 0)) == port
            ),
            {},
        )
        server_name = f"{name}.{ns}.svc"
        endpoints = self.server.store.get(ENDPOINTS, ns, name)
        if endpoints is not None and not spec.get("externalName"):
            ready = ready_endpoints(endpoints, str(service_port.get("name") or ""))
            if not ready:
                raise CallFailed(f'no endpoints available for service "{name}"')
            turn = self._next_endpoint.get((ns, name, port), 0)
            self._next_endpoint[(ns, name, port)] = turn + 1
            ip, endpoint_port = ready[turn % len(ready)]
            return _Endpoint(_https(ip, endpoint_port, path), ip, endpoint_port, path, server_name)
        address = spec.get("externalName") or spec.get("clusterIP")
        if not isinstance(address, str) or not address or address == "None":
            raise CallFailed(f'service "{ns}/{name}" has no address')
        tp = service_port.get("targetPort", port)
        target = int(tp) if isinstance(tp, int) or str(tp).isdigit() else port
        return _Endpoint(_https(address, target, path), address, target, path, server_name)

    def _ssl(self, w: JsonObject, authenticate: bool) -> ssl.SSLContext:
        bundle = (w.get("clientConfig") or {}).get("caBundle") or ""
        identity = self.client_certificate if authenticate else None
        key = (bundle, identity is not None)
        ctx = self._ssl_cache.get(key)
        if ctx is None:
            if bundle:
                try:
                    pem = base64.b64decode(bundle).decode()
                    ctx = ssl.create_default_context(cadata=pem)
                except (ValueError, ssl.SSLError) as e:
                    raise CallFailed(f"invalid caBundle: {e}") from e
            else:
                ctx = ssl.create_default_context()
            if identity is not None:
                try:
                    identity.present_with(ctx)
                except (OSError, ssl.SSLError) as e:
                    raise CallFailed(f"client certificate not loaded: {e}") from e
            self._ssl_cache[key] = ctx
        return ctx

    async def post(
        self, w: JsonObject, review: JsonObject, timeout: float, *, timeout_in_url: bool = False,
        authenticate: bool = True,
    ) -> Any:
        """POST a review to ``w``'s clientConfig over verified HTTPS; the decoded JSON answer.

        Shared with CRD conversion webhooks; failures raise :class:`CallFailed` with the
        wording upstream uses. ``timeout_in_url`` tells the webhook its deadline as upstream's
        admission calls do (``/path?timeout=10s``); ``authenticate`` presents
        :attr:`client_certificate` (conversion calls present it only with
        :attr:`certificate_for_conversions`).
        """
        endpoint = self._endpoint(w)
        if timeout_in_url:
            endpoint = endpoint.with_query(f"timeout={timeout:g}s")
        context = self._ssl(w, authenticate)
        try:
            status, body = await self._client.post(
                host=endpoint.host,
                port=endpoint.port,
                path=endpoint.path,
                context=context,
                server_name=endpoint.server_name,
                body=_encode(review),
                timeout=timeout,
            )
        except TimeoutError as e:
            raise CallFailed(
                f'Post "{endpoint.url}": context deadline exceeded (timeout {timeout:g}s)'
            ) from e
        except CallError as e:
            raise CallFailed(f'Post "{endpoint.url}": {e}') from e
        if status != 200:
            raise CallFailed(f"expected response code 200, got {status}")
        try:
            return _decode(body)
        except msgspec.DecodeError as e:
            raise CallFailed(f"failed to decode the response: {e}") from e

    async def _call(self, w: JsonObject, review: JsonObject) -> JsonObject:
        if "v1" not in (w.get("admissionReviewVersions") or ["v1"]):
            raise CallFailed("webhook does not accept the v1 AdmissionReview API version")
        body = await self.post(w, review, float(w.get("timeoutSeconds") or 10), timeout_in_url=True)
        if not isinstance(body, dict) or not isinstance(body.get("response"), dict):
            raise CallFailed("the webhook returned no response")
        response: JsonObject = body["response"]
        if response.get("uid") != review["request"]["uid"]:
            raise CallFailed(
                f"expected response.uid={review['request']['uid']!r}, got {response.get('uid')!r}"
            )
        return response

    def _failed_open(self, w: JsonObject, phase: str, e: CallFailed) -> None:
        name = str(w.get("name"))
        self.fail_open[(name, phase)] += 1
        log.warning('failed calling webhook "%s", failing open: %s', name, e)

    def _failure(self, w: JsonObject, why: str) -> ApiError:
        return errors.internal(f'failed calling webhook "{w.get("name")}": {why}')

    @staticmethod
    def _denied(w: JsonObject, response: JsonObject) -> ApiError:
        result = response.get("status") or {}
        code = int(result.get("code") or 0)
        code = code if code >= 400 else 400
        denied = f'admission webhook "{w.get("name")}" denied the request'
        if result.get("message"):
            message = f"{denied}: {result['message']}"
        elif result.get("reason"):
            message = f"{denied}: {result['reason']}"
        else:
            message = f"{denied} without explanation"
        return ApiError(
            code, str(result.get("reason") or ""), message, details=result.get("details")
        )

    def _dry_run_refused(self, w: JsonObject, attrs: Attributes) -> ApiError | None:
        if attrs.dry_run and w.get("sideEffects") not in ("None", "NoneOnDryRun"):
            return errors.bad_request(
                f'admission webhook "{w.get("name")}" does not support dry run'
            )
        return None

    # --- the two phases ------------------------------------------------------------------------

    async def mutate(self, attrs: Attributes, obj: Any, old: JsonObject | None) -> Any:
        """The object after every matching mutating webhook: ``obj`` itself when none changed
        it, so a caller can skip its second defaulting and validation pass."""
        if attrs.rt.storage_key in (MUTATING, VALIDATING):
            return obj
        hooks = self._current().mutating.reachable(attrs.operation, attrs.rt, attrs.subresource)
        changed_after: dict[int, bool] = {}
        for i, (hook, rules) in enumerate(hooks):
            new = await self._mutate_one(hook, rules, attrs, obj, old)
            if new is not _SKIPPED:
                if new is not obj and new != obj:
                    for j in changed_after:
                        changed_after[j] = True
                    obj = new
                changed_after[i] = False
        for i, (hook, rules) in enumerate(hooks):
            if changed_after.get(i) and hook.spec.get("reinvocationPolicy") == "IfNeeded":
                new = await self._mutate_one(hook, rules, attrs, obj, old)
                if new is not _SKIPPED:
                    obj = new
        return obj

    async def _mutate_one(
        self, hook: _Hook, rules: tuple[JsonObject, ...], attrs: Attributes, obj: Any, old: Any
    ) -> Any:
        w = hook.spec
        seen_as = self._matches(hook, rules, attrs, obj, old)
        if seen_as is None:
            return _SKIPPED
        refused = self._dry_run_refused(w, attrs)
        if refused is not None:
            raise refused
        review = self._review(attrs, seen_as, obj, old)
        try:
            response = await self._call(w, review)
            if not response.get("allowed"):
                raise self._denied(w, response)
            patch = response.get("patch")
            if not patch:
                return obj
            if response.get("patchType") != "JSONPatch":
                raise CallFailed(f"unsupported patchType {response.get('patchType')!r}")
            try:
                ops = jsonpatch_ops(patch)
                sent = review["request"]["object"]
                patched = jsonpatch.apply(sent, ops)
            except (ValueError, jsonpatch.JsonPatchError) as e:
                raise CallFailed(f"JSON patch failed: {e}") from e
            if isinstance(patched, dict) and isinstance(obj, dict):
                patched["apiVersion"] = obj.get("apiVersion")
            return patched
        except CallFailed as e:
            if w.get("failurePolicy", "Fail") == "Ignore":
                self._failed_open(w, "admit", e)
                return obj
            raise self._failure(w, str(e)) from e

    async def validate(self, attrs: Attributes, obj: Any, old: JsonObject | None) -> None:
        if attrs.rt.storage_key in (MUTATING, VALIDATING):
            return
        reviews = []
        reachable = self._current().validating.reachable(
            attrs.operation, attrs.rt, attrs.subresource
        )
        for hook, rules in reachable:
            seen_as = self._matches(hook, rules, attrs, obj, old)
            if seen_as is None:
                continue
            refused = self._dry_run_refused(hook.spec, attrs)
            if refused is not None:
                raise refused
            reviews.append((hook.spec, self._review(attrs, seen_as, obj, old)))
        if len(reviews) == 1:  # the common case, without a task per call
            await self._validate_one(*reviews[0])
        elif reviews:
            results = await asyncio.gather(
                *(self._validate_one(w, review) for w, review in reviews),
                return_exceptions=True,
            )
            for r in results:
                if isinstance(r, BaseException):
                    raise r

    async def _validate_one(self, w: JsonObject, review: JsonObject) -> None:
        try:
            response = await self._call(w, review)
        except CallFailed as e:
            if w.get("failurePolicy", "Fail") == "Ignore":
                self._failed_open(w, "validating", e)
                return
            raise self._failure(w, str(e)) from e
        if not response.get("allowed"):
            raise self._denied(w, response)


_SKIPPED = object()


def ready_endpoints(endpoints: JsonObject, port_name: str) -> list[tuple[str, int]]:
    """Every ready ``(ip, port)`` of an Endpoints object for the named port, in stored order.

    An unnamed Service port matches the one port of a subset that lists a single port.
    """
    out: list[tuple[str, int]] = []
    for subset in endpoints.get("subsets") or ():
        if not isinstance(subset, dict):
            continue
        ports = [p for p in subset.get("ports") or () if isinstance(p, dict)]
        chosen = [p for p in ports if str(p.get("name") or "") == port_name]
        if not chosen and not port_name and len(ports) == 1:
            chosen = ports
        for p in chosen:
            number = p.get("port")
            if not isinstance(number, int) or isinstance(number, bool):
                continue
            for address in subset.get("addresses") or ():
                ip = address.get("ip") if isinstance(address, dict) else None
                if isinstance(ip, str) and ip:
                    out.append((ip, number))
    return out


def _url_endpoint(w: JsonObject, url: str) -> _Endpoint:
    """``clientConfig.url`` taken apart: the TLS server name is the URL's host."""
    if not url.startswith("https://"):
        raise CallFailed(f'webhook "{w.get("name")}" URL must use https')
    parts = urlsplit(url)
    try:
        host, port = parts.hostname, parts.port or 443
    except ValueError as e:
        raise CallFailed(f'parse "{url}": {e}') from e
    if not host:
        raise CallFailed(f'parse "{url}": no host')
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    return _Endpoint(url, host, port, path, host)


def _https(host: str, port: int, path: str) -> str:
    host_part = f"[{host}]" if ":" in host else host
    return f"https://{host_part}:{port}{path}"


def jsonpatch_ops(encoded: str) -> Any:
    with contextlib.suppress(ValueError, TypeError):
        return _decode(base64.b64decode(encoded))
    raise ValueError("the patch is not base64-encoded JSON")


def _rule_matches_version(rule: JsonObject, rt: ResourceType) -> bool:
    versions = rule.get("apiVersions") or []
    return "*" in versions or rt.version in versions


def _rule_matches_resource(rule: JsonObject, operation: str, rt: ResourceType, sub: str) -> bool:
    """Everything a rule says but the version: operation, group, resource, scope."""
    ops = rule.get("operations") or []
    if "*" not in ops and operation not in ops:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and rt.group not in groups:
        return False
    scope = rule.get("scope", "*")
    if scope == "Cluster" and rt.namespaced:
        return False
    if scope == "Namespaced" and not rt.namespaced:
        return False
    for res in rule.get("resources") or []:
        name, _, rsub = str(res).partition("/")
        if name not in ("*", rt.plural):
            continue
        if not rsub and not sub:
            return True
        if rsub == "*" or (rsub and rsub == sub):
            return True
    return False
