"""The simulated resource metrics API: a pod's cpu and memory usage, set by an annotation.

A real cluster's metrics-server samples what containers use; kubesim's pods run nothing, so a
test (or a person with kubectl) says what each pod uses:

    kubectl annotate pod web-1 kubesim.spreadbus.io/cpu-usage=250m
    kubectl annotate pod web-1 kubesim.spreadbus.io/memory-usage=300Mi

The value is a quantity for the whole pod. A running pod without the annotation uses nothing
(``0``, an idle pod); a pod that is not Running has no sample, as metrics-server reports only
running pods, and neither has a pod whose annotation is not a quantity. Resources other than cpu
and memory have no samples at all.
"""

from __future__ import annotations

from kubesim.behaviour.quantity import QuantityError, milli_value
from kubesim.behaviour.replica_calculator import PodSample
from kubesim.behaviour.timestamps import parse_time
from kubesim.interface import JsonObject

CPU_USAGE_ANNOTATION = "kubesim.spreadbus.io/cpu-usage"
MEMORY_USAGE_ANNOTATION = "kubesim.spreadbus.io/memory-usage"
USAGE_ANNOTATIONS = {"cpu": CPU_USAGE_ANNOTATION, "memory": MEMORY_USAGE_ANNOTATION}
DEFAULT_USAGE = "0"


def usage(pod: JsonObject, resource: str) -> int | None:
    """The pod's usage of ``resource`` in milli-units, or None when it has no sample."""
    annotation = USAGE_ANNOTATIONS.get(resource)
    if annotation is None or (pod.get("status") or {}).get("phase") != "Running":
        return None
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(annotation, DEFAULT_USAGE)
    try:
        return milli_value(str(value))
    except QuantityError:
        return None


def request(pod: JsonObject, resource: str) -> tuple[int | None, str]:
    """The pod's request of ``resource`` (milli-units) over its containers and restartable init
    containers, as upstream sums it; (None, container) when a container requests none."""
    spec = pod.get("spec") or {}
    containers = list(spec.get("containers") or [])
    containers += [
        c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"
    ]
    total = 0
    for container in containers:
        requests = (container.get("resources") or {}).get("requests") or {}
        if resource not in requests:
            return None, str(container.get("name", ""))
        try:
            total += milli_value(requests[resource])
        except QuantityError:
            return None, str(container.get("name", ""))
    return total, ""


def sample(pod: JsonObject, resource: str) -> PodSample:
    """What the replica calculator reads of ``pod`` for ``resource``."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    ready = next(
        (c for c in status.get("conditions") or () if c.get("type") == "Ready"),
        None,
    )
    requested, missing = request(pod, resource)
    return PodSample(
        name=str(meta.get("name", "")),
        phase=str(status.get("phase") or "Pending"),
        deleting=bool(meta.get("deletionTimestamp")),
        ready=None if ready is None else str(ready.get("status")),
        ready_since=None if ready is None else parse_time(ready.get("lastTransitionTime")),
        started=parse_time(status.get("startTime")),
        request=requested,
        missing_request=missing,
        usage=usage(pod, resource),
    )
