"""A budget of the host over a propagated workload: the pods of its copies in every member.

The host of member clusters holds the templates (a Deployment with all its replicas) and their
ResourceBindings but runs no pods: each member cluster runs a copy of the template with its
share, named as the template and marked with its binding (Karmada's
``resourcebinding.karmada.io/name`` and ``.../namespace`` annotations). A PodUnavailableBudget in
the host that selects the template (``targetRef``) or its pods (``selector``) is one budget
over all the clusters: its status counts the pods of every member copy against the template's
replicas.

:func:`member_inputs` gives the status computation what it needs for that, read from the
members as the planner's projection holds them: the pods of every copy of a template the host
binds in the budget's namespace and the ReplicaSets between them and a Deployment copy, with the
copy's uid in their owner references replaced by the template's, so the core finds them as the
template's own pods, exactly as Kruise's controller finds a workload's pods in one cluster. A
pod's name is its name in its member: two members' pods of one name (random suffixes that
collide) count once, which only ever counts fewer available.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from events.subjects import escape, unescape
from kubesemantics.group_version import api_group
from kubesemantics.lenient_json import as_map, as_str
from spreadbus.projection.kube_state import KubeProjection, decode_object

JSON = dict[str, Any]

BINDING_NAME: Final = "resourcebinding.karmada.io/name"
BINDING_NAMESPACE: Final = "resourcebinding.karmada.io/namespace"
"""Karmada's marks on a member's copy of a template: the binding that placed it there."""
RESOURCE_BINDINGS: Final = ("work.karmada.io", "resourcebindings")
COPY_KINDS: Final = {
    ("apps", "Deployment"): ("apps", "deployments"),
    ("apps", "StatefulSet"): ("apps", "statefulsets"),
    ("apps.kruise.io", "CloneSet"): ("apps.kruise.io", "clonesets"),
}
"""The propagated kinds whose pods the copy owns, directly or through its ReplicaSets."""


@dataclass
class MemberInputs:
    pods: list[JSON] = field(default_factory=list)
    workloads: list[JSON] = field(default_factory=list)
    """The members' ReplicaSets of Deployment copies, owned by the template as rewritten."""
    copies: int = 0
    """The member copies found."""

    @property
    def pod_uids(self) -> set[str]:
        return {as_str(as_map(p.get("metadata")).get("uid")) for p in self.pods}


def _in_namespace(view: KubeProjection, cluster: str, group: str, resource: str,
                  namespace: str) -> Iterator[JSON]:
    prefix = escape(namespace) + "."
    for key, stored in view.objects(cluster, group, resource).items():
        if key.startswith(prefix):
            yield decode_object(stored)


def _owned_by(obj: Mapping[str, Any], uids: Mapping[str, str]) -> JSON | None:
    """``obj`` with each owner reference to a uid of ``uids`` pointing at its value instead;
    None when none does."""
    metadata = as_map(obj.get("metadata"))
    refs = metadata.get("ownerReferences")
    if not isinstance(refs, list):
        return None
    moved = False
    out: list[Any] = []
    for ref in refs:
        uid = as_str(as_map(ref).get("uid"))
        if isinstance(ref, Mapping) and uid in uids:
            out.append({**ref, "uid": uids[uid]})
            moved = True
        else:
            out.append(ref)
    if not moved:
        return None
    return {**obj, "metadata": {**metadata, "ownerReferences": out}}


def bound_templates(view: KubeProjection, cluster: str,
                    namespace: str) -> list[tuple[str, Mapping[str, Any]]]:
    """(binding name, ``spec.resource``) of the bindings ``cluster`` holds in ``namespace``
    for a kind :data:`COPY_KINDS` knows."""
    out: list[tuple[str, Mapping[str, Any]]] = []
    for binding in _in_namespace(view, cluster, *RESOURCE_BINDINGS, namespace):
        resource = as_map(as_map(binding.get("spec")).get("resource"))
        kind = (api_group(as_str(resource.get("apiVersion"))), as_str(resource.get("kind")))
        if kind in COPY_KINDS and as_str(resource.get("uid")):
            out.append((as_str(as_map(binding.get("metadata")).get("name")), resource))
    return out


def member_inputs(view: KubeProjection, cluster: str, namespace: str) -> MemberInputs | None:
    """The members' pods and ReplicaSets of the templates ``cluster`` binds in ``namespace``;
    None when it binds none there (the budget is over ``cluster``'s own pods alone)."""
    bound = bound_templates(view, cluster, namespace)
    if not bound:
        return None
    out = MemberInputs()
    members = sorted(unescape(c) for c in view.clusters() if c != escape(cluster))
    for member in members:
        uids: dict[str, str] = {}
        for name, resource in bound:
            group, plural = COPY_KINDS[(api_group(as_str(resource.get("apiVersion"))),
                                        as_str(resource.get("kind")))]
            copy = view.get(member, group, plural, namespace, as_str(resource.get("name")))
            annotations = as_map(as_map(as_map(copy).get("metadata")).get("annotations"))
            if (copy is None or as_str(annotations.get(BINDING_NAME)) != name
                    or as_str(annotations.get(BINDING_NAMESPACE)) != namespace):
                continue
            out.copies += 1
            uids[as_str(as_map(copy.get("metadata")).get("uid"))] = as_str(resource.get("uid"))
        if not uids:
            continue
        owners = dict(uids)
        for replicaset in _in_namespace(view, member, "apps", "replicasets", namespace):
            moved = _owned_by(replicaset, uids)
            if moved is not None:
                out.workloads.append(moved)
                owners[as_str(as_map(replicaset.get("metadata")).get("uid"))] = as_str(
                    as_map(replicaset.get("metadata")).get("uid"))
        for pod in _in_namespace(view, member, "", "pods", namespace):
            moved = _owned_by(pod, owners)
            if moved is not None:
                out.pods.append(moved)
    return out
