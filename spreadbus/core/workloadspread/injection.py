"""Writing a subset's scheduling constraints and patch into a new pod (Kruise's injection).

In order: the subset's tolerations are appended; ``affinity.nodeAffinity`` is created if absent
(an empty object stays even when the subset has no node constraints, as in Kruise); the preferred
terms are appended; the required term is ANDed into every existing required term (or becomes the
only term when the pod has none); the ``patch`` is applied as a strategic merge patch on the whole
pod (labels, annotations, containers merged by name, ...), and if it changed
``priorityClassName`` the stale ``spec.priority`` is dropped so the API server's priority plugin
can set it again (Kruise #1607); finally the ``matched-workloadspread`` annotation is written.

The pod is decoded JSON and is never mutated; the result is a new object, and
:func:`inject_with_patch` also returns the RFC 6902 operations an admission response carries.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from spreadbus.core import strategic_merge
from spreadbus.core.workloadspread import json_patch
from spreadbus.core.workloadspread.model import JSON, MATCHED_ANNOTATION, Subset
from spreadbus.core.workloadspread.pod_state import Matched


class InjectionError(ValueError):
    """The subset's patch cannot be merged into the pod."""


def _obj(parent: JSON, key: str) -> JSON:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def inject(pod: Mapping[str, Any], subset: Subset, *, ws_name: str, uid: str = "") -> JSON:
    """The pod with ``subset`` injected; raises :class:`InjectionError` on a bad patch."""
    out: JSON = copy.deepcopy(dict(pod))
    spec = _obj(out, "spec")
    if subset.tolerations:
        existing = spec.get("tolerations")
        spec["tolerations"] = [*(existing if isinstance(existing, list) else [])] + [
            copy.deepcopy(t) for t in subset.tolerations
        ]
    node_affinity = _obj(_obj(spec, "affinity"), "nodeAffinity")
    if subset.preferred_node_selector:
        key = "preferredDuringSchedulingIgnoredDuringExecution"
        existing = node_affinity.get(key)
        node_affinity[key] = [*(existing if isinstance(existing, list) else [])] + [
            copy.deepcopy(t) for t in subset.preferred_node_selector
        ]
    if subset.required_node_selector is not None:
        required = _obj(node_affinity, "requiredDuringSchedulingIgnoredDuringExecution")
        terms = required.get("nodeSelectorTerms")
        if not isinstance(terms, list) or not terms:
            required["nodeSelectorTerms"] = [copy.deepcopy(subset.required_node_selector)]
        else:
            extra_exprs = subset.required_node_selector.get("matchExpressions") or []
            extra_fields = subset.required_node_selector.get("matchFields") or []
            for term in terms:
                if not isinstance(term, dict):
                    continue
                for name, extra in (
                    ("matchExpressions", extra_exprs),
                    ("matchFields", extra_fields),
                ):
                    if extra:
                        current = term.get(name)
                        term[name] = [*(current if isinstance(current, list) else [])] + [
                            copy.deepcopy(e) for e in extra
                        ]
    if subset.patch is not None:
        before_class = spec.get("priorityClassName")
        try:
            merged = strategic_merge.apply(out, subset.patch, strategic_merge.meta_for_kind("Pod"))
        except (strategic_merge.PatchError, TypeError, ValueError, AttributeError) as exc:
            raise InjectionError(f"failed to merge patch: {exc}") from exc
        if not isinstance(merged, dict):
            raise InjectionError("failed to merge patch: the patch deleted the pod")
        out = copy.deepcopy(merged)
        new_spec = _obj(out, "spec")
        if new_spec.get("priorityClassName") != before_class:
            new_spec.pop("priority", None)
    annotations = _obj(_obj(out, "metadata"), "annotations")
    annotations[MATCHED_ANNOTATION] = Matched(
        name=ws_name, subset=subset.name, uid=uid
    ).to_annotation()
    return out


def inject_with_patch(
    pod: Mapping[str, Any], subset: Subset, *, ws_name: str, uid: str = ""
) -> tuple[JSON, list[JSON]]:
    """The injected pod and the JSON Patch that produces it from ``pod``."""
    injected = inject(pod, subset, ws_name=ws_name, uid=uid)
    return injected, json_patch.diff(dict(pod), injected)
