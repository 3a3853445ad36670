"""What a budget asks of a pod: is it available, mid in-place update, and does a change make it
unavailable (Kruise v1.9.0's predicates, reference §4.4). Whether it is active (not Succeeded or
Failed, not terminating) is :func:`kubesemantics.pod_status.active`'s reading.

- ready: Running, condition Ready True, not terminating, no ``unavailable-pod.kruise.io/`` label;
- consistent: not in the middle of an in-place update (the images it runs are the ones its spec
  names; see :func:`consistent`);
- an update changes availability when the spec differs or an unavailable label is added;
- such an update is a RESIZE when only cpu or memory of containers change in a way the kubelet
  applies without a restart.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from kubesemantics import pod_status
from kubesemantics.lenient_json import as_map, as_str
from kubesemantics.quantity import QuantityError, parse_quantity
from spreadbus.features.podunavailablebudget.core.model import UNAVAILABLE_LABEL_PREFIX

JSON = Mapping[str, Any]

INPLACE_STATE_ANNOTATION = "apps.kruise.io/inplace-update-state"
INPLACE_GRACE_ANNOTATION = "apps.kruise.io/inplace-update-grace"
SIDECARSET_INJECTED_ANNOTATION = "kruise.io/sidecarset-injected-list"
SIDECARSET_STATE_ANNOTATION = "kruise.io/sidecarset-inplace-update-state"
CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source"


def _meta(pod: JSON) -> Mapping[str, Any]:
    return as_map(pod.get("metadata"))


def labels_of(pod: JSON) -> Mapping[str, Any]:
    return as_map(_meta(pod).get("labels"))


def annotations_of(pod: JSON) -> Mapping[str, Any]:
    return as_map(_meta(pod).get("annotations"))


def name_of(pod: JSON) -> str:
    return as_str(_meta(pod).get("name"))


def has_unavailable_label(pod: JSON) -> bool:
    return any(str(k).startswith(UNAVAILABLE_LABEL_PREFIX) for k in labels_of(pod))


def ready(pod: JSON) -> bool:
    """Kruise's ``pubcontrol`` ``IsPodReady``: ``util.IsRunningAndReady`` (Running, Ready, not
    terminating) and no ``unavailable-pod.kruise.io/`` label."""
    return pod_status.running_and_ready(pod) and not has_unavailable_label(pod)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _containers(pod: JSON) -> list[Mapping[str, Any]]:
    containers = as_map(pod.get("spec")).get("containers")
    return [c for c in containers if isinstance(c, Mapping)] if isinstance(containers, list) else []


def _statuses(pod: JSON) -> dict[str, Mapping[str, Any]]:
    raw = as_map(pod.get("status")).get("containerStatuses")
    return {
        as_str(s.get("name")): s
        for s in (raw if isinstance(raw, list) else ())
        if isinstance(s, Mapping)
    }


def _with_latest(image: str) -> str:
    """A spec image without any ``:`` is compared as ``<image>:latest`` (Kruise's rule)."""
    return image if ":" in image else f"{image}:latest"


def _repo_and_digest(image: str) -> tuple[str, str] | None:
    """``repo[:tag]@digest`` -> (repo, digest); None when the reference has no digest."""
    name, sep, digest = image.partition("@")
    if not sep or not digest:
        return None
    last_slash = name.rfind("/")
    colon = name.rfind(":")
    repo = name[:colon] if colon > last_slash else name
    return repo, digest


def _image_id(status: Mapping[str, Any]) -> str:
    """``docker-pullable://repo@sha256:...`` -> ``repo@sha256:...``."""
    image_id = as_str(status.get("imageID"))
    return image_id.split("://", 1)[1] if "://" in image_id else image_id


def _digest_consistent(image: str, status: Mapping[str, Any] | None) -> bool:
    """A digest-pinned container runs that digest of that repository."""
    if status is None:
        return False
    wanted, running = _repo_and_digest(image), _repo_and_digest(_image_id(status))
    return wanted is not None and wanted == running


class _Unreadable(Exception):
    """An in-place update state annotation that does not decode: taken as inconsistent."""


def _json_annotation(pod: JSON, key: str) -> Mapping[str, Any] | None:
    """The decoded annotation; None when absent; raises :class:`_Unreadable`."""
    raw = annotations_of(pod).get(key)
    if raw is None:
        return None
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except ValueError as exc:
        raise _Unreadable(key) from exc
    if not isinstance(value, Mapping):
        raise _Unreadable(key)
    return value


def _env_injected(container: Mapping[str, Any]) -> bool:
    return any(
        isinstance(e, Mapping) and e.get("name") == "IS_INJECTED" and e.get("value") == "true"
        for e in _list(container.get("env"))
    )


def _sidecars_consistent(pod: JSON, statuses: Mapping[str, Mapping[str, Any]]) -> bool:
    """No injected sidecar still runs the image recorded before its SidecarSet's in-place
    update while its spec names another."""
    listed = as_str(annotations_of(pod).get(SIDECARSET_INJECTED_ANNOTATION))
    sidecar_sets = set(listed.split(",")) if listed else set()
    sidecars = {as_str(c.get("name")): c for c in _containers(pod) if _env_injected(c)}
    if not sidecar_sets or not sidecars:
        return True
    states = _json_annotation(pod, SIDECARSET_STATE_ANNOTATION)
    if states is None:
        return True
    last: dict[str, Any] = {}
    for sidecar_set in sorted(sidecar_sets):
        last.update(as_map(as_map(states.get(sidecar_set)).get("lastContainerStatuses")))
    for name, status in statuses.items():
        if name in sidecars and name in last and as_str(as_map(last[name]).get("imageID")) == (
            as_str(status.get("imageID"))
        ) and as_str(sidecars[name].get("image")) != as_str(status.get("image")):
            return False
    return True


def _inplace_consistent(pod: JSON, statuses: Mapping[str, Mapping[str, Any]]) -> bool:
    """No in-place update in its grace period, pending, or not yet applied by the kubelet."""
    if INPLACE_GRACE_ANNOTATION in annotations_of(pod):
        return False
    state = _json_annotation(pod, INPLACE_STATE_ANNOTATION)
    if state is None:
        return True
    if any(state.get(k) for k in ("nextContainerImages", "nextContainerRefMetadata",
                                   "nextContainerResources")):
        return False
    images = {as_str(c.get("name")): _with_latest(as_str(c.get("image")))
              for c in _containers(pod)}
    remaining = dict(as_map(state.get("lastContainerStatuses")))
    for name, status in statuses.items():
        if name not in remaining:
            continue
        if as_str(as_map(remaining.pop(name)).get("imageID")) == as_str(
            status.get("imageID")
        ) and images.get(name) != as_str(status.get("image")):
            return False
    return not remaining


def consistent(pod: JSON) -> bool:
    """Not mid in-place update: every digest-pinned container runs its digest; when some
    container is not digest-pinned, no sidecar or container still runs the image recorded
    before an in-place update, and no update is pending or in its grace period."""
    statuses = _statuses(pod)
    all_digests = True
    for container in _containers(pod):
        image = as_str(container.get("image"))
        if _repo_and_digest(image) is None:
            all_digests = False
        elif not _digest_consistent(image, statuses.get(as_str(container.get("name")))):
            return False
    if all_digests:
        return True
    try:
        return _sidecars_consistent(pod, statuses) and _inplace_consistent(pod, statuses)
    except _Unreadable:
        return False


def available(pod: JSON) -> bool:
    return ready(pod) and consistent(pod)


def unavailability_changing(old: JSON, new: JSON) -> bool:
    """A spec change, or an ``unavailable-pod.kruise.io/`` label the old pod did not have."""
    if old.get("spec") != new.get("spec"):
        return True
    old_labels = labels_of(old)
    return any(
        str(k).startswith(UNAVAILABLE_LABEL_PREFIX) and k not in old_labels for k in labels_of(new)
    )


# --- in-place resize -------------------------------------------------------------------------

def _quantity(value: object) -> Fraction | str:
    """A resource quantity's amount; a value that does not parse stands for its text."""
    try:
        return parse_quantity(value)
    except QuantityError:
        return str(value)


def _resource_lists(container: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    resources = as_map(container.get("resources"))
    return dict(as_map(resources.get("requests"))), dict(as_map(resources.get("limits")))


def _changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> set[str]:
    return {
        r for r in old.keys() | new.keys()
        if r not in old or r not in new or _quantity(old[r]) != _quantity(new[r])
    }


def qos_class(pod: JSON) -> str:
    """Kubernetes' ``ComputePodQOS``: cpu and memory requests and limits above zero, summed
    over containers and init containers; Guaranteed needs both limits on every container and
    the sums of requests equal to those of limits."""
    spec = as_map(pod.get("spec"))
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    for container in [c for key in ("containers", "initContainers")
                      for c in _list(spec.get(key)) if isinstance(c, Mapping)]:
        container_requests, container_limits = _resource_lists(container)
        for source, total in ((container_requests, requests), (container_limits, limits)):
            for name, raw in source.items():
                amount = _quantity(raw)
                if name in ("cpu", "memory") and isinstance(amount, Fraction) and amount > 0:
                    total[name] = total.get(name, Fraction(0)) + amount
        found = {n for n, raw in container_limits.items()
                 if n in ("cpu", "memory") and isinstance(q := _quantity(raw), Fraction) and q > 0}
        if found != {"cpu", "memory"}:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(limits.get(n) == amount for n, amount in requests.items()) and len(
        requests
    ) == len(limits):
        return "Guaranteed"
    return "Burstable"


def _without_resources(spec: object) -> object:
    if not isinstance(spec, Mapping):
        return spec
    out = dict(spec)
    containers = out.get("containers")
    if isinstance(containers, list):
        out["containers"] = [
            {k: v for k, v in c.items() if k != "resources"} if isinstance(c, Mapping) else c
            for c in containers
        ]
    return out


def _static(pod: JSON) -> bool:
    source = annotations_of(pod).get(CONFIG_SOURCE_ANNOTATION)
    return source is not None and source != "api"


def can_resize_inplace(old: JSON, new: JSON) -> bool:
    """The update only changes cpu or memory of containers, keeps the QoS class and restarts
    nothing: Kruise then judges it as a RESIZE rather than an UPDATE."""
    old_labels = labels_of(old)
    if any(str(k).startswith(UNAVAILABLE_LABEL_PREFIX) and k not in old_labels
           for k in labels_of(new)):
        return False
    if _without_resources(old.get("spec")) != _without_resources(new.get("spec")):
        return False
    if _static(old) or _static(new):
        return False
    if qos_class(old) != qos_class(new):
        return False
    old_containers = {as_str(c.get("name")): c for c in _containers(old)}
    new_containers = _containers(new)
    if len(old_containers) != len(new_containers):
        return False
    for after in new_containers:
        before = old_containers.get(as_str(after.get("name")))
        if before is None:
            return False
        old_requests, old_limits = _resource_lists(before)
        new_requests, new_limits = _resource_lists(after)
        changed = _changed(old_requests, new_requests) | _changed(old_limits, new_limits)
        if changed - {"cpu", "memory"}:
            return False
        policies = after.get("resizePolicy")
        for policy in policies if isinstance(policies, list) else ():
            if (
                isinstance(policy, Mapping)
                and policy.get("resourceName") in changed
                and policy.get("restartPolicy") not in (None, "", "NotRequired")
            ):
                return False
    return True
