"""Applying one plan to the Kubernetes API, idempotently, ending in exactly one result.

Nothing is sent for a plan whose names are not Kubernetes names or that no grant of its rule
covers (:mod:`spreadbus.engine.plan_grants`): it fails with reason ``Forbidden`` (status 403),
logged and counted (``spreadbus_actuator_forbidden_plans_total{rule}``), the message naming the
field or the grant. Every URL comes from :func:`~spreadbus.runtime.kube_client.resource_path`,
which escapes each segment, so a plan reaches only the object its target names.

Before any write of an existing object, for every verb and grant, that object is read and must be
the one the plan names: its API group, namespace and name (else the plan is refused as above) and
its uid (another uid: it was replaced). The one exception is a planner's uid-only plan that only
sets or removes annotations or labels (a deletion cost) on an object its rule may touch without
reading (the governor itself): it is sent as a JSON patch to the object's own path that tests the
uid and writes only those keys (see :meth:`Applier._write_seen`); a refusal sends it the reading
way, and a redelivery that finds its change made is applied again rather than skipped (the write
changes nothing).

For ``patch`` and ``patch_status``: gone or replaced (another uid) means the plan can never apply
(``failed``); a patch that would change nothing means ``skipped`` (an earlier delivery, or someone
else, already made it true). "Would change nothing" is worked out the way the server would apply
the patch: JSON merge, or strategic merge with the kind's merge keys; for ``patch_status`` only
the patch's ``status`` counts, since the status endpoint ignores the rest. JSON patches are never
taken as already true. An object that moved past the version the plan was decided on (its
``resourceVersion`` precondition) fails the plan as stale, and the planner decides again from the
newer observation. Otherwise the patch is sent with the read ``resourceVersion`` as precondition,
so it lands on exactly the version we checked.

``evict`` reads the pod (gone, or replaced under its name: ``skipped``) and posts an Eviction
whose ``deleteOptions.preconditions`` are the uid and ``resourceVersion`` just read and checked.
``delete`` reads the object (gone: ``skipped``; another uid, or moved past the plan's
``resourceVersion`` precondition: ``failed``) and deletes with the same two preconditions and the
plan's ``propagationPolicy``. A delete plan without a uid fails unsent: a name alone could delete
an object created again under it. So an owner or anything else that changes between the check and
the write is caught: the 409 reads again and retries, as client-go's ``RetryOnConflict`` does
(a patch's 409 too).

``create`` posts the plan's object under the target's name to the target's collection; its
precondition is that nothing holds that name. AlreadyExists reads the object there: the same
controller owner reference (uid) as the plan's object means this plan, a redelivery of it or an
equal one already made it (``skipped``); anything else fails the plan with the API's refusal.

A grant that names an owner, or relates the target to the plan's governor by what the target is
(a pod the governor governs, an object it names), is checked on the object as read
(:mod:`services.actuator.scope_check`). A governor or chain link replaced since the decision
(another uid) fails the plan with Conflict instead. The governor and chain reads are kept briefly
and shared by a burst of plans (:mod:`services.actuator.scope_cache`); the target's own read is
never kept.

Before the target is touched, a plan that carries out a governor's decision reads the governor
(:mod:`services.actuator.governor_check`): gone, replaced, or moved on to a later generation, the
plan fails unsent and is decided again; a generation it never reached, or a create or patch whose
object does not follow from the governor as read (a UnitedDeployment's subset workload with
another template, namespace, owner or more replicas), is refused like an ungranted plan.

Errors the API will keep returning (400, 403, 404, 415, 422) fail the plan at once; retryable ones
(429, 5xx, connection failures) are retried with jittered exponential backoff up to
``max_attempts``, then the plan fails with the last error. Nothing here acks or publishes: the
caller records the :class:`Result` as the plan's one outcome.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

import msgspec
from prometheus_client import CollectorRegistry, Counter

from events.messages import ApiError, Plan
from events.messages import Result as ResultKind
from kubesemantics import strategic_merge
from retrydelay import Backoff
from services.actuator.governor_check import GovernorCheck
from services.actuator.scope_cache import KEPT_AS_DEFAULT, ScopeCache, ScopeLimits
from services.actuator.scope_check import Stale
from spreadbus.engine.governor_check import Dropped, Refusal
from spreadbus.engine.plan_grants import Granted, PlanAuthority, Refused, owner_allows
from spreadbus.engine.plan_names import misnamed, shown
from spreadbus.projection.planning import patch_satisfied
from spreadbus.runtime.kube_client import (
    BadPath,
    Conflict,
    KubeAPIError,
    KubeClient,
    NotFound,
    Unprocessable,
    resource_path,
)
from spreadbus.runtime.rate_limit import TokenBucket

CONTENT_TYPES: Final = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}
_OBJECT: Final = msgspec.json.Decoder(dict[str, Any])
MAX_BACKOFF_SECONDS: Final = 10.0
"""The longest wait between two attempts of one plan."""
CONFLICT_BACKOFF: Final = Backoff(first=0.01, cap=0.16)
"""Between attempts on an object another writer changed: short, and drawn at random."""

log = logging.getLogger(__name__)


class Result(msgspec.Struct, frozen=True, kw_only=True):
    result: ResultKind
    error: ApiError | None = None
    resource_version: str = ""
    attempts: int = 1


class Applier:
    def __init__(
        self,
        kube: KubeClient,
        *,
        limiter: TokenBucket,
        max_attempts: int = 6,
        backoff_seconds: float = 0.2,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        authority: PlanAuthority,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.monotonic,
        scope: ScopeLimits = KEPT_AS_DEFAULT,
        host: KubeClient | None = None,
        host_cluster: str = "",
    ) -> None:
        self.kube = kube
        self.limiter = limiter
        self.max_attempts = max_attempts
        self.backoff = Backoff(first=min(max(backoff_seconds, 0.0), MAX_BACKOFF_SECONDS),
                               cap=MAX_BACKOFF_SECONDS)
        self.sleep = sleep
        self.authority = authority
        self.forbidden = Counter("spreadbus_actuator_forbidden_plans",
                                 "Plans refused unsent: for another cluster, or no grant of "
                                 "their rule covers them",
                                 ["rule"], registry=registry)
        self.requests = Counter("spreadbus_actuator_api_requests",
                                "Kubernetes API requests sent, by method", ["method"],
                                registry=registry)
        self.scope = ScopeCache(lambda path: self._call("GET", path), clock=clock, limits=scope)
        self.host_scope = None if host is None else ScopeCache(
            lambda path: self._host_get(host, path), clock=clock, limits=scope)
        """Where governors that live in the host are read, for a member's actuator."""
        self.governors = GovernorCheck(self.scope, lambda path: self._call("GET", path),
                                       host=self.host_scope, host_cluster=host_cluster)

    async def apply(self, plan: Plan) -> Result:
        verdict = self.authority.authorize(plan)
        if isinstance(verdict, Refused):
            return self.refuse(plan, verdict.message)
        attempt = 0
        while True:
            attempt += 1
            try:
                result = await self._governed(plan, verdict)
                if result is None:
                    result = await self._once(plan, verdict)
                return msgspec.structs.replace(result, attempts=attempt)
            except Conflict:
                if attempt >= self.max_attempts:
                    return self._failed(Conflict(409, "Conflict", "object kept changing"), attempt)
                # Workers that lost the same object to each other must not read it again in
                # lockstep: client-go's RetryOnConflict waits a jittered 10 ms too.
                await self.sleep(CONFLICT_BACKOFF.delay(attempt))
            except KubeAPIError as exc:
                if not exc.retryable or attempt >= self.max_attempts:
                    return self._failed(exc, attempt)
                await self.sleep(self.backoff.delay(attempt))

    async def _governed(self, plan: Plan, granted: Granted) -> Result | None:
        """The outcome of a plan its governor, as the API server holds it, does not ask for."""
        verdict = await self.governors.judge(plan, granted)
        if isinstance(verdict, Refusal):
            return self.refuse(plan, f"the rule {plan.rule!r} may not {plan.verb} "
                                      f"{plan.target.resource} {plan.target.name}: "
                                      f"{verdict.message}")
        if isinstance(verdict, Dropped):
            return Result(result="failed", error=ApiError(
                status=verdict.status, reason=verdict.reason, message=verdict.message))
        return None

    def refuse(self, plan: Plan, message: str) -> Result:
        """A plan answered ``failed``/Forbidden unsent: counted, logged with the reason."""
        self.forbidden.labels(plan.rule).inc()
        t = plan.target
        log.warning("plan refused: not granted", extra={
            "plan": plan.id, "rule": plan.rule, "verb": plan.verb,
            "target": shown(f"{t.resource}.{t.group}/{t.namespace}/{t.name}", 320),
            "why": shown(message, 512)})
        return Result(result="failed", attempts=0,
                      error=ApiError(status=403, reason="Forbidden", message=message))

    @staticmethod
    def _failed(exc: KubeAPIError, attempts: int) -> Result:
        error = ApiError(status=exc.http_status, reason=exc.reason, message=exc.message)
        return Result(result="failed", error=error, attempts=attempts)

    async def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        await self.limiter.acquire()
        self.requests.labels(method).inc()
        body = await self.kube.arequest(method, path, **kwargs)
        return _OBJECT.decode(body) if body else {}

    async def _host_get(self, host: KubeClient, path: str) -> dict[str, Any]:
        """A read from the host's API server (the governor of a plan for this member)."""
        await self.limiter.acquire()
        self.requests.labels("GET").inc()
        body = await host.arequest("GET", path)
        return _OBJECT.decode(body) if body else {}

    async def _once(self, plan: Plan, granted: Granted) -> Result:
        try:
            return await self._verb(plan, granted)
        except BadPath as exc:  # the names were checked before: no path is ever guessed at
            return _unsent(str(exc))

    async def _verb(self, plan: Plan, granted: Granted) -> Result:
        if plan.verb == "evict":
            return await self._evict(plan, granted)
        if plan.verb == "create":
            return await self._create(plan)
        if plan.verb == "delete":
            return await self._delete(plan, granted)
        target = plan.target
        path = resource_path(target.group, target.version, target.resource, target.namespace,
                             target.name)
        if not granted.reads_target:
            written = await self._write_seen(plan, path)
            if written is not None:
                return written
        current = await self._call("GET", path)
        wrong = self._not_named(plan, current)
        if wrong is not None:
            return wrong
        metadata = current.get("metadata", {})
        want_uid = plan.precondition.uid or target.uid
        if want_uid and metadata.get("uid") != want_uid:
            return _replaced(metadata.get("uid"), want_uid)
        refused = await self._out_of_scope(plan, granted, current)
        if refused is not None:
            return refused
        rv = str(metadata.get("resourceVersion", ""))
        if already_true(plan, current):
            return Result(result="skipped", resource_version=rv)
        if plan.precondition.resource_version and rv != plan.precondition.resource_version:
            return _stale(rv, plan.precondition.resource_version)
        return await self._patch(plan, path, rv)

    def _not_named(self, plan: Plan, current: dict[str, Any]) -> Result | None:
        """The refusal of a plan whose target, as read, is another object than it names."""
        wrong = misnamed(plan.target, current)
        return self.refuse(plan, wrong) if wrong else None

    async def _patch(self, plan: Plan, path: str, rv: str) -> Result:
        """Send the patch, for merge and strategic patches only onto resourceVersion ``rv``."""
        body = plan.patch
        if plan.patch_type in ("merge", "strategic") and isinstance(body, dict):
            body = copy.deepcopy(body)
            body.setdefault("metadata", {})["resourceVersion"] = rv  # lands on what we checked
        subresource_path = path + "/status" if plan.verb == "patch_status" else path
        updated = await self._call("PATCH", subresource_path, body=body,
                                   content_type=CONTENT_TYPES[plan.patch_type])
        new_rv = str(updated.get("metadata", {}).get("resourceVersion", ""))
        return Result(result="applied", resource_version=new_rv)

    async def _out_of_scope(self, plan: Plan, granted: Granted,
                            current: dict[str, Any]) -> Result | None:
        """The refusal (or failure) of a plan whose target, as read, is not its governor's."""
        name = plan.target.name
        if granted.owner is not None and not owner_allows(
                granted.owner, current, name=granted.owner_name, uid=granted.owner_uid):
            named = f" {granted.owner_name!r}" if granted.owner_name else ""
            return self.refuse(plan, f"{name} is not controlled by a {granted.owner[1]}{named}")
        if granted.grant is None:
            return None
        kind = granted.grant.governor
        scope = (self.host_scope if kind is not None and kind.in_host
                 and self.host_scope is not None else self.scope)
        verdict = await scope.judge(plan, granted.grant, current)
        if isinstance(verdict, Stale):
            return Result(result="failed", error=ApiError(status=409, reason="Conflict",
                                                          message=verdict.message))
        if verdict is not None:
            return self.refuse(plan, f"the rule {plan.rule!r} may not {plan.verb} "
                                      f"{plan.target.resource} {name}: {verdict.message}")
        return None

    async def _evict(self, plan: Plan, granted: Granted) -> Result:
        target = plan.target
        try:
            current = await self._call("GET", resource_path(
                "", "v1", "pods", target.namespace, target.name))
        except NotFound:
            return Result(result="skipped")
        wrong = self._not_named(plan, current)
        if wrong is not None:
            return wrong
        want_uid = plan.precondition.uid or target.uid
        found = str(current.get("metadata", {}).get("uid", ""))
        if want_uid and found != want_uid:
            return Result(result="skipped")  # that pod is gone; another holds its name
        if granted.reads_target:
            refused = await self._out_of_scope(plan, granted, current)
            if refused is not None:
                return refused
        path = resource_path("", "v1", "pods", target.namespace, target.name, "eviction")
        eviction: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": target.name, "namespace": target.namespace},
            "deleteOptions": {"preconditions": _preconditions(found, _version(current))},
        }
        try:
            await self._call("POST", path, body=eviction, content_type="application/json")
        except NotFound:
            return Result(result="skipped")
        # A 409: the pod changed since it was checked; the caller reads it again.
        return Result(result="applied")

    async def _create(self, plan: Plan) -> Result:
        target = plan.target
        if not isinstance(plan.object, dict):
            return _unsent("a create plan carries no object")
        body = dict(plan.object)
        metadata = {k: v for k, v in body.get("metadata", {}).items() if k != "generateName"}
        metadata["name"] = target.name
        if target.namespace:
            metadata["namespace"] = target.namespace
        body["metadata"] = metadata
        collection = resource_path(target.group, target.version, target.resource,
                                   target.namespace)
        try:
            created = await self._call("POST", collection, body=body,
                                       content_type="application/json")
        except Conflict as exc:
            if exc.reason != "AlreadyExists":
                raise
            return await self._found(plan, exc)
        return Result(result="applied", resource_version=_version(created))

    async def _found(self, plan: Plan, refusal: KubeAPIError) -> Result:
        """A create refused because the name is taken: done already, or someone else's."""
        target = plan.target
        path = resource_path(target.group, target.version, target.resource, target.namespace,
                             target.name)
        try:
            current = await self._call("GET", path)
        except NotFound as exc:
            # Gone between the two requests: try the create again.
            raise Conflict(409, "Conflict", "the object holding the name went away") from exc
        ours = controller_uid(plan.object or {})
        if ours and controller_uid(current) == ours:
            return Result(result="skipped", resource_version=_version(current))
        if plan.governor_cluster and _same_annotations(plan.object or {}, current):
            # Across clusters no owner reference names the governor: its annotations do.
            return Result(result="skipped", resource_version=_version(current))
        return self._failed(refusal, 1)

    async def _delete(self, plan: Plan, granted: Granted) -> Result:
        target = plan.target
        uid = plan.precondition.uid or target.uid
        if not uid:
            return _unsent("a delete plan names no uid")
        path = resource_path(target.group, target.version, target.resource, target.namespace,
                             target.name)
        try:
            current = await self._call("GET", path)
        except NotFound:
            return Result(result="skipped")
        wrong = self._not_named(plan, current)
        if wrong is not None:
            return wrong
        found = str(current.get("metadata", {}).get("uid", ""))
        if found != uid:
            return _replaced(found, uid)
        if granted.reads_target:
            refused = await self._out_of_scope(plan, granted, current)
            if refused is not None:
                return refused
        rv = _version(current)
        if plan.precondition.resource_version and rv != plan.precondition.resource_version:
            return _stale(rv, plan.precondition.resource_version)
        options = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": _preconditions(uid, rv),
            "propagationPolicy": plan.propagation_policy,
        }
        try:
            answer = await self._call("DELETE", path, body=options,
                                      content_type="application/json")
        except NotFound:
            return Result(result="skipped")
        # A 409: the object changed since it was checked; the caller reads it again.
        return Result(result="applied", resource_version=_version(answer))

    async def _write_seen(self, plan: Plan, path: str) -> Result | None:
        """Write without reading first when the plan allows it; None: read first.

        Only a planner's uid-only plan (it names ``seen_version``: the planner found the uid and
        the patch not yet true there) that only sets or removes annotations or labels: a JSON
        patch that tests the uid and then writes just those keys, valid on any later version of
        the same object, as the uid precondition says. It reaches only the object the plan
        names: ``path`` is that object's own (names checked, every segment escaped), and the
        server applies nothing unless the object there has the plan's uid.

        A refusal (409, or 422 for a failed test, a missing map or a missing key) sends the plan
        the reading way, which tells applied, skipped and failed apart as usual.
        """
        pre = plan.precondition
        patch = plan.patch
        uid = pre.uid or plan.target.uid
        if (plan.verb != "patch" or plan.patch_type not in ("merge", "strategic")
                or not isinstance(patch, dict) or pre.resource_version or not pre.seen_version
                or not uid):
            return None
        ops = metadata_ops(patch)
        if ops is None:
            return None
        test: dict[str, Any] = {"op": "test", "path": "/metadata/uid", "value": uid}
        try:
            updated = await self._call("PATCH", path, body=[test, *ops],
                                       content_type=CONTENT_TYPES["json"])
        except (Conflict, Unprocessable):
            return None
        return Result(result="applied", resource_version=_version(updated))


