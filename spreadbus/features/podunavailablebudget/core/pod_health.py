"""What a budget asks of a pod: is it active, available, mid in-place update, and does a change
make it unavailable (Kruise v1.9.0's predicates, reference §4.4).

- active: not Succeeded or Failed, not terminating;
- ready: Running, condition Ready True, not terminating, no ``unavailable-pod.kruise.io/`` label;
- consistent: not in the middle of an in-place update (the images it runs are the ones its spec
  names; see :func:`consistent`);
- an update changes availability when the spec differs or an unavailable label is added;
- such an update is a RESIZE when only cpu or memory of containers change in a way the kubelet
  applies without a restart.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from kubesemantics.lenient_json import as_map, as_str
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


def terminating(pod: JSON) -> bool:
    return _meta(pod).get("deletionTimestamp") not in (None, "")


def active(pod: JSON) -> bool:
    phase = as_str(as_map(pod.get("status")).get("phase"))
    return phase not in ("Succeeded", "Failed") and not terminating(pod)


def has_unavailable_label(pod: JSON) -> bool:
    return any(str(k).startswith(UNAVAILABLE_LABEL_PREFIX) for k in labels_of(pod))


def ready(pod: JSON) -> bool:
    status = as_map(pod.get("status"))
    if as_str(status.get("phase")) != "Running" or terminating(pod):
        return False
    if has_unavailable_label(pod):
        return False
    conditions = status.get("conditions")
    return any(
        isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in (conditions if isinstance(conditions, list) else ())
    )


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


def _with_tag(image: str) -> str:
    """An image reference with its implicit ``:latest`` tag spelled out."""
    if "@" in image:
        return image
    last = image.rsplit("/", 1)[-1]
    return image if ":" in last else f"{image}:latest"


def _image_id_digest(image_id: str) -> str:
    """``docker-pullable://repo@sha256:...`` -> ``repo@sha256:...``."""
    return image_id.split("://", 1)[-1]


def _json_annotation(pod: JSON, key: str) -> Mapping[str, Any]:
    raw = annotations_of(pod).get(key)
    if not isinstance(raw, str) or not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, Mapping) else {}


def _stale(container: Mapping[str, Any], status: Mapping[str, Any], last_image_id: str) -> bool:
    """Still runs the image recorded before the update while its spec names another."""
    return as_str(status.get("imageID")) == last_image_id and _with_tag(
        as_str(container.get("image"))
    ) != _with_tag(as_str(status.get("image")))


def _sidecars_consistent(pod: JSON, statuses: Mapping[str, Mapping[str, Any]]) -> bool:
    if not annotations_of(pod).get(SIDECARSET_INJECTED_ANNOTATION):
        return True
    sidecars = {
        as_str(c.get("name")): c
        for c in _containers(pod)
        if any(
            isinstance(e, Mapping) and e.get("name") == "IS_INJECTED" and e.get("value") == "true"
            for e in _list(c.get("env"))
        )
    }
    if not sidecars:
        return True
    for state in _json_annotation(pod, SIDECARSET_STATE_ANNOTATION).values():
        for container_name, last in as_map(as_map(state).get("lastContainerStatuses")).items():
            container, status = sidecars.get(container_name), statuses.get(container_name)
            if container is not None and status is not None and _stale(
                container, status, as_str(as_map(last).get("imageID"))
            ):
                return False
    return True


def _inplace_consistent(pod: JSON, statuses: Mapping[str, Mapping[str, Any]]) -> bool:
    if INPLACE_GRACE_ANNOTATION in annotations_of(pod):
        return False
    state = _json_annotation(pod, INPLACE_STATE_ANNOTATION)
    if not state:
        return True
    if any(state.get(k) for k in ("nextContainerImages", "nextContainerRefMetadata",
                                   "nextContainerResources")):
        return False
    containers = {as_str(c.get("name")): c for c in _containers(pod)}
    for container_name, last in as_map(state.get("lastContainerStatuses")).items():
        status = statuses.get(container_name)
        if status is None:
            return False
        container = containers.get(container_name)
        if container is not None and _stale(container, status, as_str(as_map(last).get("imageID"))):
            return False
    return True


def consistent(pod: JSON) -> bool:
    """Not mid in-place update: digest-pinned containers run exactly their digest; otherwise no
    sidecar or container still runs the image recorded before an in-place update, and no update
    is pending or in its grace period."""
    containers = _containers(pod)
    statuses = _statuses(pod)
    images = [as_str(c.get("image")) for c in containers]
    if all("@" in image for image in images):
        return all(
            _image_id_digest(as_str(statuses.get(as_str(c.get("name")), {}).get("imageID")))
            == as_str(c.get("image"))
            for c in containers
        )
    return _sidecars_consistent(pod, statuses) and _inplace_consistent(pod, statuses)


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

_SUFFIXES = {
    "": Decimal(1), "m": Decimal("0.001"), "k": Decimal(10**3), "M": Decimal(10**6),
    "G": Decimal(10**9), "T": Decimal(10**12), "P": Decimal(10**15), "E": Decimal(10**18),
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
    "Pi": Decimal(2**50), "Ei": Decimal(2**60),
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")


def _quantity(value: object) -> Decimal | str:
    """A resource quantity's amount; text that does not parse stands for itself."""
    text = str(value)
    match = _QUANTITY.match(text)
    if match is None or match.group(2) not in _SUFFIXES:
        return text
    try:
        return Decimal(match.group(1)) * _SUFFIXES[match.group(2)]
    except InvalidOperation:
        return text


def _resource_lists(container: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    resources = as_map(container.get("resources"))
    return dict(as_map(resources.get("requests"))), dict(as_map(resources.get("limits")))


def _changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> set[str]:
    return {
        r for r in old.keys() | new.keys()
        if r not in old or r not in new or _quantity(old[r]) != _quantity(new[r])
    }


def qos_class(pod: JSON) -> str:
    """Kubernetes' QoS class from the containers' cpu and memory requests and limits."""
    spec = as_map(pod.get("spec"))
    containers = [
        c for key in ("containers", "initContainers")
        for c in _list(spec.get(key))
        if isinstance(c, Mapping)
    ]
    any_set, guaranteed = False, True
    for container in containers:
        requests, limits = _resource_lists(container)
        requests = {k: v for k, v in requests.items() if k in ("cpu", "memory")}
        limits = {k: v for k, v in limits.items() if k in ("cpu", "memory")}
        any_set = any_set or bool(requests) or bool(limits)
        if set(limits) != {"cpu", "memory"}:
            guaranteed = False
        if any(_quantity(v) != _quantity(limits.get(k)) for k, v in requests.items()):
            guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


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


def can_resize_inplace(old: JSON, new: JSON) -> bool:
    """The update only changes cpu or memory of containers, keeps the QoS class and restarts
    nothing: Kruise then judges it as a RESIZE rather than an UPDATE."""
    old_labels = labels_of(old)
    if any(str(k).startswith(UNAVAILABLE_LABEL_PREFIX) and k not in old_labels
           for k in labels_of(new)):
        return False
    if _without_resources(old.get("spec")) != _without_resources(new.get("spec")):
        return False
    source = annotations_of(old).get(CONFIG_SOURCE_ANNOTATION)
    if source is not None and source != "api":
        return False
    if qos_class(old) != qos_class(new):
        return False
    old_containers, new_containers = _containers(old), _containers(new)
    if [c.get("name") for c in old_containers] != [c.get("name") for c in new_containers]:
        return False
    for before, after in zip(old_containers, new_containers, strict=True):
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
