"""Whether a plan's governor governs the object it targets, decided on objects the actuator read.

The checks of :mod:`spreadbus.engine.plan_grants` that the plan alone cannot settle: a
``governed`` pod and a ``named`` object. Everything here is pure; the actuator reads the
objects (the governor, the target, each link of a controller chain) and asks again after each
read (:func:`step`), so a chain costs one read per link and never more than :data:`MAX_HOPS`.

A link is read only under a name the API server could have given it: an owner reference is
the owner's own writing, and its name becomes a URL.

Ownership, not annotations, decides: a pod admitted while no webhook answered carries no
WorkloadSpread annotation, yet its WorkloadSpread must be able to move it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from kubesemantics.group_version import api_group
from kubesemantics.label_selector import SelectorError, from_label_selector
from kubesemantics.lenient_json import as_map, as_str
from kubesemantics.owner_refs import controller_ref
from kubesemantics.qualified_names import is_dns1123_label, is_dns1123_subdomain
from spreadbus.engine.plan_grants import PlanGrant

MAX_HOPS: Final = 3
"""Links of a controller chain read at most (pod -> ReplicaSet -> Deployment -> its owner)."""


@dataclass(frozen=True)
class Reach:
    """The object a controller chain must reach; ``uid`` empty: any uid."""

    group: str
    kind: str
    name: str
    uid: str = ""

    def __str__(self) -> str:
        return f"{self.kind} {self.name!r}"


@dataclass(frozen=True)
class Read:
    """Read this object (in the target's namespace) and ask :func:`step` again."""

    group: str
    version: str
    resource: str
    name: str
    uid: str


def field(obj: Mapping[str, Any] | None, path: str) -> Any:
    """The value at a dot path of ``obj``, or None."""
    value: Any = obj
    for key in path.split(".") if path else ():
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def uid_of(obj: Mapping[str, Any] | None) -> str:
    return as_str(field(obj, "metadata.uid"))


def chain_end(grant: PlanGrant, governor_name: str, governor_uid: str,
              governor: Mapping[str, Any] | None) -> Reach | None:
    """What the target's controller chain must reach; None: the governor names nothing."""
    if not grant.reach:
        kind = grant.governor
        if kind is None:
            return None
        return Reach(kind.group, kind.kind, governor_name, governor_uid)
    ref = as_map(field(governor, grant.reach))
    kind_name, name = as_str(ref.get("kind")), as_str(ref.get("name"))
    if not kind_name or not name:
        return None
    return Reach(api_group(as_str(ref.get("apiVersion"))), kind_name, name)


def selected(grant: PlanGrant, governor: Mapping[str, Any] | None,
             target: Mapping[str, Any]) -> bool:
    """Does the governor's label selector (a non-empty, valid one) match the target?"""
    raw = field(governor, grant.selector) if grant.selector else None
    if not isinstance(raw, Mapping) or not raw:
        return False
    labels = as_map(as_map(target.get("metadata")).get("labels"))
    try:
        return from_label_selector(raw).matches(
            {str(k): v for k, v in labels.items() if isinstance(v, str)})
    except SelectorError:
        return False


def step(grant: PlanGrant, end: Reach, obj: Mapping[str, Any]) -> Literal[True] | Read | str:
    """One link of the chain from ``obj``: True (it reaches ``end``), the next object to read,
    or why the chain stops short of ``end``."""
    metadata = as_map(obj.get("metadata"))
    here = f"{as_str(obj.get('kind')) or 'object'} {as_str(metadata.get('name'))!r}"
    ref = controller_ref(obj)
    if ref is None:
        return f"{here} has no controller, so no path to {end}"
    api_version = as_str(ref.get("apiVersion"))
    group, kind, name = api_group(api_version), as_str(ref.get("kind")), as_str(ref.get("name"))
    uid = as_str(ref.get("uid"))
    if (group, kind, name) == (end.group, end.kind, end.name) and (not end.uid or uid == end.uid):
        return True
    link = next((k for k in grant.via if (k.group, k.kind) == (group, kind)), None)
    if link is None:
        return f"{here} is controlled by {kind} {name!r}, not below {end}"
    version = api_version.rpartition("/")[2]
    if is_dns1123_subdomain(name) or is_dns1123_label(version):
        return f"{here} names its controller by {api_version!r} {name!r}, which no object has"
    return Read(group, version, link.resource, name, uid)


def named(grant: PlanGrant, governor: Mapping[str, Any] | None, target: Mapping[str, Any],
          namespace: str) -> bool:
    """Does the governor list the target, or the object the target's ``names_through`` names?

    A listed entry names ``apiVersion`` (its group counts), ``kind``, ``name`` and
    ``namespace`` (none exactly when the grant's target is cluster-scoped); ``names`` may also
    lead to a single such reference (a Karmada binding's ``spec.resource``).
    """
    listed = field(governor, grant.names)
    entries: Sequence[Any] = (listed if isinstance(listed, list)
                              else [listed] if isinstance(listed, Mapping) else ())
    wanted = [(api_group(as_str(target.get("apiVersion"))), as_str(target.get("kind")),
               namespace, as_str(as_map(target.get("metadata")).get("name")))]
    if grant.names_through:
        ref = as_map(field(target, grant.names_through))
        wanted.append((api_group(as_str(ref.get("apiVersion"))), as_str(ref.get("kind")),
                       namespace, as_str(ref.get("name"))))
    for raw in entries:
        entry = as_map(raw)
        key = (api_group(as_str(entry.get("apiVersion"))), as_str(entry.get("kind")),
               as_str(entry.get("namespace")), as_str(entry.get("name")))
        if key in wanted and key[1] and key[3] and bool(key[2]) != grant.cluster_scoped:
            return True
    return False
