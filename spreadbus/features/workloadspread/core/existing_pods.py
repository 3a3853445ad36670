"""Putting pods into subset buckets, including pods that were never admitted by a subset.

A pod annotated for this WorkloadSpread belongs to the subset it names (a subset no longer in the
spec sends it to the fake bucket, whose pods are the first to go on scale-in). Any other pod (made
before the WorkloadSpread existed, or annotated for another one) is matched by where it runs, as
Kruise's controller does: its node must exist, carry no taint the pod and subset tolerations do not
tolerate, and match the pod's required node terms with the subset's term ANDed in. Among matching
subsets the highest score wins, ties going to the earlier subset:
``100 x`` (weights of the subset's preferred terms that match the node) ``+ 10 x`` (the subset
patch would not change the pod apart from annotations) ``+ 1 x`` (the subset still has quota).

Quota is per version: maxReplicas scaled against the workload's replicas, minus the pods already
annotated into the subset, minus the pods matched so far. A matched pod is then annotated (and,
unless the WorkloadSpread opts out, given the ``metadata`` of the subset patch); those writes are
returned as merge patches for the actuator rather than performed.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from kubesemantics import node_affinity, strategic_merge, tolerations
from kubesemantics.intstr import IntOrStrError, scaled_value
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.model import (
    FAKE_SUBSET,
    IGNORE_PATCH_EXISTING_ANNOTATION,
    JSON,
    MATCHED_ANNOTATION,
    UNSTEERED_ANNOTATION,
    Subset,
    WorkloadSpread,
)
from spreadbus.features.workloadspread.core.occupancy import Occupant, occupant, subset_names
from spreadbus.features.workloadspread.core.pod_state import Matched, Pod

INT32_MAX = 2**31 - 1


class Grouping(msgspec.Struct, frozen=True):
    """Pods per subset (spec subsets plus :data:`FAKE_SUBSET`) and the annotations to write."""

    buckets: dict[str, list[JSON]]
    # pod "namespace/name" -> strategic merge patch of its metadata
    pod_patches: dict[str, JSON] = msgspec.field(default_factory=dict)


def _required_terms(pod: Pod) -> list[JSON]:
    spec = pod.get("spec")
    affinity = node_affinity.pod_node_affinity(spec if isinstance(spec, Mapping) else {})
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    return [dict(t) for t in terms if isinstance(t, Mapping)] if isinstance(terms, list) else []


def _pod_tolerations(pod: Pod) -> list[Mapping[str, Any]]:
    spec = pod.get("spec")
    tols = spec.get("tolerations") if isinstance(spec, Mapping) else None
    return [t for t in tols if isinstance(t, Mapping)] if isinstance(tols, list) else []


def _node_taints(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = node.get("spec")
    taints = spec.get("taints") if isinstance(spec, Mapping) else None
    return [t for t in taints if isinstance(t, Mapping)] if isinstance(taints, list) else []


def fits_subset(pod: Pod, node: Mapping[str, Any], subset: Subset) -> bool:
    """Every node taint tolerated, and the node matches the pod's terms ANDed with the subset's."""
    tols = [*_pod_tolerations(pod), *subset.tolerations]
    if any(not tolerations.tolerates(tols, taint) for taint in _node_taints(node)):
        return False
    if subset.required_node_selector is None:
        return True
    extra = subset.required_node_selector
    terms = _required_terms(pod)
    if not terms:
        terms = [copy.deepcopy(extra)]
    else:
        for term in terms:
            for field in ("matchExpressions", "matchFields"):
                added = extra.get(field) or []
                if added:
                    term[field] = [*(term.get(field) or []), *added]
    return node_affinity.node_matches_terms(node, terms)


def _patch_is_noop(pod: Pod, subset: Subset) -> bool:
    if subset.patch is None:
        return False
    try:
        patched = strategic_merge.apply(pod, subset.patch, strategic_merge.meta_for_kind("Pod"))
    except (strategic_merge.PatchError, TypeError, ValueError, AttributeError):
        return False
    if not isinstance(patched, dict):
        return False
    patched = copy.deepcopy(patched)
    meta = patched.setdefault("metadata", {})
    original_annotations = pod_state.metadata(pod).get("annotations")
    if original_annotations is None:
        meta.pop("annotations", None)
    else:
        meta["annotations"] = original_annotations
    return bool(patched == pod)


def match_score(pod: Pod, node: Mapping[str, Any], subset: Subset, quota: int) -> int | None:
    """Kruise's ``matchesSubset`` score, or None when the subset does not fit at all."""
    if not fits_subset(pod, node, subset):
        return None
    preferred = node_affinity.preferred_score(node, subset.preferred_node_selector)
    return preferred * 100 + (10 if _patch_is_noop(pod, subset) else 0) + (1 if quota > 0 else 0)


