"""Whatever a plan names, every request the actuator sends is for that object's own path, or none.

The actuator talks through the official client (urllib3) to a recording HTTP server that sees the
request line as sent, and answers every read with whatever lets the plan go on to its write: the
object the plan names (its governor, for the governor's path), listing and owning what the grant
asks. So only the names decide where requests go. The server reads a path as the API server does
(decode, then split on ``/``); the segments must be the plan's target (``api``/``apis``, group,
version, ``namespaces``, namespace, resource, name), or its ``status`` or ``eviction``, or the
collection for a create; a read may also be the governor's own path.

Plans are drawn from the built-in grants with names that are fine or hostile (``..``, ``/``,
``%2F``, ``%2e%2e``, ``?``, ``#``, unicode, NUL, empty, overlong). An eviction goes to the
pod's core ``v1`` path whatever version the plan names.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any, Final
from urllib.parse import unquote

import msgspec
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kubernetes import client

from events.messages import ObjectRef, Plan, Precondition
from services.actuator.application import Applier
from spreadbus.engine.feature_set import plan_grants
from spreadbus.engine.plan_grants import PlanAuthority, PlanGrant
from spreadbus.features.registry import BUILTIN
from spreadbus.runtime.kube_client import KubeClient
from spreadbus.runtime.rate_limit import TokenBucket

GRANTS: Final = tuple(g for g in plan_grants(BUILTIN) if g.governor is not None)
UID: Final = "0b7c5b8e-uid"
GOVERNOR_UID: Final = "4f1d2a90-uid"
HOSTILE: Final = (
    "", ".", "..", "../../../../api/v1/namespaces/victim/secrets/db-pass",
    "..%2F..%2F..%2Fapi%2Fv1%2Fnamespaces%2Fvictim%2Fpods%2Fp", "%2e%2e", "%2E%2E", "a/b",
    "a%2Fb", "web/status", "x?dryRun=All", "x#y", "a\x00b", "ünï", "Web", "a" * 254, "b" * 64,
    "-a", "a..b", " a",
)
NAME: Final = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?(\.[a-z0-9]{1,4})?\Z")
ANY_NAME: Final = st.one_of(
    NAME, st.sampled_from(HOSTILE), st.text(max_size=12),
    st.lists(st.sampled_from(["..", ".", "%2e%2e", "api", "v1", "pods", "p", ""]), max_size=6)
    .map("/".join))
NAMESPACE: Final = st.one_of(st.sampled_from(["default", "other"]), st.sampled_from(HOSTILE),
                             st.text(max_size=8))
VERSION: Final = st.one_of(st.sampled_from(["v1", "v1alpha1"]), st.sampled_from(HOSTILE))

Segments = tuple[str, ...]


def segments(ref: ObjectRef, *, name: bool = True) -> Segments:
    """The path the API server must see for ``ref`` (its collection without ``name``)."""
    base: Segments = ("apis", ref.group, ref.version) if ref.group else ("api", ref.version)
    if ref.namespace:
        base += ("namespaces", ref.namespace)
    return (*base, ref.resource, ref.name) if name else (*base, ref.resource)


def as_served(raw: str) -> Segments:
    """A request target read as the API server reads it: decoded, then split."""
    return tuple(unquote(raw.split("?", 1)[0]).split("/")[1:])


class Scene:
    """What the server answers for one plan: objects that let it go as far as it can."""

    def __init__(self, plan: Plan, grant: PlanGrant) -> None:
        self.plan, self.grant = plan, grant
        self.requests: list[tuple[str, str]] = []

    def answer(self, method: str, raw: str, body: Any) -> dict[str, Any]:
        self.requests.append((method, raw))
        governor = self.plan.governor
        if method == "POST" and isinstance(body, dict) and body.get("kind") != "Eviction":
            return body
        path = as_served(raw)
        if (governor is not None and path == segments(governor)
                and path != segments(self.plan.target)):
            return self._echo(governor, GOVERNOR_UID)
        return self._echo(self.plan.target, self.plan.precondition.uid or UID)

    def _echo(self, ref: ObjectRef, uid: str) -> dict[str, Any]:
        """``ref`` as the plan names it, governed as the grant wants, whatever was asked for."""
        target = self.plan.target
        kind = self.grant.governor
        owner = self.grant.controller or ((kind.group, kind.kind) if kind else ("", "Owner"))
        governor_name = self.plan.governor.name if self.plan.governor else ""
        return {
            "apiVersion": f"{ref.group}/{ref.version}" if ref.group else ref.version,
            "kind": "Echo",
            "metadata": {
                "name": ref.name, "namespace": ref.namespace, "uid": uid,
                "resourceVersion": "5", "labels": {"app": "web"},
                "ownerReferences": [{"apiVersion": f"{owner[0]}/v1".lstrip("/"),
                                     "kind": owner[1], "name": governor_name,
                                     "uid": GOVERNOR_UID, "controller": True}],
            },
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "workloads": [{"apiVersion": f"{target.group}/{target.version}",
                               "kind": "Echo", "namespace": target.namespace,
                               "name": target.name}],
            },
        }


class Recorder(http.server.BaseHTTPRequestHandler):
    scene: Scene | None = None

    def _any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        scene = type(self).scene
        answer = scene.answer(self.command, self.path, body) if scene else {}
        data = json.dumps(answer).encode()
        self.send_response(201 if self.command == "POST" else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PATCH = do_POST = do_PUT = do_DELETE = _any

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def recording() -> Iterator[client.ApiClient]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    configuration = client.Configuration()
    configuration.host = f"http://127.0.0.1:{server.server_address[1]}"
    api = client.ApiClient(configuration)
    try:
        yield api
    finally:
        api.close()
        server.shutdown()
        server.server_close()


def patch_for(grant: PlanGrant) -> dict[str, Any]:
    """A patch writing the grant's first allowed path."""
    keys = [k.replace("*", "k") for k in (grant.writes[0] if grant.writes else ("status",))]
    patch: dict[str, Any] = {keys[-1]: "v" if keys[:2] == ["metadata", "annotations"] or
                             keys[:2] == ["metadata", "labels"] else {"phase": "Failed"}}
    for key in reversed(keys[:-1]):
        patch = {key: patch}
    return patch