def controller_uid(obj: dict[str, Any]) -> str:
    """The uid of the object's controller owner reference, or ``""``."""
    for ref in obj.get("metadata", {}).get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return str(ref.get("uid", ""))
    return ""


def _same_annotations(wanted: dict[str, Any], current: dict[str, Any]) -> bool:
    """``current`` carries every annotation of ``wanted`` (which has some), with its value."""
    mine = (wanted.get("metadata") or {}).get("annotations") or {}
    theirs = (current.get("metadata") or {}).get("annotations") or {}
    return bool(mine) and isinstance(mine, dict) and isinstance(theirs, dict) and all(
        theirs.get(k) == v for k, v in mine.items())


def _version(answer: dict[str, Any]) -> str:
    """The resourceVersion of an object the API answered with (a Status has none)."""
    if answer.get("kind") == "Status":
        return ""
    return str(answer.get("metadata", {}).get("resourceVersion", ""))


def _preconditions(uid: str, resource_version: str) -> dict[str, str]:
    """``DeleteOptions.preconditions``: the uid and version checked, as far as known."""
    return {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}


def _replaced(found: object, wanted: str) -> Result:
    """Another object holds the target's name now: the plan can never apply."""
    return Result(result="failed", error=ApiError(
        status=409, reason="Conflict", message=f"uid is {found!r}, the plan was for {wanted!r}"))


