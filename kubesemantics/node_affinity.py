"""Node selector terms and node affinity with upstream semantics, over plain dicts.

Terms of a node selector are ORed; the expressions and fields inside one term are ANDed. A term
with neither expressions nor fields matches nothing, and an invalid requirement (``In`` with no
values, ``Gt`` with a non-integer) makes its term match nothing, as kube-scheduler does rather
than failing the pod. ``matchFields`` supports ``metadata.name`` only, with ``In``/``NotIn``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Node = Mapping[str, Any]
Term = Mapping[str, Any]


def _labels(node: Node) -> Mapping[str, str]:
    labels: Mapping[str, str] = (node.get("metadata") or {}).get("labels") or {}
    return labels


def _as_int(value: str) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def requirement_matches(requirement: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One ``matchExpressions`` entry against a label map."""
    key = requirement.get("key") or ""
    operator = requirement.get("operator")
    values = [str(v) for v in requirement.get("values") or ()]
    present = key in labels
    if operator == "In":
        return bool(values) and present and labels[key] in values
    if operator == "NotIn":
        return bool(values) and (not present or labels[key] not in values)
    if operator == "Exists":
        return not values and present
    if operator == "DoesNotExist":
        return not values and not present
    if operator in ("Gt", "Lt"):
        if len(values) != 1 or not present:
            return False
        bound, actual = _as_int(values[0]), _as_int(labels[key])
        if bound is None or actual is None:
            return False
        return actual > bound if operator == "Gt" else actual < bound
    return False


def field_requirement_matches(requirement: Mapping[str, Any], node: Node) -> bool:
    """One ``matchFields`` entry; only ``metadata.name`` with In/NotIn and one value is valid."""
    if requirement.get("key") != "metadata.name":
        return False
    values = [str(v) for v in requirement.get("values") or ()]
    if len(values) != 1:
        return False
    name = (node.get("metadata") or {}).get("name") or ""
    operator = requirement.get("operator")
    if operator == "In":
        return name in values
    if operator == "NotIn":
        return name not in values
    return False


def is_empty_term(term: Term) -> bool:
    return not term.get("matchExpressions") and not term.get("matchFields")


def node_matches_term(node: Node, term: Term) -> bool:
    """Whether ``node`` satisfies every requirement of one node selector term."""
    if is_empty_term(term):
        return False
    labels = _labels(node)
    return all(requirement_matches(r, labels) for r in term.get("matchExpressions") or ()) and all(
        field_requirement_matches(r, node) for r in term.get("matchFields") or ()
    )


def node_matches_terms(node: Node, terms: Iterable[Term]) -> bool:
    """Whether any of the ORed terms matches."""
    return any(node_matches_term(node, term) for term in terms)


def node_matches_required(node: Node, node_selector: Mapping[str, Any] | None) -> bool:
    """A ``requiredDuringSchedulingIgnoredDuringExecution`` node selector; None matches all."""
    if node_selector is None:
        return True
    return node_matches_terms(node, node_selector.get("nodeSelectorTerms") or ())


def node_matches_selector_map(node: Node, selector: Mapping[str, str] | None) -> bool:
    """A pod's ``spec.nodeSelector``: every pair must be a label of the node."""
    labels = _labels(node)
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def preferred_score(node: Node, preferred_terms: Iterable[Mapping[str, Any]] | None) -> int:
    """Sum of the weights of the matching preferred terms; empty or weightless terms are skipped."""
    total = 0
    for term in preferred_terms or ():
        weight = int(term.get("weight") or 0)
        preference = term.get("preference") or {}
        if weight and not is_empty_term(preference) and node_matches_term(node, preference):
            total += weight
    return total


def pod_node_affinity(pod_spec: Mapping[str, Any]) -> Mapping[str, Any]:
    affinity: Mapping[str, Any] = (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    return affinity


def pod_matches_node(pod_spec: Mapping[str, Any], node: Node) -> bool:
    """nodeSelector and required node affinity together, as the NodeAffinity filter checks them."""
    if not node_matches_selector_map(node, pod_spec.get("nodeSelector")):
        return False
    required = pod_node_affinity(pod_spec).get("requiredDuringSchedulingIgnoredDuringExecution")
    return node_matches_required(node, required)
