"""Which WorkloadSpread governs a pod, and how many replicas its workload asks for.

A pod belongs to a WorkloadSpread when its controller owner chain reaches the ``targetRef``
(group, kind and name; never the version): pod -> ReplicaSet -> Deployment, pod -> CloneSet,
pod -> StatefulSet, pod -> Job, or through whitelisted custom kinds and their sub-resources. The
chain is followed through a ``lookup`` of objects the caller already holds in memory, so this stays
pure; an owner the lookup does not know is :class:`OwnerNotFound`, on which Kruise's webhook fails
the pod's creation rather than guess.

Counting differs for a whitelisted custom workload: Kruise's controller lists a target's pods by
any owner reference to its uid (``GetPodsForRef``, ``pods_finder.go``), so a pod the custom
workload owns without ``controller: true`` counts in its status (:func:`uncontrolled_owner`); the
webhook still places only pods with a controller.

``targetFilter`` narrows the pods: no filter selects every pod, a filter whose ``selector`` is
absent selects none (Kruise's ``ValidatedLabelSelectorAsSelector(nil)`` is "nothing"), ``{}``
selects all. The planner side only filters when a selector is present, as Kruise's controller
does; :func:`pod_counted_by_planner` keeps that difference explicit.

Replicas for percentages come from ``targetFilter.replicasPathList`` (summed) when set, else the
whitelist ``replicasPath`` for custom kinds, else ``spec.replicas`` (Job: ``spec.parallelism``). A
missing ``spec.replicas`` reads as 1, the Kubernetes default (Kruise dereferences a nil pointer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubesemantics import label_selector, pod_status
from kubesemantics.owner_refs import controller_ref, owner_references
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.model import (
    TargetFilter,
    WorkloadSpread,
    api_group,
    api_version_valid,
)
from spreadbus.features.workloadspread.core.pod_state import (
    namespace,
    pod_labels,
)

# (namespace, group, kind, name) -> the object, or None when it is not known.
Lookup = Callable[[str, str, str, str], Mapping[str, Any] | None]
_MAX_CHAIN = 8


class OwnerNotFound(LookupError):
    """An owner in the pod's chain is not known; the pod cannot be placed safely."""


class ReplicasPathError(ValueError):
    """A ``replicasPath`` does not lead to an integer in the workload object."""


def lookup_in(objects: Iterable[Mapping[str, Any]]) -> Lookup:
    """A lookup over a list of objects (what the offline commands and tests hold)."""
    index: dict[tuple[str, str, str, str], Mapping[str, Any]] = {}
    for obj in objects:
        meta = obj.get("metadata")
        if not isinstance(meta, Mapping):
            continue
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            continue
        ns = meta.get("namespace") or "default"
        index[(str(ns), api_group(api_version), kind, str(meta.get("name") or ""))] = obj

    def lookup(namespace: str, group: str, kind: str, name: str) -> Mapping[str, Any] | None:
        return index.get((namespace, group, kind, name))

    return lookup


def reaches_target(
    ws: WorkloadSpread,
    owner: Mapping[str, Any] | None,
    pod_namespace: str,
    *,
    lookup: Lookup,
    whitelist: Whitelist,
) -> bool:
    """``isReferenceEqual``: walk controller owners until the target or a foreign kind."""
    target = ws.target_ref
    if target is None or not api_version_valid(target.api_version):
        return False
    for _ in range(_MAX_CHAIN):
        if owner is None:
            return False
        owner_version = str(owner.get("apiVersion") or "")
        if not api_version_valid(owner_version):
            return False
        group, kind, name = api_group(owner_version), owner.get("kind"), owner.get("name")
        if (group, kind, name) == (target.group, target.kind, target.name):
            return True
        if not isinstance(kind, str) or not whitelist.owner_kind_allowed(group, kind):
            return False
        parent = lookup(pod_namespace, group, kind, str(name or ""))
        if parent is None:
            raise OwnerNotFound(f"{kind}.{group} {pod_namespace}/{name} not found")
        owner = controller_ref(parent)
    return False


def uncontrolled_owner(obj: Mapping[str, Any], whitelist: Whitelist) -> Mapping[str, Any] | None:
    """For an object without a controller: its first owner reference to a whitelisted custom
    workload, under which Kruise's controller counts it (it lists pods by owner uid)."""
    if controller_ref(obj) is not None:
        return None
    for ref in owner_references(obj):
        api_version, kind = ref.get("apiVersion"), ref.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            continue
        if api_version_valid(api_version) and whitelist.find(api_group(api_version), kind):
            return ref
    return None