def _existing_pod_patch(ws: WorkloadSpread, subset: Subset, pod: Pod) -> JSON:
    metadata: JSON = {}
    ignore = ws.annotations.get(IGNORE_PATCH_EXISTING_ANNOTATION, "").lower() == "true"
    if subset.patch is not None and not ignore:
        patch_meta = subset.patch.get("metadata")
        if isinstance(patch_meta, Mapping):
            metadata = copy.deepcopy(dict(patch_meta))
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict):
        annotations = {}
        metadata["annotations"] = annotations
    annotations[MATCHED_ANNOTATION] = Matched(name=ws.name, subset=subset.name).to_annotation()
    if unsteered_at_creation(ws, pod):
        annotations[UNSTEERED_ANNOTATION] = "true"
    return {"metadata": metadata}


def unsteered_at_creation(ws: WorkloadSpread, pod: Pod) -> bool:
    """Was ``pod`` created after ``ws`` (so its admission should have steered it)?

    A pod made before its WorkloadSpread is matched where it runs and left there, as Kruise
    does; one made after it and still unmatched was admitted while no webhook answered.
    Creation times have second resolution, so a pod of the WorkloadSpread's own second counts
    as made after it: a workload applied with its WorkloadSpread creates its pods in that second,
    and left unmarked they would never be moved out of a subset they overfill. The price is that
    a pod made just before in the same second may be moved, within the rebalance limits."""
    created = pod_state.creation_time(pod)
    return ws.created is not None and created is not None and created >= ws.created


def initial_quota(ws: WorkloadSpread, replicas: int) -> dict[str, int]:
    """Each subset's maxReplicas scaled against ``replicas`` (unlimited: int32 max), before the
    pods annotated into it are taken off."""
    quota: dict[str, int] = {}
    for subset in ws.subsets:
        try:
            limit = (
                INT32_MAX
                if subset.max_replicas is None
                else scaled_value(subset.max_replicas, replicas, round_up=True)
            )
        except IntOrStrError:
            limit = 0
        quota[subset.name] = limit
    return quota


def best_subset(
    ws: WorkloadSpread, pod: Pod, node: Mapping[str, Any] | None, quota: Mapping[str, int]
) -> Subset | None:
    """The subset an unannotated pod on ``node`` is matched to, given the quota left."""
    best: Subset | None = None
    best_score = -1
    if node is not None:
        for subset in ws.subsets:
            score = match_score(pod, node, subset, quota[subset.name])
            if score is not None and score > best_score:
                best, best_score = subset, score
    return best


def matched_pod(ws: WorkloadSpread, pod: Pod, subset: Subset) -> tuple[JSON, JSON]:
    """The patch that annotates ``pod`` for ``subset``, and the pod as it reads once patched."""
    patch = _existing_pod_patch(ws, subset, pod)
    updated = strategic_merge.apply(pod, patch, strategic_merge.meta_for_kind("Pod"))
    return patch, updated if isinstance(updated, dict) else dict(pod)


def group_pods(
    ws: WorkloadSpread,
    pods: Sequence[Pod],
    *,
    replicas: int,
    nodes: Mapping[str, Mapping[str, Any]],
) -> Grouping:
    """Bucket the pods of one version by subset (``groupPodBySubset``)."""
    return _group(ws, [(pod, occupant(pod)) for pod in pods], replicas=replicas, nodes=nodes)


def _group(
    ws: WorkloadSpread,
    pods: Sequence[tuple[Pod, Occupant]],
    *,
    replicas: int,
    nodes: Mapping[str, Mapping[str, Any]],
) -> Grouping:
    """:func:`group_pods` of pods the counting rule has read already."""
    names = subset_names(ws)
    buckets: dict[str, list[JSON]] = {s.name: [] for s in ws.subsets}
    buckets[FAKE_SUBSET] = []
    patches: dict[str, JSON] = {}
    quota = initial_quota(ws, replicas)
    for _, found in pods:
        bucket = found.bucket(ws.name, names)
        if bucket in quota:
            quota[bucket] -= 1
    for pod, found in pods:
        bucket = found.bucket(ws.name, names)
        if bucket is not None:
            buckets[bucket].append(dict(pod))
            continue
        node = nodes.get(pod_state.node_name(pod)) if pod_state.node_name(pod) else None
        best = best_subset(ws, pod, node, quota)
        if best is None:
            buckets[FAKE_SUBSET].append(dict(pod))
            continue
        patches[pod_state.key(pod)], updated = matched_pod(ws, pod, best)
        buckets[best.name].append(updated)
        quota[best.name] -= 1
    return Grouping(buckets=buckets, pod_patches=patches)


def group_by_version(
    ws: WorkloadSpread,
    pods: Iterable[Pod],
    *,
    replicas: int,
    nodes: Mapping[str, Mapping[str, Any]],
    versioned_kinds: frozenset[str] = pod_state.DEFAULT_VERSIONED_KINDS,
) -> dict[str, Grouping]:
    """``groupVersionedPods``: one grouping per pod version, in first-seen order."""
    by_version: dict[str, list[tuple[Pod, Occupant]]] = {}
    for pod in pods:
        found = occupant(pod, versioned_kinds)
        by_version.setdefault(found.version, []).append((pod, found))
    return {
        version: _group(ws, version_pods, replicas=replicas, nodes=nodes)
        for version, version_pods in by_version.items()
    }
