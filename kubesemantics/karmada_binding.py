"""Karmada's binding semantics: which propagation policy takes a resource template, and the name
of the ResourceBinding or ClusterResourceBinding that carries it.

Two features need exactly these answers and may not import each other: propagation creates the
bindings, and WorkloadRebalancer looks a binding up by name (its ``Successful`` means a binding
exists). The engine may import no feature, so the shared, product-free layer of API semantics
is where they live; like the rest of this package it reads plain JSON and does no I/O. Read from
Karmada's ``pkg/util/names/names.go`` (``GenerateBindingName``), ``pkg/util/selector.go``
(``ResourceSelectorPriority``), ``pkg/detector/compare.go`` and ``pkg/detector/detector.go``
(the policy a template is matched with, and the namespaces the detector never propagates from).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from kubesemantics.label_selector import SelectorError, from_label_selector
from kubesemantics.lenient_json import as_int, as_map, as_str

POLICY_GROUP: Final = "policy.karmada.io"
WORK_GROUP: Final = "work.karmada.io"
PROPAGATION_POLICY: Final = "PropagationPolicy"
CLUSTER_PROPAGATION_POLICY: Final = "ClusterPropagationPolicy"
RESOURCE_BINDING: Final = "ResourceBinding"
CLUSTER_RESOURCE_BINDING: Final = "ClusterResourceBinding"

MISMATCH: Final = 0
MATCH_ALL: Final = 1
MATCH_LABEL_SELECTOR: Final = 2
MATCH_NAME: Final = 3
"""How exactly a resource selector matches (Karmada's implicit priority)."""

_SKIPPED_NAMESPACES: Final = re.compile(r"kube-.*")
"""The controller manager's default ``--skipped-propagating-namespaces``."""

CLUSTER_SCOPED: Final = frozenset({
    "ClusterRole", "ClusterRoleBinding", "Namespace", "CustomResourceDefinition",
    "PersistentVolume", "StorageClass", "PriorityClass", "Node", "IngressClass",
    "RuntimeClass", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
    "APIService", "CSIDriver", "VolumeSnapshotClass", CLUSTER_PROPAGATION_POLICY,
    CLUSTER_RESOURCE_BINDING, "Cluster", "WorkloadRebalancer", "ClusterOverridePolicy",
})
"""Kinds without a namespace; a template of any other kind written without one is in
``default``, as ``kubectl apply`` would put it."""


MEMBER_ANNOTATION: Final = "multicluster.spreadbus.io/cluster"
"""Marks an object of a member cluster in an offline input; unmarked objects are the host's,
where the templates, policies and bindings live."""


def is_member_object(obj: Mapping[str, Any]) -> bool:
    return bool(as_map(as_map(obj.get("metadata")).get("annotations")).get(MEMBER_ANNOTATION))


def binding_name(kind: str, name: str) -> str:
    """The binding's name: ``<name>-<kind>`` in lower case, every ``:`` of the name a ``.``."""
    return f"{name.replace(':', '.')}-{kind}".lower()


def group_of(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def is_kind(obj: Mapping[str, Any], group: str, kind: str) -> bool:
    return as_str(obj.get("kind")) == kind and group_of(as_str(obj.get("apiVersion"))) == group


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_map(obj.get("metadata"))


def template_namespace(obj: Mapping[str, Any]) -> str:
    """The namespace of a template: empty for a cluster-scoped kind, ``default`` if unset."""
    if as_str(obj.get("kind")) in CLUSTER_SCOPED:
        return ""
    return as_str(_metadata(obj).get("namespace")) or "default"


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return {k: v for k, v in as_map(_metadata(obj).get("labels")).items()
            if isinstance(k, str) and isinstance(v, str)}


def selector_priority(obj: Mapping[str, Any], selector: Mapping[str, Any]) -> int:
    """How one ``resourceSelectors`` entry matches a template: the apiVersion (exactly), kind
    and namespace (when set) must match; then a name decides alone, else a label selector, and
    a selector with neither matches all."""
    metadata = _metadata(obj)
    if (as_str(obj.get("apiVersion")) != as_str(selector.get("apiVersion"))
            or as_str(obj.get("kind")) != as_str(selector.get("kind"))):
        return MISMATCH
    namespace = as_str(selector.get("namespace"))
    if namespace and template_namespace(obj) != namespace:
        return MISMATCH
    name = as_str(selector.get("name"))
    if name:
        return MATCH_NAME if name == as_str(metadata.get("name")) else MISMATCH
    label_selector = selector.get("labelSelector")
    if label_selector is None:
        return MATCH_ALL
    if not isinstance(label_selector, Mapping):
        return MISMATCH
    try:
        chosen = from_label_selector(label_selector).matches(_labels(obj))
    except SelectorError:
        return MISMATCH
    return MATCH_LABEL_SELECTOR if chosen else MISMATCH


def policy_priority(obj: Mapping[str, Any], policy: Mapping[str, Any]) -> int:
    """The best match among the policy's resource selectors."""
    selectors = as_map(policy.get("spec")).get("resourceSelectors")
    if not isinstance(selectors, list):
        return MISMATCH
    return max((selector_priority(obj, s) for s in selectors if isinstance(s, Mapping)),
               default=MISMATCH)


def explicit_priority(policy: Mapping[str, Any]) -> int:
    return as_int(as_map(policy.get("spec")).get("priority")) or 0


def propagated_namespace(namespace: str) -> bool:
    """Whether the detector looks at templates of this namespace at all (Karmada's reserved
    namespaces and the default skipped ``kube-*`` are never propagated from)."""
    return not (namespace in ("karmada-system", "karmada-cluster")
                or namespace.startswith("karmada-es-")
                or _SKIPPED_NAMESPACES.fullmatch(namespace) is not None)


def _best(obj: Mapping[str, Any], policies: Iterable[Mapping[str, Any]]
          ) -> Mapping[str, Any] | None:
    """Highest explicit priority, then the most exact selector, then the first name."""
    best: Mapping[str, Any] | None = None
    best_key: tuple[int, int] = (0, 0)
    for policy in policies:
        if _metadata(policy).get("deletionTimestamp"):
            continue
        implicit = policy_priority(obj, policy)
        if implicit == MISMATCH:
            continue
        key = (explicit_priority(policy), implicit)
        name = as_str(_metadata(policy).get("name"))
        if (best is None or key > best_key
                or (key == best_key and name < as_str(_metadata(best).get("name")))):
            best, best_key = policy, key
    return best


def policies_of(objects: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The (Cluster)PropagationPolicies among ``objects``: what :func:`matching_policy` reads of
    them, picked out once for many templates (scanning every object per template made a round
    over 10,000 bindings quadratic)."""
    return [o for o in objects if is_kind(o, POLICY_GROUP, PROPAGATION_POLICY)
            or is_kind(o, POLICY_GROUP, CLUSTER_PROPAGATION_POLICY)]


def matching_policy(obj: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]
                    ) -> Mapping[str, Any] | None:
    """The (Cluster)PropagationPolicy that takes ``obj``: a PropagationPolicy of the template's
    namespace first, else a ClusterPropagationPolicy; None when none selects it."""
    if group_of(as_str(obj.get("apiVersion"))).endswith("karmada.io"):
        return None  # Karmada's own objects are not templates
    namespace = template_namespace(obj)
    if not propagated_namespace(namespace):
        return None
    if namespace:
        local = _best(obj, (p for p in objects
                            if is_kind(p, POLICY_GROUP, PROPAGATION_POLICY)
                            and (as_str(_metadata(p).get("namespace")) or "default") == namespace))
        if local is not None:
            return local
    return _best(obj, (p for p in objects if is_kind(p, POLICY_GROUP, CLUSTER_PROPAGATION_POLICY)))


def binding_exists(objects: Sequence[Mapping[str, Any]], kind: str, name: str,
                   namespace: str) -> bool:
    """Whether Karmada would hold the binding named for ``kind``/``name``: one is among the
    host's objects (a ResourceBinding in ``namespace``, or a ClusterResourceBinding when it is
    empty), or a policy among them selects a template of that kind and name there."""
    wanted = binding_name(kind, name)
    objects = [o for o in objects if not is_member_object(o)]
    for obj in objects:
        metadata = _metadata(obj)
        if as_str(metadata.get("name")) != wanted:
            continue
        if namespace and is_kind(obj, WORK_GROUP, RESOURCE_BINDING):
            if (as_str(metadata.get("namespace")) or "default") == namespace:
                return True
        elif not namespace and is_kind(obj, WORK_GROUP, CLUSTER_RESOURCE_BINDING):
            return True
    policies = policies_of(objects)
    for obj in objects:
        metadata = _metadata(obj)
        if (as_str(obj.get("kind")) == kind and as_str(metadata.get("name")) == name
                and template_namespace(obj) == namespace
                and matching_policy(obj, policies) is not None):
            return True
    return False