FIELDS: Final = ("target.group", "target.version", "target.namespace", "target.name",
                  "governor.version", "governor.namespace", "governor.name")


@st.composite
def plans(draw: st.DrawFn) -> tuple[Plan, PlanGrant]:
    """A plan a grant covers, but for the fields drawn hostile (none, one, two, or all)."""
    grant = draw(st.sampled_from(GRANTS))
    kind = grant.governor
    assert kind is not None
    hostile = draw(st.one_of(st.just(()), st.tuples(st.sampled_from(FIELDS)),
                             st.tuples(st.sampled_from(FIELDS), st.sampled_from(FIELDS)),
                             st.just(FIELDS)))

    def field(name: str, valid: st.SearchStrategy[str], bad: st.SearchStrategy[str]) -> str:
        return draw(bad if name in hostile else valid)

    namespace = field("target.namespace", st.sampled_from(["default", "other"]), NAMESPACE)
    target = ObjectRef(
        group=field("target.group", st.just(grant.group), st.sampled_from(HOSTILE)),
        version=field("target.version", st.sampled_from(["v1", "v1alpha1"]), VERSION),
        resource=grant.resource,
        namespace=namespace if kind.namespaced or grant.relation == "named" else "",
        name=field("target.name", NAME, ANY_NAME), uid=UID)
    if grant.relation == "itself":
        governor = target
    else:
        governor = ObjectRef(
            group=kind.group,
            version=field("governor.version", st.just("v1alpha1"), VERSION),
            resource=kind.resource,
            namespace=(field("governor.namespace", st.just(target.namespace), NAMESPACE)
                       if kind.namespaced else ""),
            name=field("governor.name", NAME, ANY_NAME), uid=GOVERNOR_UID)
    obj = None
    if grant.verb == "create":
        owner = grant.controller or ("", "Owner")
        obj = {"apiVersion": "apps/v1", "kind": "Echo", "metadata": {"ownerReferences": [{
            "apiVersion": f"{owner[0]}/v1alpha1", "kind": owner[1], "name": governor.name,
            "uid": governor.uid, "controller": True}]}}
    plan = Plan(
        id="p", cluster="c1", verb=grant.verb, rule=grant.rule, target=target,
        governor=governor, object=obj,
        patch=patch_for(grant) if grant.verb in ("patch", "patch_status") else None,
        precondition=Precondition(uid=UID, seen_version=draw(st.sampled_from(["", "5"])),
                                  resource_version=draw(st.sampled_from(["", "5"]))))
    return plan, grant


def allowed(plan: Plan) -> Callable[[str, Segments], bool]:
    target = plan.target
    if plan.verb == "evict":  # a pod is evicted through the core v1 API, whatever version named
        target = msgspec.structs.replace(target, version="v1")
    own = segments(target)
    writes = {own, (*own, "status"), (*own, "eviction")}
    if plan.verb == "create":
        writes.add(segments(target, name=False))
    reads = {own} | ({segments(plan.governor)} if plan.governor is not None else set())
    return lambda method, path: path in (reads if method == "GET" else writes)


