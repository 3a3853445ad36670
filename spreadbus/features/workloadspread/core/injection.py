"""Writing a subset's scheduling constraints and patch into a new pod (Kruise's injection).

In order: the subset's tolerations are appended; ``affinity.nodeAffinity`` is created if absent
(an empty object stays even when the subset has no node constraints, as in Kruise); the preferred
terms are appended; the required term is ANDed into every existing required term (or becomes the
only term when the pod has none); the ``patch`` is applied as a strategic merge patch on the whole
pod (labels, annotations, containers merged by name, ...), and if it changed
``priorityClassName`` the stale ``spec.priority`` is dropped so the API server's priority plugin
can set it again (Kruise #1607); finally the ``matched-workloadspread`` annotation is written.

The pod is decoded JSON and is never mutated. The result is built copy-on-write: only the objects
on the paths injection changes (``spec``, ``spec.affinity.nodeAffinity`` and its terms,
``metadata.annotations``, and whatever the patch rewrites) are new; everything else, usually the
bulk of a pod (containers, volumes), is shared with the input. Deep-copying the whole pod, as an
earlier version did, cost more than the decision itself on large pods. The trade-off is that the
result must be treated as read-only, like the input. What comes from the subset is copied, so a
result never aliases the WorkloadSpread it was decided from. The RFC 6902 operations an admission
response carries are the admission decision's business (:mod:`.admission`): it diffs the pod sent
against the result once any deletion cost is written too.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from kubesemantics import strategic_merge
from spreadbus.features.workloadspread.core.model import (
    DELETION_COST_ANNOTATION,
    JSON,
    MATCHED_ANNOTATION,
    Subset,
)
from spreadbus.features.workloadspread.core.pod_state import Matched


class InjectionError(ValueError):
    """The subset's patch cannot be merged into the pod."""


def _own(parent: JSON, key: str) -> JSON:
    """``parent[key]`` replaced by a shallow copy this injection may change (a new object if it
    was missing or not an object); everything below it is still shared with the input pod."""
    value = parent.get(key)
    owned: JSON = dict(value) if isinstance(value, dict) else {}
    parent[key] = owned
    return owned


def _copied(value: Any) -> Any:
    """A deep copy of a subset's decoded JSON: a copy per container, without the memo and
    dispatch of :func:`copy.deepcopy` (which anything but JSON still goes through)."""
    kind = type(value)
    if kind is dict:
        return {key: _copied(item) for key, item in value.items()}
    if kind is list:
        return [_copied(item) for item in value]
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return value
    return copy.deepcopy(value)


def _appended(existing: Any, extra: Iterable[Any]) -> list[Any]:
    """A new list: ``existing`` (when a list) followed by copies of ``extra``."""
    return [*(existing if isinstance(existing, list) else []), *map(_copied, extra)]


def inject(pod: Mapping[str, Any], subset: Subset, *, ws_name: str, uid: str = "") -> JSON:
    """The pod with ``subset`` injected; raises :class:`InjectionError` on a bad patch."""
    out: JSON = dict(pod)
    spec = _own(out, "spec")
    if subset.tolerations:
        spec["tolerations"] = _appended(spec.get("tolerations"), subset.tolerations)
    node_affinity = _own(_own(spec, "affinity"), "nodeAffinity")
    if subset.preferred_node_selector:
        key = "preferredDuringSchedulingIgnoredDuringExecution"
        node_affinity[key] = _appended(node_affinity.get(key), subset.preferred_node_selector)
    if subset.required_node_selector is not None:
        required = _own(node_affinity, "requiredDuringSchedulingIgnoredDuringExecution")
        terms = required.get("nodeSelectorTerms")
        if not isinstance(terms, list) or not terms:
            required["nodeSelectorTerms"] = [_copied(subset.required_node_selector)]
        else:
            required["nodeSelectorTerms"] = [
                _and_term(term, subset.required_node_selector) for term in terms
            ]
    if subset.patch is not None:
        before_class = spec.get("priorityClassName")
        try:
            merged = strategic_merge.apply(out, subset.patch, strategic_merge.meta_for_kind("Pod"))
        except (strategic_merge.PatchError, TypeError, ValueError, AttributeError) as exc:
            raise InjectionError(f"failed to merge patch: {exc}") from exc
        if not isinstance(merged, dict):
            raise InjectionError("failed to merge patch: the patch deleted the pod")
        # The merge never mutates its input and shares what it leaves unchanged, like this
        # function: owning the objects changed below is enough.
        out = merged
        new_spec = _own(out, "spec")
        if new_spec.get("priorityClassName") != before_class:
            new_spec.pop("priority", None)
    annotations = _own(_own(out, "metadata"), "annotations")
    annotations[MATCHED_ANNOTATION] = Matched(
        name=ws_name, subset=subset.name, uid=uid
    ).to_annotation()
    return out


def _and_term(term: Any, selector: Mapping[str, Any]) -> Any:
    """One existing required term with the subset's expressions and fields ANDed in."""
    if not isinstance(term, dict):
        return term
    owned = dict(term)
    for name in ("matchExpressions", "matchFields"):
        extra = selector.get(name) or []
        if extra:
            owned[name] = _appended(owned.get(name), extra)
    return owned


def with_deletion_cost(pod: Mapping[str, Any], cost: int) -> JSON:
    """The pod carrying ``cost`` as its deletion-cost annotation (any value it had is replaced,
    as the planner's patch would replace it); copy-on-write like :func:`inject`."""
    out: JSON = dict(pod)
    _own(_own(out, "metadata"), "annotations")[DELETION_COST_ANNOTATION] = str(cost)
    return out

