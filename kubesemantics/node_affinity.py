"""Node selector terms and node affinity with upstream semantics, over plain dicts.

Terms of a node selector are ORed; the expressions and fields inside one term are ANDed. A term
with neither expressions nor fields matches nothing (and a selector with no terms selects no
node). ``matchExpressions`` compile to a label selector through :mod:`label_selector`, so they
obey the same rules as upstream's ``NewRequirement``: ``Gt``/``Lt`` compare integers, and an
invalid requirement (``In`` with no values, ``Exists`` with values, ``Gt`` with a non-integer
bound, a malformed key or value, an unknown operator) makes its whole term match nothing, as
kube-scheduler does rather than failing the pod. ``matchFields`` take ``In``/``NotIn`` with one
value each and compare it with the node's ``metadata.name`` (any other field reads as empty; the
API refuses other keys); a node without a name skips them, as upstream does.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubesemantics import label_selector as ls

Node = Mapping[str, Any]
Term = Mapping[str, Any]


def _labels(node: Node) -> Mapping[str, str]:
    labels: Mapping[str, str] = (node.get("metadata") or {}).get("labels") or {}
    return labels


_LABEL_OPERATORS: dict[str, ls.Operator] = {
    "In": "in",
    "NotIn": "notin",
    "Exists": "exists",
    "DoesNotExist": "!",
    "Gt": "gt",
    "Lt": "lt",
}


def _values(requirement: Mapping[str, Any]) -> list[str]:
    return [str(v) for v in requirement.get("values") or ()]


def requirements_as_selector(requirements: Sequence[Mapping[str, Any]] | None) -> ls.Selector:
    """``matchExpressions`` as one label selector; none at all selects nothing.

    Raises :class:`~kubesemantics.label_selector.SelectorError` for an unknown operator or a
    requirement ``NewRequirement`` refuses (bad key or value, wrong number of values).
    """
    if not requirements:
        return ls.MATCH_NOTHING
    compiled = [
        _compiled(str(r.get("key") or ""), str(r.get("operator")), tuple(_values(r)))
        for r in requirements
    ]
    return ls.Selector(tuple(sorted(compiled, key=lambda r: r.key)))


@functools.lru_cache(maxsize=4096)
def _compiled(key: str, operator: str, values: tuple[str, ...]) -> ls.Requirement:
    """One checked requirement; cached because the scheduler asks about every node."""
    if operator not in _LABEL_OPERATORS:
        raise ls.SelectorError(f"operator: Unsupported value: {operator!r}")
    return ls.new_requirement(key, _LABEL_OPERATORS[operator], values)


def _field_requirement_valid(requirement: Mapping[str, Any]) -> bool:
    return requirement.get("operator") in ("In", "NotIn") and len(_values(requirement)) == 1


def field_requirement_matches(requirement: Mapping[str, Any], node: Node) -> bool:
    """One ``matchFields`` entry: In/NotIn with exactly one value, compared with the node's
    field (only ``metadata.name`` is known; any other field reads as empty)."""
    if not _field_requirement_valid(requirement):
        return False
    name = (node.get("metadata") or {}).get("name") or ""
    fields = {"metadata.name": name} if name else {}
    actual = fields.get(str(requirement.get("key") or ""), "")
    (value,) = _values(requirement)
    return actual == value if requirement.get("operator") == "In" else actual != value


def is_empty_term(term: Term) -> bool:
    return not term.get("matchExpressions") and not term.get("matchFields")


def node_matches_term(node: Node, term: Term) -> bool:
    """Whether ``node`` satisfies every requirement of one node selector term."""
    if is_empty_term(term):
        return False
    expressions = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    try:
        selector = requirements_as_selector(expressions) if expressions else None
    except ls.SelectorError:
        return False
    if not all(_field_requirement_valid(r) for r in fields):
        return False
    if selector is not None and not selector.matches(_labels(node)):
        return False
    if not (node.get("metadata") or {}).get("name"):
        return True
    return all(field_requirement_matches(r, node) for r in fields)


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