def names_target(ws: WorkloadSpread, ref: Mapping[str, Any]) -> bool:
    """Whether an owner reference names ``ws``'s target (group, kind and name)."""
    target = ws.target_ref
    api_version = ref.get("apiVersion")
    if target is None or not isinstance(api_version, str) or not api_version_valid(api_version):
        return False
    return (api_group(api_version), ref.get("kind"), ref.get("name")) == (
        target.group, target.kind, target.name)


def pod_selected(target_filter: TargetFilter | None, labels: Mapping[str, str]) -> bool:
    """The webhook's ``IsPodSelected``: no filter -> yes; filter without selector -> no."""
    if target_filter is None:
        return True
    if target_filter.selector is None:
        return False
    try:
        return label_selector.matches(target_filter.selector, labels)
    except label_selector.SelectorError:
        return False


def pod_counted_by_planner(target_filter: TargetFilter | None, pod: Mapping[str, Any]) -> bool:
    """The controller filters pods only when a selector is present; only then are the pod's
    labels copied (asked of every pod a WorkloadSpread reaches, and of every admission)."""
    if target_filter is None or target_filter.selector is None:
        return True
    return pod_selected(target_filter, pod_labels(pod))


def governing_workloadspread(
    pod: Mapping[str, Any],
    spreads: Iterable[WorkloadSpread],
    *,
    lookup: Lookup,
    whitelist: Whitelist,
) -> WorkloadSpread | None:
    """The first WorkloadSpread (in the given order) that targets the pod's workload and selects it.

    Raises :class:`OwnerNotFound` when the chain cannot be followed, as Kruise fails the create.
    Inactive pods, pods without a controller, and pods whose controller kind is not supported are
    never governed.
    """
    if not pod_status.active_deleting_truthy(pod):
        return None
    owner = controller_ref(pod)
    if owner is None:
        return None
    owner_version = str(owner.get("apiVersion") or "")
    owner_kind = owner.get("kind")
    if not isinstance(owner_kind, str) or not whitelist.owner_kind_allowed(
        api_group(owner_version), owner_kind
    ):
        return None
    ns = namespace(pod)
    labels: dict[str, str] | None = None  # copied once a spread's targetFilter asks
    for ws in spreads:
        if ws.namespace != ns or ws.target_ref is None or ws.deleting:
            continue
        if not reaches_target(ws, owner, ns, lookup=lookup, whitelist=whitelist):
            continue
        if ws.target_filter is None:
            return ws
        if labels is None:
            labels = pod_labels(pod)
        if pod_selected(ws.target_filter, labels):
            return ws
    return None


def resolve_int_path(obj: object, path: str) -> int:
    """Kruise's ``NestedField[int64]`` over a dot path; numeric segments index lists."""
    if path == "":
        return 0
    current: object = obj
    for segment in path.split("."):
        if isinstance(current, Mapping):
            if segment not in current:
                raise ReplicasPathError(f'path "{segment}" not exists')
            current = current[segment]
        elif isinstance(current, list):
            try:
                index = int(segment)
            except ValueError as exc:
                raise ReplicasPathError(
                    f'strconv.Atoi: parsing "{segment}": invalid syntax'
                ) from exc
            if index < 0 or index >= len(current):
                raise ReplicasPathError(f"index {index} out of range")
            current = current[index]
        else:
            raise ReplicasPathError("object is not deep enough")
    if isinstance(current, bool) or not isinstance(current, int):
        raise ReplicasPathError("object type error")
    return current


def _spec_int(workload: Mapping[str, Any], field: str) -> int:
    spec = workload.get("spec")
    value = spec.get(field) if isinstance(spec, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def workload_replicas(
    ws: WorkloadSpread, workload: Mapping[str, Any] | None, *, whitelist: Whitelist
) -> int:
    """The total that percentages scale against; 0 when the workload does not exist.

    Raises :class:`ReplicasPathError` for a ``replicasPathList`` that does not resolve (the
    controller's error); a broken whitelist path yields 0, as Kruise logs and carries on.
    """
    if workload is None or ws.target_ref is None:
        return 0
    if ws.target_filter is not None and ws.target_filter.replicas_path_list:
        return sum(resolve_int_path(workload, p) for p in ws.target_filter.replicas_path_list)
    kind, group = ws.target_ref.kind, ws.target_ref.group
    if kind == "Job" and group == "batch":
        return _spec_int(workload, "parallelism")
    if (kind, group) in {
        ("Deployment", "apps"),
        ("ReplicaSet", "apps"),
        ("StatefulSet", "apps"),
        ("StatefulSet", "apps.kruise.io"),
        ("CloneSet", "apps.kruise.io"),
    }:
        return _spec_int(workload, "replicas")
    custom = whitelist.find(group, kind)
    if custom is None:
        return 0
    try:
        return resolve_int_path(workload, custom.replicas_path)
    except ReplicasPathError:
        return 0
