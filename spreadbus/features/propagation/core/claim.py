"""A policy's claim on a binding, as Karmada's detector marks it, and its removal.

Karmada labels a binding (and the template) with the permanent id of the policy that took its
template and annotates it with the policy's name (and namespace): a PropagationPolicy's
``propagationpolicy.karmada.io/permanent-id`` label and ``propagationpolicy.karmada.io/name`` and
``/namespace`` annotations, a ClusterPropagationPolicy's ``clusterpropagationpolicy.karmada.io/
permanent-id`` and ``/name``. When the policy is deleted it removes them
(``handlePolicyDeletion`` in ``pkg/detector/detector.go``, the keys in ``pkg/detector/claim.go``)
and leaves the binding otherwise as it was: its scheduler ignores a binding that no policy claims
(``resourceBindingEventFilter``, ``pkg/scheduler/event_handler.go``), and the propagated copies
stay in the members (``preserveResourcesOnDeletion`` applies to the template's deletion only:
``pkg/apis/policy/v1alpha1/propagation_types.go``). A policy that takes the template later
claims the binding again.

spreadbus marks the binding only: the template is the user's object, and the rule matches the
policies anew each round instead of reading a claim from the template. A policy without a
permanent-id label (Karmada's webhook adds one; none runs here) is claimed by its uid.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubesemantics.lenient_json import as_map, as_str

PP_ID: Final = "propagationpolicy.karmada.io/permanent-id"
PP_NAME: Final = "propagationpolicy.karmada.io/name"
PP_NAMESPACE: Final = "propagationpolicy.karmada.io/namespace"
CPP_ID: Final = "clusterpropagationpolicy.karmada.io/permanent-id"
CPP_NAME: Final = "clusterpropagationpolicy.karmada.io/name"
LABELS: Final = (PP_ID, CPP_ID)
ANNOTATIONS: Final = (PP_NAME, PP_NAMESPACE, CPP_NAME)

Claim = tuple[dict[str, str | None], dict[str, str | None]]
"""(labels, annotations) to merge into a binding; ``None`` removes a key."""


def claim_of(policy: Mapping[str, Any] | None) -> Claim:
    """The claim ``policy`` puts on a binding, every other claim key removed; all of them
    removed for ``None`` (no policy takes the template)."""
    labels: dict[str, str | None] = dict.fromkeys(LABELS)
    annotations: dict[str, str | None] = dict.fromkeys(ANNOTATIONS)
    if policy is None:
        return labels, annotations
    metadata = as_map(policy.get("metadata"))
    if as_str(policy.get("kind")) == "ClusterPropagationPolicy":
        labels[CPP_ID] = (as_str(as_map(metadata.get("labels")).get(CPP_ID))
                          or as_str(metadata.get("uid")))
        annotations[CPP_NAME] = as_str(metadata.get("name"))
    else:
        labels[PP_ID] = (as_str(as_map(metadata.get("labels")).get(PP_ID))
                         or as_str(metadata.get("uid")))
        annotations[PP_NAME] = as_str(metadata.get("name"))
        annotations[PP_NAMESPACE] = as_str(metadata.get("namespace")) or "default"
    return labels, annotations


def claim_patch(claim: Claim) -> dict[str, Any]:
    """The merge patch that puts ``claim`` on a binding."""
    labels, annotations = claim
    return {"metadata": {"labels": dict(labels), "annotations": dict(annotations)}}


def claimed(binding: Mapping[str, Any]) -> bool:
    """Does some policy's claim mark the binding?"""
    metadata = as_map(binding.get("metadata"))
    labels = as_map(metadata.get("labels"))
    annotations = as_map(metadata.get("annotations"))
    return any(k in labels for k in LABELS) or any(k in annotations for k in ANNOTATIONS)


def preserves(policy: Mapping[str, Any] | None) -> bool | None:
    """The policy's ``preserveResourcesOnDeletion``, which the binding carries: whether the
    copies stay in the members when the template is deleted."""
    value = as_map(as_map(policy).get("spec")).get("preserveResourcesOnDeletion")
    return value if isinstance(value, bool) else None
