"""The API machinery: what every request goes through, whether it came over HTTP or in-process.

:class:`ApiServer` implements the :class:`kubesim.interface.Cluster` protocol and is also what
the HTTP layer calls, so the simulated controllers and real clients share one path:

    decode -> kind/namespace checks -> version defaulting (built-in kinds; CRD schema defaults
    and pruning) -> mutating webhooks -> system fields (name from generateName, uid,
    timestamps, status reset) -> validation (422 with causes) -> validating webhooks ->
    dry-run stop -> store write (one global resourceVersion) -> watch fan-out

Graceful deletion and finalizers are decided here; the asynchronous garbage collector and
namespace controller live in :mod:`kubesim.garbage_collector`, the pod ``binding`` and
``eviction`` verbs in :mod:`kubesim.pod_subresources`.

Objects inside the store are immutable by convention; methods of the Cluster protocol copy
what they return, the HTTP layer serialises stored objects directly.

This is kubesim's one long module (about 1,200 lines): every verb shares the write pipeline,
and splitting it would spread one request's life over several files.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import re
import secrets
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import msgspec

from kubesemantics import label_selector, strategic_merge
from kubesim import (
    builtin_versions,
    errors,
    fields,
    horizontalpodautoscaler,
    jsonpatch,
    kinds,
    pod_subresources,
    schema,
)
from kubesim import crd as crds
from kubesim.admission import Admission, Attributes
from kubesim.advanced_statefulset_spec import (
    default_advanced_statefulset,
    is_advanced_statefulset,
    validate_advanced_statefulset,
)
from kubesim.conversion import Converter
from kubesim.errors import FieldError
from kubesim.garbage_collector import FOREGROUND, ORPHAN, GarbageCollector
from kubesim.interface import GVR, PRIORITYCLASSES, ApiError, PatchType, WatchEvent
from kubesim.priority import (
    PriorityRefused,
    admit_pod,
    default_priority_class,
    second_default,
    validate_priority_class,
)
from kubesim.registry import Registry, ResourceType
from kubesim.store import Event, Store, Watcher

log = logging.getLogger("kubesim")

JsonObject = dict[str, Any]
T = TypeVar("T")
Clock = Callable[[], datetime]

_decode = msgspec.json.decode
_encode = msgspec.json.encode

# Kinds defaulted and validated as pod-template workloads (selector, template, replicas).
_WORKLOADS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "CloneSet")
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
PATCH_ATTEMPTS = 5
"""How often a patch is applied again when the object changed while webhooks ran."""


class ChangedMeanwhile(ApiError):
    """409: the object was written by another request while this one waited on a webhook."""

    def __init__(self, resource: str, group: str, name: str) -> None:
        stale = errors.conflict(resource, group, name, errors.STALE)
        super().__init__(stale.code, stale.reason, stale.message, details=stale.details)


def _names_version(patch: Any) -> bool:
    """Whether a patch states the resourceVersion it applies to (then it must not be retried)."""
    if isinstance(patch, dict):
        meta = patch.get("metadata")
        return isinstance(meta, dict) and bool(meta.get("resourceVersion"))
    if isinstance(patch, list):
        return any(isinstance(op, dict) and op.get("path") == "/metadata/resourceVersion"
                   for op in patch)
    return False


def copy_json(obj: T) -> T:
    """A deep copy of a JSON-shaped value (a msgspec round trip beats ``copy.deepcopy``)."""
    copied: T = _decode(_encode(obj), type=type(obj))
    return copied


def rfc3339(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def get_path(obj: Any, path: str) -> Any:
    """Value at a ``.spec.replicas`` style path, or None."""
    cur = obj
    for part in path.strip(".").split("."):
        if not part:
            continue
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def set_path(obj: JsonObject, path: str, value: Any) -> JsonObject:
    """A copy of ``obj`` with ``path`` set (copies only the dicts along the path)."""
    parts = [p for p in path.strip(".").split(".") if p]
    out = dict(obj)
    cur = out
    for part in parts[:-1]:
        nxt = cur.get(part)
        nxt = dict(nxt) if isinstance(nxt, dict) else {}
        cur[part] = nxt
        cur = nxt
    cur[parts[-1]] = value
    return out


class ListOptions:
    """Parsed list/watch query options."""

    __slots__ = ("continue_", "field", "label", "limit", "resource_version", "rv_match")

    def __init__(
        self,
        label: label_selector.Selector | None = None,
        field: fields.Predicate | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        rv_match: str | None = None,
    ) -> None:
        self.rv_match = rv_match
        self.label = label
        self.field = field
        self.limit = limit
        self.continue_ = continue_
        self.resource_version = resource_version

    def matches(self, obj: JsonObject) -> bool:
        if self.label is not None and not self.label.matches(obj["metadata"].get("labels")):
            return False
        return self.field is None or self.field(obj)


_DECODE_ERRORS = (TypeError, AttributeError, KeyError, ValueError, IndexError, re.error)


@contextlib.contextmanager
def decoding(rt: ResourceType) -> Iterator[None]:
    """Shape errors found while defaulting or validating become the 400 a typed decode gives
    upstream (``cannot unmarshal number into Go struct field ...``) instead of a 500."""
    try:
        yield
    except ApiError:
        raise
    except _DECODE_ERRORS as e:
        raise errors.bad_request(
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
            f"the object has a field of the wrong type ({type(e).__name__}: {e})"
        ) from e


class ApiServer:
    """The in-process API server (and the :class:`~kubesim.interface.Cluster` implementation)."""

    def __init__(
        self,
        *,
        watch_history: int = 10_000,
        clock: Clock | None = None,
        max_watch_queue: int = 10_000,
        default_toleration_seconds: float = kinds.DEFAULT_TOLERATION_SECONDS,
    ) -> None:
        self.registry = Registry()
        self.default_toleration_seconds = default_toleration_seconds
        self.store = Store(history_size=watch_history)
        self.clock: Clock = clock or (lambda: datetime.now(UTC))
        self.max_watch_queue = max_watch_queue
        self.admission = Admission(self)
        self.conversion = Converter(self.admission, self._crd)
        self.gc = GarbageCollector(self)
        self.bootstrap()

    # --- lifecycle -----------------------------------------------------------------------------

    def bootstrap(self) -> None:
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            if self.store.get(("", "namespaces"), "", ns) is None:
                obj: JsonObject = {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": ns},
                }
                rt = self.rt_for(GVR("", "v1", "namespaces"))
                self._store_new(rt, self._prepare_create(rt, self._default(rt, obj), None))

    async def start(self) -> None:
        await self.gc.start()

    async def stop(self) -> None:
        self.store.close_all_watchers()
        await self.gc.stop()
        await self.admission.close()

    def now(self) -> str:
        return rfc3339(self.clock())

    # --- lookup --------------------------------------------------------------------------------

    def rt_for(self, gvr: GVR | tuple[str, str, str]) -> ResourceType:
        rt = self.registry.get(*gvr)
        if rt is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return rt

    def _ns(self, rt: ResourceType, namespace: str | None) -> str:
        if rt.namespaced:
            if not namespace:
                raise errors.bad_request("namespace is required for a namespaced resource")
            return namespace
        return ""

    def existing(self, rt: ResourceType, ns: str, name: str) -> JsonObject:
        obj = self.store.get(rt.storage_key, ns, name)
        if obj is None:
            raise errors.not_found(rt.plural, rt.group, name)
        return obj

    def versioned(self, rt: ResourceType, obj: JsonObject) -> JsonObject:
        """The stored object as the requested version (CRDs: rewrite apiVersion only).

        A CRD converted by webhook is left in its stored version: the HTTP layer converts it
        with :meth:`converted`, which needs a round trip to the webhook.
        """
        if obj.get("apiVersion") == rt.api_version:
            return obj
        if rt.custom and self.conversion.uses_webhook(rt):
            return obj
        convert = builtin_versions.converter(rt)
        if convert is not None:
            return convert(obj, rt.api_version)
        return {**obj, "apiVersion": rt.api_version}

    def _in_storage_version(
        self, rt: ResourceType, obj: JsonObject, written_in: Any
    ) -> tuple[ResourceType, JsonObject]:
        """A checked body of a built-in kind served in several versions, converted from the
        version it was written in to the storage version, with that version's type (admission,
        defaults and validation then see the stored form). Other kinds pass unchanged."""
        convert = builtin_versions.converter(rt)
        storage = self.rt_for_key(rt.storage_key) if convert is not None else None
        if convert is None or storage is None:
            return rt, obj
        source = written_in if isinstance(written_in, str) and written_in else rt.api_version
        return storage, convert({**obj, "apiVersion": source}, storage.api_version)

    async def converted(self, rt: ResourceType, objs: list[JsonObject]) -> list[JsonObject]:
        """``objs`` as ``rt``'s version, through the CRD's conversion webhook where it has one."""
        if not rt.custom:
            return objs
        return await self.conversion.convert(rt, objs, rt.api_version)

    async def _to_storage(self, rt: ResourceType, obj: JsonObject) -> JsonObject:
        if not (rt.custom and self.conversion.uses_webhook(rt)):
            return obj
        storage = self.conversion.storage_version(rt)
        return (await self.conversion.convert(rt, [obj], storage))[0] if storage else obj

    def _crd(self, name: str) -> JsonObject | None:
        return self.store.get(("apiextensions.k8s.io", "customresourcedefinitions"), "", name)

    # --- reads ---------------------------------------------------------------------------------

    def get_obj(self, rt: ResourceType, namespace: str | None, name: str) -> JsonObject:
        return self.versioned(rt, self.existing(rt, self._ns(rt, namespace), name))

    def list_objs(
        self, rt: ResourceType, namespace: str | None, opts: ListOptions
    ) -> tuple[list[JsonObject], str, str | None, int | None]:
        """(items, list resourceVersion, continue token, remainingItemCount)."""
        rv = self.store.rv
        start_after: tuple[str, str] | None = None
        if opts.continue_:
            try:
                token = _decode(_b64decode(opts.continue_))
                rv = int(token["rv"])
                start_after = (token["ns"], token["name"])
            except Exception as e:
                raise errors.bad_request(f"continue key is not valid: {e}") from e
            if rv < self.store.compacted:
                raise errors.gone(
                    "The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter, or use "
                    "the continue token in this response to retrieve the remainder of the "
                    "results. Continuing with the provided token results in an inconsistent "
                    "list - objects that were created, modified, or deleted between the time "
                    "the first chunk was returned and now may show up in the list."
                )
        elif opts.resource_version not in (None, "", "0"):
            rv = self._list_version(opts)
            start_after = None
        if rv != self.store.rv:
            bucket = self.store.snapshot(rt.storage_key, rv)
        else:
            bucket = self.store.objects.get(rt.storage_key) or {}
        keys = (
            sorted(bucket) if (opts.limit or start_after or rv != self.store.rv) else list(bucket)
        )
        items: list[JsonObject] = []
        next_token: str | None = None
        remaining: int | None = None
        idx = 0
        for idx, key in enumerate(keys):
            if start_after is not None and key <= start_after:
                continue
            if namespace and key[0] != namespace:
                continue
            obj = bucket[key]
            if not opts.matches(obj):
                continue
            if opts.limit and len(items) >= opts.limit:
                last = items[-1]["metadata"]
                next_token = _b64encode(
                    _encode({"rv": rv, "ns": last.get("namespace", ""), "name": last["name"]})
                )
                rest = keys[idx:]
                remaining = sum(
                    1
                    for k in rest
                    if (not namespace or k[0] == namespace) and opts.matches(bucket[k])
                )
                break
            items.append(self.versioned(rt, obj) if rt.custom or not rt.storage_version else obj)
        return items, str(rv), next_token, remaining

    def _list_version(self, opts: ListOptions) -> int:
        """The version a list with ``resourceVersion`` reads at: exactly it for
        ``resourceVersionMatch=Exact`` (410 once compacted), otherwise the current state,
        which is never older (a version from the future is upstream's 504 'Too large')."""
        try:
            wanted = int(str(opts.resource_version))
        except ValueError as e:
            raise errors.bad_request(f"invalid resource version: {opts.resource_version}") from e
        if opts.rv_match not in (None, "", "Exact", "NotOlderThan"):
            raise errors.bad_request(
                f'resourceVersionMatch: Unsupported value: "{opts.rv_match}": supported values: '
                '"Exact", "NotOlderThan"'
            )
        if wanted > self.store.rv:
            raise _too_large(wanted, self.store.rv)
        if opts.rv_match == "Exact":
            if wanted < self.store.compacted:
                raise errors.gone(
                    f"too old resource version: {wanted} ({self.store.compacted + 1})"
                )
            return wanted
        return self.store.rv

    # --- create --------------------------------------------------------------------------------

    def _check_body(self, rt: ResourceType, obj: Any, namespace: str) -> JsonObject:
        if not isinstance(obj, dict):
            raise errors.bad_request(f"the body of the request must be a {rt.kind} object")
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        if api_version is not None and api_version != rt.api_version:
            other = self.registry.by_kind(rt.group, str(api_version).rpartition("/")[2], rt.kind)
            if other is None or str(api_version).rpartition("/")[0] != rt.group:
                raise errors.bad_request(
                    f"the API version in the data ({api_version}) does not match the expected "
                    f"API version ({rt.api_version})"
                )
        if kind is not None and kind != rt.kind:
            raise errors.bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
            )
        meta = obj.get("metadata")
        if meta is None:
            meta = {}
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        out: JsonObject = {
            **obj,
            "apiVersion": rt.api_version,
            "kind": rt.kind,
            "metadata": dict(meta),
        }
        obj = out
        body_ns = meta.get("namespace")
        if rt.namespaced:
            if body_ns and body_ns != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            obj["metadata"]["namespace"] = namespace
        else:
            obj["metadata"].pop("namespace", None)
        return out

    def _default(self, rt: ResourceType, obj: JsonObject) -> JsonObject:
        """Version defaulting, as decoding a request body does upstream (before admission)."""
        kind = rt.kind
        if rt.custom:
            if rt.schema is not None:
                obj = schema.default_and_prune(rt.schema, obj, root=True)
            elif is_advanced_statefulset(rt):
                default_advanced_statefulset(obj)
        elif kind == "Pod":
            kinds.default_pod(obj, toleration_seconds=self.default_toleration_seconds)
        elif kind in _WORKLOADS:
            kinds.default_workload(kind, obj)
        elif kind == "Service":
            kinds.default_service(obj)
        elif kind == "HorizontalPodAutoscaler":
            horizontalpodautoscaler.default(obj)
        elif kind == "PriorityClass":
            default_priority_class(obj)
        elif kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            for w in obj.get("webhooks") or ():
                if isinstance(w, dict):
                    _default_webhook(w, mutating=kind.startswith("Mutating"))
        return obj

    def _prepare_create(
        self, rt: ResourceType, obj: JsonObject, namespace: str | None
    ) -> JsonObject:
        """System metadata and status reset for a new object (upstream's BeforeCreate, which
        runs after mutating admission: webhooks see no uid and, with generateName, no name)."""
        meta = obj["metadata"]
        if not meta.get("name"):
            gen = meta.get("generateName")
            if gen:
                meta["name"] = gen + "".join(secrets.choice(_NAME_CHARS) for _ in range(5))
        for f in (
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
            "managedFields",
        ):
            meta.pop(f, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = self.now()
        if rt.has_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        kind = rt.kind
        if rt.custom:
            if rt.status:
                obj.pop("status", None)
        elif kind == "Pod":
            kinds.initial_pod_status(obj)
        elif kind in _WORKLOADS:
            obj["status"] = {}
            kinds.default_workload_status(kind, obj)
        elif kind == "Namespace":
            kinds.prepare_namespace_create(obj)
        elif kind == "Service":
            taken = {
                str((svc.get("spec") or {}).get("clusterIP"))
                for svc in self.store.items(rt.storage_key, None)
            }
            kinds.allocate_cluster_ip(obj, taken)
            obj["status"] = {"loadBalancer": {}}
        elif kind == "PodDisruptionBudget":
            obj["status"] = {
                "disruptionsAllowed": 0,
                "currentHealthy": 0,
                "desiredHealthy": 0,
                "expectedPods": 0,
            }
        elif kind == "CustomResourceDefinition":
            obj.pop("status", None)
        elif kind == "HorizontalPodAutoscaler":
            obj["status"] = {}
            kinds.default_workload_status(kind, obj)
        return obj

    def _validate(self, rt: ResourceType, obj: JsonObject, old: JsonObject | None) -> None:
        meta = obj["metadata"]
        errs: list[FieldError] = []
        name = meta.get("name")
        if not name:
            errs.append(errors.required("metadata.name", "name or generateName is required"))
        elif not isinstance(name, str):
            errs.append(errors.invalid("metadata.name", name, "must be a string"))
        else:
            errs.extend(kinds.validate_name(rt.kind, name))
        errs.extend(kinds.validate_metadata(meta))
        kind = rt.kind
        if rt.custom and rt.schema is not None:
            errs.extend(schema.validate(rt.schema, obj, root=True))
        elif is_advanced_statefulset(rt):
            errs.extend(validate_advanced_statefulset(obj, old))
        elif kind == "Pod":
            errs.extend(kinds.validate_pod_spec(obj.get("spec"), "spec"))
            if old is not None:
                errs.extend(kinds.validate_pod_update(obj, old))
        elif kind in _WORKLOADS:
            if old is None:
                errs.extend(kinds.validate_workload(kind, obj))
            else:
                errs.extend(kinds.validate_workload_update(kind, obj, old))
            if kind == "CloneSet":
                ns = str(meta.get("namespace") or "")
                errs.extend(
                    kinds.validate_pods_to_delete(
                        obj, old, lambda pod: self.store.get(("", "pods"), ns, pod)
                    )
                )
        elif kind == "PodDisruptionBudget":
            errs.extend(kinds.validate_pdb(obj))
        elif kind == "PriorityClass":
            errs.extend(validate_priority_class(obj, old))
        elif kind == "HorizontalPodAutoscaler":
            errs.extend(horizontalpodautoscaler.validate(obj))
        elif kind == "CustomResourceDefinition":
            errs.extend(crds.validate(obj))
            if old is not None and obj.get("spec", {}).get("scope") != old["spec"].get("scope"):
                errs.append(
                    errors.invalid("spec.scope", obj["spec"].get("scope"), "field is immutable")
                )
        elif kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            errs.extend(
                kinds.validate_webhook_configuration(obj, mutating=kind.startswith("Mutating"))
            )
        elif kind == "ConfigMap":
            for k in obj.get("data") or {}:
                if not isinstance(obj["data"][k], str):
                    errs.append(errors.invalid(f"data[{k}]", obj["data"][k], "must be a string"))
        if kind in ("ConfigMap", "Secret") and old is not None and old.get("immutable"):
            errs.extend(kinds.validate_immutable_data(obj, old))
        if errs:
            raise errors.invalid_object(rt.kind, rt.group, str(name or ""), errs)

    def _strict_check(self, rt: ResourceType, obj: JsonObject, validation: str | None) -> list[str]:
        """Unknown fields for ``fieldValidation``: Strict raises, Warn returns warnings."""
        if validation not in ("Strict", "Warn") or not rt.custom or rt.schema is None:
            return []
        unknown = schema.unknown_fields(rt.schema, obj, root=True)
        if unknown and validation == "Strict":
            raise errors.bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                "strict decoding error: " + ", ".join(f'unknown field "{u}"' for u in unknown)
            )
        return [f'unknown field "{u}"' for u in unknown]

    def _check_namespace(self, rt: ResourceType, ns: str, name: str) -> None:
        if not rt.namespaced:
            return
        nsobj = self.store.get(("", "namespaces"), "", ns)
        if nsobj is None:
            raise errors.not_found("namespaces", "", ns)
        if nsobj["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(
                rt.plural,
                rt.group,
                name,
                f"unable to create new content in namespace {ns} because it is being terminated",
            )

    async def create_obj(
        self,
        rt: ResourceType,
        body: Any,
        namespace: str | None,
        *,
        dry_run: bool = False,
        field_validation: str | None = None,
        warnings: list[str] | None = None,
    ) -> JsonObject:
        if "create" not in rt.verbs:
            raise errors.method_not_allowed("create is not supported")
        ns = self._ns(rt, namespace)
        written_in = body.get("apiVersion") if isinstance(body, dict) else None
        obj = self._check_body(rt, body, ns)
        if rt.kind in _REVIEWS:
            return _REVIEWS[rt.kind](obj)
        request_rt = rt
        rt, obj = self._in_storage_version(rt, obj, written_in)
        w = self._strict_check(rt, obj, field_validation)
        if warnings is not None:
            warnings.extend(w)
        self._check_namespace(rt, ns, obj["metadata"].get("name") or "")
        self._admit_priority(rt, obj)
        with decoding(rt):
            obj = self._default(rt, obj)
        admitted = self.admission.applies("CREATE", rt)
        if admitted:
            attrs = self._create_attrs(rt, ns, obj, dry_run)
            mutated = await self.admission.mutate(attrs, obj, None)
            if mutated is not obj:
                mutated = self._check_body(rt, mutated, ns)
                with decoding(rt):
                    obj = self._default(rt, mutated)
        with decoding(rt):
            obj = self._prepare_create(rt, obj, ns)
            self._validate(rt, obj, None)
        name = obj["metadata"].get("name") or ""
        if admitted:
            await self.admission.validate(self._create_attrs(rt, ns, obj, dry_run), obj, None)
        if self.store.get(rt.storage_key, ns, name) is not None:
            raise errors.already_exists(rt.plural, rt.group, name)
        if dry_run:
            return self.versioned(request_rt, obj)
        stored = self._store_new(rt, await self._to_storage(rt, obj))
        return self.versioned(request_rt, stored)

    def _admit_priority(self, rt: ResourceType, obj: JsonObject) -> None:
        """The built-in Priority admission plugin, ahead of the webhooks as upstream orders it:
        a pod's priority from its class, one global default class."""
        if rt.custom or rt.kind not in ("Pod", "PriorityClass"):
            return
        classes_rt = self.rt_for(PRIORITYCLASSES)
        classes = list(self.store.items(classes_rt.storage_key, None))
        meta = obj["metadata"]
        name = str(meta.get("name") or meta.get("generateName") or "")
        if rt.kind == "PriorityClass":
            why = second_default(obj, classes)
            if why is not None:
                raise errors.forbidden(rt.plural, rt.group, name, why)
            return
        try:
            admit_pod(obj, {str(c["metadata"]["name"]): c for c in classes})
        except PriorityRefused as refused:
            error = errors.forbidden(rt.plural, rt.group, name, str(refused))
            error.details = {**(error.details or {}), "causes": [{
                "reason": "FieldValueNotFound", "message": str(refused),
                "field": "spec.priorityClassName"}]}
            raise error from None

    @staticmethod
    def _create_attrs(rt: ResourceType, ns: str, obj: JsonObject, dry_run: bool) -> Attributes:
        return Attributes(
            "CREATE",
            rt,
            "",
            ns,
            obj["metadata"].get("name") or "",
            dry_run,
            {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
        )

    def _store_new(self, rt: ResourceType, obj: JsonObject) -> JsonObject:
        if rt.kind == "CustomResourceDefinition":
            obj["status"] = crds.established_status(obj, self.now())
        obj["metadata"]["resourceVersion"] = str(self.store.next_rv())
        ev = self.store.write(rt.storage_key, obj, "ADDED", None)
        if rt.kind == "CustomResourceDefinition":
            self.serve_crd(obj)
        self.after_write(ev)
        return obj

    # --- update --------------------------------------------------------------------------------

    async def update_obj(
        self,
        rt: ResourceType,
        body: Any,
        namespace: str | None,
        name: str | None = None,
        *,
        subresource: str = "",
        dry_run: bool = False,
        field_validation: str | None = None,
        warnings: list[str] | None = None,
    ) -> JsonObject:
        ns = self._ns(rt, namespace)
        if subresource == "scale":
            return await self._update_scale(rt, ns, name, body, dry_run=dry_run)
        written_in = body.get("apiVersion") if isinstance(body, dict) else None
        obj = self._check_body(rt, body, ns)
        request_rt = rt
        rt, obj = self._in_storage_version(rt, obj, written_in)
        body_name = obj["metadata"].get("name")
        if name is not None and body_name != name:
            if not body_name:
                obj["metadata"]["name"] = name
            else:
                raise errors.bad_request(
                    f"the name of the object ({body_name}) does not match the name on the "
                    f"URL ({name})"
                )
        name = obj["metadata"]["name"]
        if not name:
            raise errors.invalid_object(
                rt.kind,
                rt.group,
                "",
                [errors.required("metadata.name", "name or generateName is required")],
            )
        old = self.store.get(rt.storage_key, ns, name)
        # upstream: a uid in the body is a precondition on the stored object, checked first
        _check_uid_precondition(rt, ns, name, obj, old)
        if old is None:
            if rt.create_on_update and not subresource:
                created = await self.create_obj(rt, obj, namespace, dry_run=dry_run)
                return self.versioned(request_rt, created)
            raise errors.not_found(rt.plural, rt.group, name)
        w = self._strict_check(rt, obj, field_validation)
        if warnings is not None:
            warnings.extend(w)
        rv = obj["metadata"].get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rt.plural, rt.group, name, errors.STALE)
        updated = await self.write_update(rt, old, obj, subresource, dry_run=dry_run)
        return self.versioned(request_rt, updated)

    def _merge_update(
        self, rt: ResourceType, old: JsonObject, new: JsonObject, subresource: str
    ) -> JsonObject:
        """Apply the status/main-resource split and keep system metadata from ``old``."""
        if subresource == "finalize":
            # Namespaces only: the finalize subresource writes spec.finalizers and nothing else.
            return {**old, "spec": new.get("spec") or {}, "metadata": dict(old["metadata"])}
        if subresource == "status":
            merged = dict(old)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            merged["metadata"] = _with_uid_of(new, dict(old["metadata"]), old["metadata"])
            if not rt.custom:
                kinds.default_workload_status(rt.kind, merged)
            return merged
        if rt.custom and rt.schema is not None:
            new = schema.default_and_prune(rt.schema, new, root=True)
        meta = dict(new["metadata"])
        ometa = old["metadata"]
        for f in (
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "namespace",
            "name",
        ):
            if f in ometa:
                meta[f] = ometa[f]
            else:
                meta.pop(f, None)
        meta.pop("managedFields", None)
        new = {**new, "metadata": _with_uid_of(new, meta, ometa)}
        if rt.status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        elif rt.kind == "Namespace":
            new["status"] = old.get("status")
            new["spec"] = old.get("spec")
        if rt.kind == "CustomResourceDefinition":
            new["status"] = old.get("status")
        return new

    async def write_update(
        self,
        rt: ResourceType,
        old: JsonObject,
        new: JsonObject,
        subresource: str,
        *,
        dry_run: bool = False,
        skip_admission: bool = False,
    ) -> JsonObject:
        name = old["metadata"]["name"]
        ns = old["metadata"].get("namespace", "")
        stored_old = old
        if rt.custom and self.conversion.uses_webhook(rt):
            # Merged, validated and admitted in the request's version, stored in the storage one.
            (old,) = await self.converted(rt, [old])
        with decoding(rt):
            merged = self._merge_update(rt, old, new, subresource)
            if not subresource:
                merged = self._default_workload_update(rt, merged)
            if rt.kind == "HorizontalPodAutoscaler" and subresource != "status":
                horizontalpodautoscaler.default(merged)
            if rt.kind == "Pod" and subresource != "status":
                spec = merged.get("spec")
                if isinstance(spec, dict):
                    spec = dict(spec)
                    for c in spec.get("containers") or ():
                        kinds.default_container(c)
                    # The Priority admission plugin keeps what it resolved at creation.
                    old_spec = old.get("spec") or {}
                    for key in ("priority", "preemptionPolicy"):
                        if spec.get(key) is None and key in old_spec:
                            spec[key] = old_spec[key]
                    merged["spec"] = spec
            self._validate(rt, merged, old)
        attrs = Attributes(
            "UPDATE",
            rt,
            subresource,
            ns,
            name,
            dry_run,
            {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"},
        )
        admitted = not skip_admission and self.admission.applies("UPDATE", rt, subresource)
        if admitted:
            mutated = await self.admission.mutate(attrs, merged, old)
            if mutated is not merged:
                with decoding(rt):
                    merged = self._merge_update(rt, old, mutated, subresource)
                    self._validate(rt, merged, old)
        uid = merged["metadata"].get("uid")
        if uid != old["metadata"].get("uid"):
            # upstream's BeforeUpdate, after mutating admission: the uid is immutable (a patch
            # naming a replaced object's uid, or a webhook changing it, is refused here)
            raise errors.invalid_object(
                rt.kind, rt.group, name, [errors.invalid("metadata.uid", uid, "field is immutable")]
            )
        if admitted:
            await self.admission.validate(attrs, merged, old)
        if stored_old is not old:
            merged, old = await self._to_storage(rt, merged), stored_old
        # The object may have changed while webhooks (admission, conversion) ran: writing the
        # merge of the version read before would undo that change.
        current = self.store.get(rt.storage_key, ns, name)
        if current is None:
            raise errors.not_found(rt.plural, rt.group, name)
        if current["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]:
            raise ChangedMeanwhile(rt.plural, rt.group, name)
        if rt.has_generation and _spec_changed(old, merged):
            merged["metadata"]["generation"] = int(old["metadata"].get("generation") or 1) + 1
        merged["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if merged == old:
            return self.versioned(rt, old)
        if dry_run:
            return self.versioned(rt, merged)
        meta = merged["metadata"]
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not self._grace_pending(rt, merged)
        ):
            return self.versioned(rt, self.remove(rt, merged))
        meta["resourceVersion"] = str(self.store.next_rv())
        ev = self.store.write(rt.storage_key, merged, "MODIFIED", old)
        if rt.kind == "CustomResourceDefinition":
            self.serve_crd(merged)
        self.after_write(ev)
        return self.versioned(rt, merged)

    @staticmethod
    def _default_workload_update(rt: ResourceType, obj: JsonObject) -> JsonObject:
        """A workload written by PUT or PATCH is defaulted as a created one is (upstream decodes
        every request body with defaulting): a field a patch removed comes back defaulted
        instead of reading as a forbidden change."""
        advanced = rt.custom and rt.schema is None and is_advanced_statefulset(rt)
        if not advanced and (rt.custom or rt.kind not in _WORKLOADS):
            return obj
        obj = {**obj, "spec": copy.deepcopy(obj.get("spec", {}))}
        if advanced:
            default_advanced_statefulset(obj)
        else:
            kinds.default_workload(rt.kind, obj)
        return obj

    def _grace_pending(self, rt: ResourceType, obj: JsonObject) -> bool:
        return rt.kind == "Pod" and int(obj["metadata"].get("deletionGracePeriodSeconds") or 0) > 0

    # --- patch ---------------------------------------------------------------------------------

    async def patch_obj(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        patch: Any,
        patch_type: str,
        *,
        subresource: str = "",
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool = False,
        field_validation: str | None = None,
        warnings: list[str] | None = None,
    ) -> JsonObject:
        ns = self._ns(rt, namespace)
        if patch_type == "strategic" and not rt.strategic:
            raise errors.unsupported_media_type(
                "application/strategic-merge-patch+json",
                [
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/apply-patch+yaml",
                ],
            )
        if patch_type == "apply" and not field_manager:
            raise ApiError(
                422,
                "Invalid",
                'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
                "required for apply patch",
            )
        old = self.store.get(rt.storage_key, ns, name)
        if old is None:
            if patch_type == "apply" and not subresource:
                body = dict(patch) if isinstance(patch, dict) else patch
                if isinstance(body, dict):
                    body.setdefault("metadata", {})
                    body["metadata"] = {**body["metadata"], "name": name}
                return await self.create_obj(
                    rt,
                    body,
                    namespace,
                    dry_run=dry_run,
                    field_validation=field_validation,
                    warnings=warnings,
                )
            raise errors.not_found(rt.plural, rt.group, name)
        if subresource == "scale":
            scale = self.scale_of(rt, old)
            patched = self._apply_patch(scale, patch, patch_type, strategic_merge.EMPTY)
            return await self._update_scale(rt, ns, name, patched, dry_run=dry_run)
        for attempt in range(PATCH_ATTEMPTS):
            try:
                return await self._patch_once(rt, ns, name, old, patch, patch_type,
                                              subresource=subresource, dry_run=dry_run,
                                              field_validation=field_validation,
                                              warnings=warnings)
            except ChangedMeanwhile:
                # Upstream's GuaranteedUpdate: a patch is applied again to the object as it is
                # now, unless it names the resourceVersion it was meant for.
                fresh = self.store.get(rt.storage_key, ns, name)
                if fresh is None:
                    raise errors.not_found(rt.plural, rt.group, name) from None
                if _names_version(patch) or attempt == PATCH_ATTEMPTS - 1:
                    raise
                old = fresh
        raise AssertionError("unreachable")

    async def _patch_once(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        old: JsonObject,
        patch: Any,
        patch_type: str,
        *,
        subresource: str,
        dry_run: bool,
        field_validation: str | None,
        warnings: list[str] | None,
    ) -> JsonObject:
        (current,) = await self.converted(rt, [self.versioned(rt, old)])
        patched = self._apply_patch(current, patch, patch_type, rt.patch_meta)
        if not isinstance(patched, dict):
            raise errors.bad_request("the patch must result in an object")
        w = self._strict_check(rt, patched, field_validation)
        if warnings is not None:
            warnings.extend(w)
        patched_meta = patched.get("metadata")
        if not isinstance(patched_meta, dict):
            raise errors.bad_request("metadata must be an object")
        rv = patched_meta.get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rt.plural, rt.group, name, errors.STALE)
        if patched_meta.get("name", name) != name:
            raise errors.bad_request(
                f"the name of the object ({patched_meta.get('name')}) does not match the name "
                f"on the URL ({name})"
            )
        # A patch carries no uid precondition; a uid it changes is refused as immutable after
        # mutating admission (write_update), as upstream's BeforeUpdate does.
        patched = self._check_body(rt, patched, ns)
        storage_rt, patched = self._in_storage_version(rt, patched, rt.api_version)
        updated = await self.write_update(storage_rt, old, patched, subresource, dry_run=dry_run)
        return self.versioned(rt, updated)

    def _apply_patch(
        self, current: JsonObject, patch: Any, patch_type: str, meta: strategic_merge.PatchMeta
    ) -> Any:
        try:
            if patch_type == "json":
                return jsonpatch.apply(current, patch)
            if patch_type == "merge" or patch_type == "apply":
                if not isinstance(patch, dict):
                    raise errors.bad_request("a merge patch must be a JSON object")
                return strategic_merge.merge_patch(current, patch)
            if patch_type == "strategic":
                if not isinstance(patch, dict):
                    raise errors.bad_request("a strategic merge patch must be a JSON object")
                return strategic_merge.apply(current, patch, meta)
        except (jsonpatch.JsonPatchError, strategic_merge.PatchError) as e:
            raise ApiError(422, "Invalid", str(e)) from e
        raise errors.unsupported_media_type(
            patch_type, ["application/json-patch+json", "application/merge-patch+json"]
        )

    # --- scale ---------------------------------------------------------------------------------

    def scale_of(self, rt: ResourceType, obj: JsonObject) -> JsonObject:
        if rt.scale is None:
            raise errors.not_found(rt.plural + "/scale", rt.group, obj["metadata"]["name"])
        paths = rt.scale
        meta = obj["metadata"]
        selector: str | None = None
        if paths.label_selector:
            raw = get_path(obj, paths.label_selector)
            selector = raw if isinstance(raw, str) else None
        if not rt.custom:
            sel = (obj.get("spec") or {}).get("selector")
            if isinstance(sel, dict):
                with contextlib.suppress(label_selector.SelectorError):
                    selector = label_selector.to_string(label_selector.from_label_selector(sel))
        status: JsonObject = {"replicas": int(get_path(obj, paths.status_replicas) or 0)}
        if selector is not None:
            status["selector"] = selector
        scale_meta = {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        }
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": scale_meta,
            "spec": {"replicas": int(get_path(obj, paths.spec_replicas) or 0)},
            "status": status,
        }

    async def _update_scale(
        self, rt: ResourceType, ns: str, name: str | None, body: Any, *, dry_run: bool
    ) -> JsonObject:
        if rt.scale is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a Scale object")
        name = name or (body.get("metadata") or {}).get("name")
        old = self.existing(rt, ns, str(name))
        replicas = (body.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise errors.invalid_object(
                "Scale",
                "autoscaling",
                str(name),
                [errors.invalid("spec.replicas", replicas, "must be greater than or equal to 0")],
            )
        _check_uid_precondition(rt, ns, str(name), body, old)
        rv = (body.get("metadata") or {}).get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rt.plural, rt.group, str(name), errors.STALE)
        new = set_path(old, rt.scale.spec_replicas, replicas)
        new["metadata"] = dict(old["metadata"])
        updated = await self.write_update(
            rt, old, self.versioned(rt, new), "scale", dry_run=dry_run
        )
        return self.scale_of(rt, updated)

    # --- delete --------------------------------------------------------------------------------

    async def delete_obj(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
        preconditions: Mapping[str, Any] | None = None,
        dry_run: bool = False,
        skip_admission: bool = False,
    ) -> tuple[JsonObject, bool]:
        """Delete; returns (object, removed-now)."""
        ns = self._ns(rt, namespace)
        old = self.existing(rt, ns, name)
        meta = old["metadata"]
        pre = preconditions or {}
        # upstream's BeforeDelete wording, which names the kind where other conflicts name the
        # resource
        if pre.get("uid") and pre["uid"] != meta.get("uid"):
            raise errors.conflict(
                rt.kind,
                rt.group,
                name,
                f"the UID in the precondition ({pre['uid']}) does not match the UID in record "
                f"({meta.get('uid')}). The object might have been deleted and then recreated",
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
            raise errors.conflict(
                rt.kind,
                rt.group,
                name,
                f"the ResourceVersion in the precondition ({pre['resourceVersion']}) does not "
                f"match the ResourceVersion in record ({meta.get('resourceVersion')}). The object "
                "might have been modified",
            )
        if propagation_policy not in (None, "Background", "Foreground", "Orphan"):
            raise errors.bad_request(
                f"propagationPolicy: Unsupported value: {propagation_policy!r}"
            )
        if not skip_admission and self.admission.applies("DELETE", rt):
            attrs = Attributes(
                "DELETE",
                rt,
                "",
                ns,
                name,
                dry_run,
                {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"},
            )
            await self.admission.mutate(attrs, None, old)
            await self.admission.validate(attrs, None, old)
        if dry_run:
            return self.versioned(rt, old), False

        finalizers = list(meta.get("finalizers") or [])
        grace = self._grace_for(rt, old, grace_period_seconds)
        if propagation_policy == "Foreground" and FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
        elif propagation_policy == "Orphan" and ORPHAN not in finalizers:
            finalizers.append(ORPHAN)
        if rt.kind == "Namespace":
            return self._terminate_namespace(rt, old), False

        if not finalizers and grace == 0:
            return self.versioned(rt, self.remove(rt, old)), True

        new_meta = dict(meta)
        changed = False
        if not meta.get("deletionTimestamp") or grace < int(
            meta.get("deletionGracePeriodSeconds") or 0
        ):
            new_meta["deletionTimestamp"] = rfc3339(self.clock() + timedelta(seconds=grace))
            new_meta["deletionGracePeriodSeconds"] = grace
            changed = True
        if finalizers != list(meta.get("finalizers") or []):
            new_meta["finalizers"] = finalizers
            changed = True
        if new_meta.get("deletionGracePeriodSeconds") == 0 and not finalizers:
            return self.versioned(rt, self.remove(rt, old)), True
        if not changed:
            return self.versioned(rt, old), False
        new_meta["resourceVersion"] = str(self.store.next_rv())
        new = {**old, "metadata": new_meta}
        ev = self.store.write(rt.storage_key, new, "MODIFIED", old)
        self.after_write(ev)
        if FOREGROUND in finalizers or ORPHAN in finalizers:
            self.gc.enqueue_owner(meta["uid"])
        return self.versioned(rt, new), False

    def _grace_for(self, rt: ResourceType, obj: JsonObject, requested: int | None) -> int:
        if rt.kind != "Pod":
            return 0
        spec = obj.get("spec") or {}
        if not spec.get("nodeName"):
            return 0
        if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return 0
        if requested is not None:
            return max(0, int(requested))
        return int(spec.get("terminationGracePeriodSeconds", 30) or 0)

    def remove(self, rt: ResourceType, old: JsonObject) -> JsonObject:
        gone = {
            **old,
            "metadata": {**old["metadata"], "resourceVersion": str(self.store.next_rv())},
        }
        ev = self.store.write(rt.storage_key, gone, "DELETED", old)
        if rt.kind == "CustomResourceDefinition":
            self._unserve_crd(old)
        self.after_write(ev)
        self.gc.object_removed(old)
        return gone

    async def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        opts: ListOptions,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
        dry_run: bool = False,
    ) -> list[JsonObject]:
        items, _, _, _ = self.list_objs(rt, namespace if rt.namespaced else None, opts)
        out = []
        for obj in items:
            with contextlib.suppress(ApiError):
                deleted, _ = await self.delete_obj(
                    rt,
                    obj["metadata"].get("namespace"),
                    obj["metadata"]["name"],
                    grace_period_seconds=grace_period_seconds,
                    propagation_policy=propagation_policy,
                    dry_run=dry_run,
                )
                out.append(deleted)
        return out

    # --- namespaces -----------------------------------------------------------------------------

    def _terminate_namespace(self, rt: ResourceType, old: JsonObject) -> JsonObject:
        if old["metadata"].get("deletionTimestamp"):
            return old
        meta = {**old["metadata"], "deletionTimestamp": self.now(), "deletionGracePeriodSeconds": 0}
        meta["resourceVersion"] = str(self.store.next_rv())
        new = {**old, "metadata": meta, "status": {"phase": "Terminating"}}
        ev = self.store.write(rt.storage_key, new, "MODIFIED", old)
        self.after_write(ev)
        self.gc.enqueue_namespace(meta["name"])
        return new

    def rt_for_key(self, key: tuple[str, str]) -> ResourceType | None:
        for rt in self.registry.storage_types():
            if rt.storage_key == key:
                return rt
        return None

    def after_write(self, ev: Event) -> None:
        if ev.type == "ADDED":
            self.gc.object_created(ev.obj)

    # --- CRDs ----------------------------------------------------------------------------------

    def serve_crd(self, crd: JsonObject) -> None:
        self.registry.remove_crd(crd["metadata"]["name"])
        for rt in crds.resource_types(crd):
            self.registry.add(rt)

    def _unserve_crd(self, crd: JsonObject) -> None:
        gone = self.registry.remove_crd(crd["metadata"]["name"])
        for rt in gone:
            if not rt.storage_version:
                continue
            for obj in list(self.store.items(rt.storage_key, None)):
                self.remove(rt, obj)
            for w in list(self.store.watchers.get(rt.storage_key, ())):
                w.close()

    # --- subresources: binding and eviction ----------------------------------------------------

    async def bind(
        self, namespace: str, name: str, binding: Any, *, dry_run: bool = False
    ) -> JsonObject:
        return await pod_subresources.bind(self, namespace, name, binding, dry_run=dry_run)

    async def evict(
        self, namespace: str, name: str, eviction: Any, *, dry_run: bool = False
    ) -> JsonObject:
        return await pod_subresources.evict(self, namespace, name, eviction, dry_run=dry_run)

    # --- watch ---------------------------------------------------------------------------------

    def open_watch(
        self,
        rt: ResourceType,
        namespace: str | None,
        opts: ListOptions,
        *,
        send_initial: bool | None = None,
    ) -> Watcher:
        """Register a watcher with its backlog queued; raises 410 for a compacted version."""
        w = Watcher(
            rt.storage_key,
            namespace or None,
            opts.matches if (opts.label is not None or opts.field is not None) else None,
            self.max_watch_queue,
        )
        rv_text = opts.resource_version
        if rv_text in (None, "", "0") or send_initial:
            for obj in self.store.items(rt.storage_key, namespace or None):
                if w.visible(obj):
                    w.queue.append(
                        (
                            "ADDED",
                            Event(
                                int(obj["metadata"]["resourceVersion"]),
                                rt.storage_key,
                                "ADDED",
                                obj,
                            ),
                            obj,
                        )
                    )
            if send_initial:
                w.queue.append(
                    ("BOOKMARK-INITIAL", Event(self.store.rv, rt.storage_key, "BOOKMARK", {}), {})
                )
        else:
            try:
                since = int(str(rv_text))
            except ValueError as e:
                raise errors.bad_request(f"invalid resource version: {rv_text}") from e
            if since > self.store.rv:
                raise _too_large(since, self.store.rv)
            if not self.store.replay(w, since):
                raise errors.gone(f"too old resource version: {since} ({self.store.compacted + 1})")
        self.store.add_watcher(w)
        return w

    def close_watch(self, w: Watcher) -> None:
        w.close()
        self.store.remove_watcher(w)

    # --- the Cluster protocol ------------------------------------------------------------------

    async def create(
        self,
        gvr: GVR,
        obj: JsonObject,
        *,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> JsonObject:
        if subresource:
            if gvr.resource != "pods" or not name or not namespace:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            if subresource == "binding":
                return await self.bind(namespace, name, copy_json(obj))
            if subresource == "eviction":
                return await self.evict(namespace, name, copy_json(obj))
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        rt = self.rt_for(gvr)
        return copy_json(await self.create_obj(rt, copy_json(obj), namespace))

    async def get(
        self, gvr: GVR, name: str, *, namespace: str | None = None, subresource: str | None = None
    ) -> JsonObject:
        rt = self.rt_for(gvr)
        if not subresource:
            return copy_json(self.get_obj(rt, namespace, name))
        if subresource != "scale" or rt.scale is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return copy_json(self.scale_of(rt, self.existing(rt, self._ns(rt, namespace), name)))

    def resources_for(self, group: str, kind: str) -> list[GVR]:
        versions = self.registry.groups().get(group, [])
        found = [rt for rt in self.registry if rt.group == group and rt.kind == kind]
        found.sort(key=lambda rt: versions.index(rt.version) if rt.version in versions else 0)
        return [GVR(*rt.gvr) for rt in found]

    async def list(
        self,
        gvr: GVR,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[JsonObject], str]:
        rt = self.rt_for(gvr)
        opts = self.list_options(rt, label_selector, field_selector)
        items, rv, _, _ = self.list_objs(rt, namespace, opts)
        return copy_json(items), rv

    def list_options(
        self,
        rt: ResourceType,
        label: str | None,
        field: str | None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        rv_match: str | None = None,
    ) -> ListOptions:
        try:
            sel = label_selector.parse(label) if label else None
        except label_selector.SelectorError as e:
            raise errors.bad_request(
                f"unable to parse requirement: {e}" if "unable to parse" not in str(e) else str(e)
            ) from e
        pred = fields.parse(field, rt.field_labels + rt.selectable_fields)
        return ListOptions(
            sel if sel and not sel.empty else None,
            pred,
            limit,
            continue_,
            resource_version,
            rv_match,
        )

    async def update(
        self,
        gvr: GVR,
        obj: JsonObject,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> JsonObject:
        rt = self.rt_for(gvr)
        name = (obj.get("metadata") or {}).get("name")
        return copy_json(
            await self.update_obj(
                rt, copy_json(obj), namespace, name, subresource=subresource or ""
            )
        )

    async def patch(
        self,
        gvr: GVR,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> JsonObject:
        rt = self.rt_for(gvr)
        return copy_json(
            await self.patch_obj(
                rt, namespace, name, copy_json(patch), patch_type, subresource=subresource or ""
            )
        )

    async def delete(
        self,
        gvr: GVR,
        name: str,
        *,
        namespace: str | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
        uid_precondition: str | None = None,
    ) -> JsonObject:
        rt = self.rt_for(gvr)
        obj, _ = await self.delete_obj(
            rt,
            namespace,
            name,
            grace_period_seconds=grace_period_seconds,
            propagation_policy=propagation_policy,
            preconditions={"uid": uid_precondition} if uid_precondition else None,
        )
        return copy_json(obj)

    async def watch(
        self,
        gvr: GVR,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> AsyncIterator[WatchEvent]:
        rt = self.rt_for(gvr)
        opts = self.list_options(
            rt, label_selector, field_selector, resource_version=resource_version
        )
        w = self.open_watch(rt, namespace, opts)
        try:
            while True:
                await w.wait(None)
                for kind, _ev, obj in w.drain():
                    if kind.startswith("BOOKMARK"):
                        continue
                    yield WatchEvent(kind, copy_json(self.versioned(rt, obj)))  # type: ignore[arg-type]
                if w.closed and not w.queue:
                    if w.overflowed:
                        yield WatchEvent(
                            "ERROR", errors.gone("watch fell too far behind; re-list").status()
                        )
                    return
        finally:
            self.close_watch(w)


def _access_review(obj: JsonObject) -> JsonObject:
    return {**obj, "status": {"allowed": True, "reason": "kubesim authorizes every request"}}


def _self_review(obj: JsonObject) -> JsonObject:
    from kubesim.admission import USER_INFO

    return {**obj, "status": {"userInfo": USER_INFO}}


_REVIEWS: dict[str, Callable[[JsonObject], JsonObject]] = {
    "SelfSubjectAccessReview": _access_review,
    "SelfSubjectReview": _self_review,
}


def _too_large(wanted: int, current: int) -> ApiError:
    return ApiError(
        504,
        "Timeout",
        f"Too large resource version: {wanted}, current: {current}",
        details={
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    )


def _check_uid_precondition(
    rt: ResourceType, ns: str, name: str, body: JsonObject, old: JsonObject | None
) -> None:
    """Refuse an update whose body names a uid other than the stored object's (none stored:
    any named uid fails)."""
    uid = (body.get("metadata") or {}).get("uid")
    stored = old["metadata"].get("uid", "") if old else ""
    if uid and uid != stored:
        raise errors.uid_precondition_failed(
            rt.plural, rt.group, ns, name, str(uid), stored, custom=rt.custom
        )


def _with_uid_of(new: JsonObject, meta: JsonObject, old_meta: JsonObject) -> JsonObject:
    """``meta`` with the uid ``new`` names; without one, the stored uid of ``old_meta``.
    Upstream's BeforeUpdate fills an empty uid in and leaves a named one for the immutability
    check after mutating admission."""
    uid = (new.get("metadata") or {}).get("uid")
    if uid:
        meta["uid"] = uid
    elif "uid" in old_meta:
        meta["uid"] = old_meta["uid"]
    else:
        meta.pop("uid", None)
    return meta


def _spec_changed(old: JsonObject, new: JsonObject) -> bool:
    """Everything but metadata and status counts as spec (upstream's generation rule)."""
    keys = (set(old) | set(new)) - {"metadata", "status", "apiVersion", "kind"}
    return any(old.get(k) != new.get(k) for k in keys)


def _default_webhook(w: JsonObject, *, mutating: bool) -> None:
    w.setdefault("failurePolicy", "Fail")
    w.setdefault("matchPolicy", "Equivalent")
    w.setdefault("timeoutSeconds", 10)
    w.setdefault("namespaceSelector", {})
    w.setdefault("objectSelector", {})
    if mutating:
        w.setdefault("reinvocationPolicy", "Never")
    for r in w.get("rules") or ():
        if isinstance(r, dict):
            r.setdefault("scope", "*")
    cc = w.get("clientConfig")
    if isinstance(cc, dict) and isinstance(cc.get("service"), dict):
        cc["service"].setdefault("port", 443)


def _b64encode(raw: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _b64decode(text: str) -> bytes:
    import base64

    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
