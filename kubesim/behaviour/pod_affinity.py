"""Inter-pod affinity and anti-affinity (kube-scheduler's InterPodAffinity plugin), pure.

Required terms filter: a node passes a pod's affinity term when a matching pod already runs in
the node's topology domain (or, if no pod matches any term anywhere, when the pod matches its own
terms, so the first replica of a self-affine set can start); it passes an anti-affinity term when
none does; and it must not sit in a domain where an existing pod's required anti-affinity
matches the incoming pod. Preferred terms of the incoming pod add (affinity) or subtract
(anti-affinity) their weight for every matching pod in the node's domain.

A term selects pods in ``namespaces``, or in the pod's own namespace when that is empty; a
``namespaceSelector`` is read as "every namespace" (namespace labels are not consulted).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesim.behaviour.label_match import selector_matches

JsonObject = dict[str, Any]
Term = Mapping[str, Any]

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"


def _affinity(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    affinity: Mapping[str, Any] = ((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}
    return affinity


def required_terms(pod: Mapping[str, Any], kind: str) -> list[Term]:
    """``kind`` is ``podAffinity`` or ``podAntiAffinity``."""
    return list(_affinity(pod, kind).get("requiredDuringSchedulingIgnoredDuringExecution") or [])


def preferred_terms(pod: Mapping[str, Any], kind: str) -> list[Mapping[str, Any]]:
    return list(_affinity(pod, kind).get("preferredDuringSchedulingIgnoredDuringExecution") or [])


def has_required_anti_affinity(pod: Mapping[str, Any]) -> bool:
    return bool(required_terms(pod, "podAntiAffinity"))


def term_matches(term: Term, owner: Mapping[str, Any], candidate: Mapping[str, Any]) -> bool:
    """Whether ``candidate`` is selected by ``owner``'s term."""
    owner_meta = owner.get("metadata") or {}
    meta = candidate.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return False
    if term.get("namespaceSelector") is None:
        namespaces = term.get("namespaces") or [owner_meta.get("namespace")]
        if meta.get("namespace") not in namespaces:
            return False
    selector: JsonObject = dict(term.get("labelSelector") or {})
    owner_labels = owner_meta.get("labels") or {}
    keys = [k for k in term.get("matchLabelKeys") or () if k in owner_labels]
    if keys:
        selector["matchExpressions"] = [
            *(selector.get("matchExpressions") or ()),
            *({"key": k, "operator": "In", "values": [owner_labels[k]]} for k in keys),
        ]
    if term.get("labelSelector") is None and not keys:
        return False
    return selector_matches(selector, meta.get("labels"))


@dataclass
class PlacedPod:
    """An existing pod with the labels of the node it runs on."""

    pod: Mapping[str, Any]
    node_labels: Mapping[str, str]


@dataclass
class AffinityState:
    """What the filter and score need, computed once per scheduling attempt."""

    affinity: list[dict[str, int]] = field(default_factory=list)
    anti: list[dict[str, int]] = field(default_factory=list)
    affinity_terms: list[Term] = field(default_factory=list)
    anti_terms: list[Term] = field(default_factory=list)
    forbidden: dict[str, set[str]] = field(default_factory=dict)
    first_of_its_kind: bool = False


def affinity_state(
    pod: Mapping[str, Any],
    placed: Iterable[PlacedPod],
    with_anti_affinity: Iterable[PlacedPod],
) -> AffinityState | None:
    """None when neither the pod nor any existing pod has required (anti-)affinity in play."""
    affinity_terms = required_terms(pod, "podAffinity")
    anti_terms = required_terms(pod, "podAntiAffinity")
    state = AffinityState(
        affinity=[{} for _ in affinity_terms],
        anti=[{} for _ in anti_terms],
        affinity_terms=affinity_terms,
        anti_terms=anti_terms,
    )
    for other in with_anti_affinity:
        for term in required_terms(other.pod, "podAntiAffinity"):
            key = term.get("topologyKey") or ""
            if key in other.node_labels and term_matches(term, other.pod, pod):
                state.forbidden.setdefault(key, set()).add(other.node_labels[key])
    if not affinity_terms and not anti_terms:
        return state if state.forbidden else None
    for other in placed:
        for counts, term in (
            *zip(state.affinity, affinity_terms, strict=True),
            *zip(state.anti, anti_terms, strict=True),
        ):
            key = term.get("topologyKey") or ""
            if key in other.node_labels and term_matches(term, pod, other.pod):
                domain = other.node_labels[key]
                counts[domain] = counts.get(domain, 0) + 1
    state.first_of_its_kind = (
        bool(affinity_terms)
        and not any(state.affinity)
        and all(term_matches(t, pod, pod) for t in affinity_terms)
    )
    return state


def affinity_rejection(state: AffinityState, node_labels: Mapping[str, str]) -> str | None:
    """The InterPodAffinity filter's reason for rejecting a node, or None.

    Checked in upstream order: the pod's affinity, its anti-affinity, existing pods' anti-affinity.
    """
    if not state.first_of_its_kind:
        for counts, term in zip(state.affinity, state.affinity_terms, strict=True):
            domain = node_labels.get(term.get("topologyKey") or "")
            if domain is None or counts.get(domain, 0) == 0:
                return REASON_AFFINITY
    elif any((t.get("topologyKey") or "") not in node_labels for t in state.affinity_terms):
        return REASON_AFFINITY
    for counts, term in zip(state.anti, state.anti_terms, strict=True):
        domain = node_labels.get(term.get("topologyKey") or "")
        if domain is not None and counts.get(domain, 0) > 0:
            return REASON_ANTI_AFFINITY
    for key, domains in state.forbidden.items():
        if node_labels.get(key) in domains:
            return REASON_EXISTING_ANTI_AFFINITY
    return None


def preferred_affinity_scores(
    pod: Mapping[str, Any], placed: list[PlacedPod], nodes: Mapping[str, Mapping[str, str]]
) -> dict[str, int] | None:
    """Raw weight sums per node name for the pod's preferred terms; None when it has none."""
    weighted = [(1, t) for t in preferred_terms(pod, "podAffinity")] + [
        (-1, t) for t in preferred_terms(pod, "podAntiAffinity")
    ]
    if not weighted:
        return None
    by_domain: list[tuple[str, dict[str, int]]] = []
    for sign, preferred in weighted:
        term = preferred.get("podAffinityTerm") or {}
        key = term.get("topologyKey") or ""
        weight = sign * int(preferred.get("weight") or 0)
        totals: dict[str, int] = {}
        for other in placed:
            if key in other.node_labels and term_matches(term, pod, other.pod):
                domain = other.node_labels[key]
                totals[domain] = totals.get(domain, 0) + weight
        by_domain.append((key, totals))
    return {
        name: sum(totals.get(labels.get(key, "\0"), 0) for key, totals in by_domain)
        for name, labels in nodes.items()
    }
