"""What a webhook replica keeps of a pod for budget decisions: the fields an eviction reads.

An eviction's review names the pod without carrying it, so every replica holds every pod of its
cluster; what it keeps per pod is what bounds it. The decision (:mod:`..core.admission`) reads
the pod's name and namespace, the ``kruise.io/related-pub`` and ``pub.kruise.io/no-protect``
annotations, and whether it is available (:func:`~..core.pod_health.available`): its phase,
deletion, Ready condition and ``unavailable-pod.kruise.io/`` labels, and, to tell an in-place
update in progress, its containers' names, images and ``IS_INJECTED`` variable, their statuses'
images and image ids, and the in-place and SidecarSet annotations; its ``resourceVersion`` tells
whether the view has caught up with a pod a review carries, and its controller
whether a status that counted no pods predates the pod's workload (:mod:`.handlers`).
:func:`kept` is the pod with only these, each as it was (a property test checks that every
reading agrees); the view holds it encoded (:func:`kept_encoded`, what the feature registers for
the webhook's pod view), a few hundred bytes where the pod's JSON is kilobytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from kubesemantics.owner_refs import controller_ref
from spreadbus.features.podunavailablebudget.core import pod_health
from spreadbus.features.podunavailablebudget.core.model import (
    NO_PROTECT_ANNOTATION,
    RELATED_PUB_ANNOTATION,
    UNAVAILABLE_LABEL_PREFIX,
)

ANNOTATIONS: Final = frozenset({
    RELATED_PUB_ANNOTATION, NO_PROTECT_ANNOTATION,
    pod_health.INPLACE_STATE_ANNOTATION, pod_health.INPLACE_GRACE_ANNOTATION,
    pod_health.SIDECARSET_INJECTED_ANNOTATION, pod_health.SIDECARSET_STATE_ANNOTATION,
})
METADATA: Final = ("name", "namespace", "resourceVersion", "deletionTimestamp")
OWNER: Final = ("apiVersion", "kind", "name", "controller")
CONTAINER: Final = ("name", "image")
CONTAINER_STATUS: Final = ("name", "image", "imageID")
INJECTED: Final = "IS_INJECTED"


def _some(raw: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: raw[key] for key in keys if key in raw}


def _container(raw: Mapping[str, Any]) -> dict[str, Any]:
    out = _some(raw, CONTAINER)
    env = raw.get("env")
    if isinstance(env, list):
        injected = [e for e in env if isinstance(e, Mapping) and e.get("name") == INJECTED]
        if injected:
            out["env"] = injected
    return out


def _metadata(raw: Mapping[str, Any]) -> dict[str, Any]:
    out = _some(raw, METADATA)
    owner = controller_ref({"metadata": raw})
    if owner is not None:
        out["ownerReferences"] = [_some(owner, OWNER)]
    labels = raw.get("labels")
    if isinstance(labels, Mapping):
        unavailable = {k: v for k, v in labels.items()
                       if str(k).startswith(UNAVAILABLE_LABEL_PREFIX)}
        if unavailable:
            out["labels"] = unavailable
    annotations = raw.get("annotations")
    if isinstance(annotations, Mapping):
        read = {k: v for k, v in annotations.items() if k in ANNOTATIONS}
        if read:
            out["annotations"] = read
    return out


def _status(raw: Mapping[str, Any]) -> dict[str, Any]:
    out = _some(raw, ("phase",))
    conditions = raw.get("conditions")
    if isinstance(conditions, list):
        out["conditions"] = [c for c in conditions
                             if isinstance(c, Mapping) and c.get("type") == "Ready"]
    statuses = raw.get("containerStatuses")
    if isinstance(statuses, list):
        out["containerStatuses"] = [_some(s, CONTAINER_STATUS) for s in statuses
                                    if isinstance(s, Mapping)]
    return out


def kept(pod: Mapping[str, Any]) -> dict[str, Any]:
    """``pod`` with only what a budget decision on its removal reads (module docstring)."""
    out = _some(pod, ("apiVersion", "kind"))
    metadata = pod.get("metadata")
    if isinstance(metadata, Mapping):
        out["metadata"] = _metadata(metadata)
    spec = pod.get("spec")
    if isinstance(spec, Mapping):
        containers = spec.get("containers")
        if isinstance(containers, list):
            out["spec"] = {"containers": [_container(c) for c in containers
                                          if isinstance(c, Mapping)]}
    status = pod.get("status")
    if isinstance(status, Mapping):
        out["status"] = _status(status)
    return out


def kept_encoded(pod: Mapping[str, Any], name: str, namespace: str) -> bytes:
    """What the webhook's pod view keeps of a pod for budget decisions: :func:`kept`, encoded."""
    return msgspec.json.encode(kept(pod))