def _stale(found: str, wanted: str) -> Result:
    """The object moved past the version the plan was decided on."""
    return Result(result="failed", error=ApiError(
        status=409, reason="Conflict",
        message=f"resourceVersion is {found}, the plan required {wanted}"))


def _unsent(message: str) -> Result:
    """A plan that cannot be sent as it is: it fails without asking the API."""
    return Result(result="failed", error=ApiError(status=0, reason="Invalid", message=message))


def metadata_ops(patch: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A merge patch that only sets or removes annotations or labels, as JSON patch operations.

    None for any other patch. Each operation names one key, so nothing else in the maps is
    touched; an ``add`` fails on an object without the map, which the caller takes as "read
    first".
    """
    if set(patch) != {"metadata"} or not isinstance(patch["metadata"], dict):
        return None
    metadata = patch["metadata"]
    if not metadata or not set(metadata) <= {"annotations", "labels"}:
        return None
    ops: list[dict[str, Any]] = []
    for section, values in metadata.items():
        if not isinstance(values, dict) or not values:
            return None
        for key, value in values.items():
            pointer = f"/metadata/{section}/" + key.replace("~", "~0").replace("/", "~1")
            if value is None:
                ops.append({"op": "remove", "path": pointer})
            elif isinstance(value, str):
                ops.append({"op": "add", "path": pointer, "value": value})
            else:
                return None
    return ops


def already_true(plan: Plan, current: dict[str, Any]) -> bool:
    """Would sending the plan's patch leave ``current`` as it is?"""
    patch = plan.patch
    if not isinstance(patch, dict):
        return False
    if plan.verb == "patch_status":
        patch = {"status": patch["status"]} if "status" in patch else {}
    if plan.patch_type == "merge":
        return patch_satisfied(current, patch)
    if plan.patch_type == "strategic":
        meta = strategic_merge.meta_for_kind(str(current.get("kind", "")))
        try:
            merged = strategic_merge.apply(copy.deepcopy(current), patch, meta)
        except strategic_merge.PatchError:
            return False
        return bool(merged == current)
    return False