async def _no_wait(_: float) -> None:
    pass


def apply(api: client.ApiClient, plan: Plan, grant: PlanGrant) -> Scene:
    scene = Recorder.scene = Scene(plan, grant)
    applier = Applier(KubeClient(api), limiter=TokenBucket(1000, 1000), max_attempts=2,
                      sleep=_no_wait, authority=PlanAuthority(GRANTS))
    asyncio.run(applier.apply(plan))
    return scene


@settings(max_examples=250, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn=plans())
def test_every_request_is_for_the_object_the_plan_names(
    recording: client.ApiClient, drawn: tuple[Plan, PlanGrant],
) -> None:
    plan, grant = drawn
    scene = apply(recording, plan, grant)
    ok = allowed(plan)
    event("wrote" if any(m != "GET" for m, _ in scene.requests)
          else "read only" if scene.requests else "sent nothing")
    strays = [(m, raw) for m, raw in scene.requests if not ok(m, as_served(raw))]
    assert not strays, f"{plan.verb} {plan.target} sent {strays}"


def test_plans_under_valid_names_still_reach_their_object(recording: client.ApiClient) -> None:
    """The property above is not met by sending nothing: granted plans do write, each to its
    own path, and each reads its governor (here the target itself) and then its target."""
    by_verb = {(g.rule, g.verb, g.resource): g for g in GRANTS}
    rebalancer = ObjectRef(group="apps.karmada.io", version="v1alpha1",
                           resource="workloadrebalancers", name="wr-1", uid=UID)
    spread = ObjectRef(group="apps.kruise.io", version="v1alpha1", resource="workloadspreads",
                       namespace="default", name="ws.a", uid=UID)
    cases = [
        (Plan(id="d", cluster="c1", verb="delete", rule="workloadrebalancer",
              target=rebalancer, governor=rebalancer, precondition=Precondition(uid=UID)),
         by_verb["workloadrebalancer", "delete", "workloadrebalancers"],
         [("GET", "/apis/apps.karmada.io/v1alpha1/workloadrebalancers/wr-1"),  # governor
          ("GET", "/apis/apps.karmada.io/v1alpha1/workloadrebalancers/wr-1"),  # target
          ("DELETE", "/apis/apps.karmada.io/v1alpha1/workloadrebalancers/wr-1")]),
        (Plan(id="s", cluster="c1", verb="patch_status", rule="workloadspread", target=spread,
              governor=spread, patch={"status": {"observedGeneration": 2}},
              precondition=Precondition(uid=UID, resource_version="5")),
         by_verb["workloadspread", "patch_status", "workloadspreads"],
         [("GET", "/apis/apps.kruise.io/v1alpha1/namespaces/default/workloadspreads/ws.a"),
          ("GET", "/apis/apps.kruise.io/v1alpha1/namespaces/default/workloadspreads/ws.a"),
          ("PATCH",
           "/apis/apps.kruise.io/v1alpha1/namespaces/default/workloadspreads/ws.a/status")]),
    ]
    for plan, grant, sent in cases:
        assert apply(recording, plan, grant).requests == sent


def test_an_object_read_under_the_name_that_is_another_is_never_written(
    recording: client.ApiClient,
) -> None:
    """Should a server answer a plan's path with another object (another name, namespace or
    API group, as a traversal would reach), the plan is refused after the read."""
    rebalancer = ObjectRef(group="apps.karmada.io", version="v1alpha1",
                           resource="workloadrebalancers", name="wr-1", uid=UID)
    plan = Plan(id="d", cluster="c1", verb="delete", rule="workloadrebalancer",
                target=rebalancer, governor=rebalancer, precondition=Precondition(uid=UID))
    grant = next(g for g in GRANTS if (g.rule, g.verb) == ("workloadrebalancer", "delete"))
    scene = Recorder.scene = Scene(plan, grant)
    scene._echo = lambda ref, uid: {  # type: ignore[method-assign]
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "db-pass", "namespace": "victim", "uid": uid}}
    applier = Applier(KubeClient(recording), limiter=TokenBucket(1000, 1000),
                      authority=PlanAuthority(GRANTS))
    result = asyncio.run(applier.apply(plan))
    assert [m for m, _ in scene.requests] == ["GET"]
    assert result.error is not None
    assert (result.error.status, result.error.reason) == (403, "Forbidden")
    assert result.error.message.endswith("the object read is Secret victim/'db-pass', not "
                                         "workloadrebalancers apps.karmada.io/'wr-1'")
