"""What the WorkloadSpread rules need to know about one pod, read from its JSON.

Activity, the controller owner, the ``matched-workloadspread`` annotation (decoded with Go's
case-insensitive key matching, so ``{"Name":..,"Subset":..}`` written by older tools still reads),
the version used for versioned status, the StatefulSet ordinal, the "stuck unschedulable" test used
by adaptive rescheduling, and the ``ActivePods.Less`` order used to pick which pods of an
over-full subset go first.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Collection, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, TypeGuard

import msgspec

from kubesemantics import pod_status
from kubesemantics.lenient_json import as_map
from kubesemantics.owner_refs import controller_ref
from kubesemantics.pod_status import phase
from kubesemantics.timestamps import parse_time
from spreadbus.features.workloadspread.core.model import MATCHED_ANNOTATION, VERSION_IGNORED

Pod = Mapping[str, Any]

DEFAULT_VERSIONED_KINDS: frozenset[str] = frozenset({"deployment", "replicaset"})
_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")
ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


class Matched(msgspec.Struct, frozen=True):
    """The decoded ``apps.kruise.io/matched-workloadspread`` annotation."""

    name: str
    subset: str
    uid: str = ""

    def to_annotation(self) -> str:
        body: dict[str, str] = {"name": self.name, "subset": self.subset}
        if self.uid:
            body["uid"] = self.uid
        return json.dumps(body, separators=(",", ":"))


def _is_map(value: object) -> TypeGuard[Mapping[str, Any]]:
    """A mapping; decoded JSON's dicts skip the abstract class check (read per field, per pod)."""
    return type(value) is dict or isinstance(value, Mapping)


def metadata(pod: Pod) -> Mapping[str, Any]:
    """``as_map`` of the pod's metadata, written out: every plan reads it for several fields of
    each of its pods."""
    value = pod.get("metadata")
    if type(value) is dict:
        return value
    return value if isinstance(value, Mapping) else {}


def name(pod: Pod) -> str:
    value = metadata(pod).get("name")
    return value if isinstance(value, str) else ""


def namespace(pod: Pod) -> str:
    value = metadata(pod).get("namespace")
    return value if isinstance(value, str) and value else "default"


def key(pod: Pod) -> str:
    return f"{namespace(pod)}/{name(pod)}"


def pod_labels(pod: Pod) -> dict[str, str]:
    return {k: v for k, v in as_map(metadata(pod).get("labels")).items() if isinstance(v, str)}


def pod_annotations(pod: Pod) -> dict[str, str]:
    return {k: v for k, v in as_map(metadata(pod).get("annotations")).items()
            if isinstance(v, str)}


def annotation(pod: Pod, name: str) -> str | None:
    """One annotation's value, if it is a string (read per pod, without copying the rest)."""
    value = as_map(metadata(pod).get("annotations")).get(name)
    return value if isinstance(value, str) else None


def _label(pod: Pod, name: str) -> str | None:
    """One label's value, if it is a string (what :func:`pod_labels` would hold for it)."""
    value = as_map(metadata(pod).get("labels")).get(name)
    return value if isinstance(value, str) else None


def node_name(pod: Pod) -> str:
    value = as_map(pod.get("spec")).get("nodeName")
    return value if isinstance(value, str) else ""


def _fold(raw: Mapping[str, Any], field: str) -> str:
    """Go's ``encoding/json``: an exact key match wins, else a case-insensitive one."""
    if field in raw:
        value = raw[field]
    else:
        value = next((v for k, v in raw.items() if isinstance(k, str) and k.lower() == field), "")
    return value if isinstance(value, str) else ""


def matched(pod: Pod) -> Matched | None:
    """The annotation if present and parseable."""
    text = annotation(pod, MATCHED_ANNOTATION)
    return None if text is None else _decode_matched(text)


@functools.lru_cache(maxsize=4096)
def _decode_matched(text: str) -> Matched | None:
    """Memoised: a planner pass reads each pod's annotation many times over."""
    try:
        raw = json.loads(text)
    except ValueError:
        return None
    if not isinstance(raw, Mapping):
        return None
    return Matched(name=_fold(raw, "name"), subset=_fold(raw, "subset"), uid=_fold(raw, "uid"))


def creating_key(pod: Pod) -> str:
    """The key the webhook recorded for this pod: the annotation's uid, else the pod name."""
    return creating_key_with(matched(pod), pod)


def creating_key_with(annotation: Matched | None, pod: Pod) -> str:
    """:func:`creating_key` for a caller that has decoded the pod's annotation already."""
    if annotation is not None and annotation.uid:
        return annotation.uid
    return name(pod)


def version(pod: Pod, versioned_kinds: Collection[str] = DEFAULT_VERSIONED_KINDS) -> str:
    """``GetPodVersion``: the template hash, for pods whose owner kind has versioning on."""
    owner = controller_ref(pod)
    owner_kind = owner.get("kind") if owner is not None else None
    kind = pod.get("kind")
    enabled = (isinstance(kind, str) and kind.lower() in versioned_kinds) or (
        isinstance(owner_kind, str) and owner_kind.lower() in versioned_kinds
    )
    if not enabled:
        return VERSION_IGNORED
    template_hash = _label(pod, "pod-template-hash")
    if template_hash is not None:
        return template_hash
    revision = _label(pod, "controller-revision-hash")
    if revision is not None:
        return short_hash(revision)
    return VERSION_IGNORED


def short_hash(revision: str) -> str:
    return revision.split("-")[-1]


def ordinal(pod_name: str) -> int:
    """A StatefulSet pod's ordinal from its name; -1 when the name has none."""
    found = _ORDINAL.match(pod_name)
    if found is None:
        return -1
    try:
        return int(found.group(2))
    except ValueError:
        return -1


def creation_time(pod: Pod) -> datetime | None:
    return _time(metadata(pod).get("creationTimestamp"))


def _time(value: object) -> datetime | None:
    """:func:`parse_time`, memoised for text: the pods of a workload share a few timestamps."""
    return _parse_text(value) if type(value) is str else parse_time(value)


@functools.lru_cache(maxsize=4096)
def _parse_text(text: str) -> datetime | None:
    return parse_time(text)


def _conditions(pod: Pod) -> list[Mapping[str, Any]]:
    conds = as_map(pod.get("status")).get("conditions")
    return [c for c in conds if _is_map(c)] if isinstance(conds, list) else []


def unschedulable_deadline(pod: Pod, timeout: timedelta) -> datetime | None:
    """When a pod that failed to schedule counts as stuck; None if it is not failing to schedule.

    Only a pending, unbound, live pod with ``PodScheduled=False/Unschedulable`` qualifies; the
    deadline is its creation time plus ``timeout`` and it is stuck once the deadline is strictly
    before now (``GetTimeBeforePendingTimeout``).
    """
    if pod_status.deleting_truthy(pod) or phase(pod) != "Pending" or node_name(pod):
        return None
    for cond in _conditions(pod):
        if (cond.get("type"), cond.get("status"), cond.get("reason")) == (
            "PodScheduled",
            "False",
            "Unschedulable",
        ):
            created = creation_time(pod)
            if created is None:
                return ZERO_TIME + timeout
            return created + timeout
    return None



def _max_restarts(pod: Pod) -> int:
    statuses = as_map(pod.get("status")).get("containerStatuses")
    if not isinstance(statuses, list):
        return 0
    found: int | None = None
    for status in statuses:
        if _is_map(status):
            count = status.get("restartCount")
            if isinstance(count, int) and (found is None or count > found):
                found = count
    return 0 if found is None else found


def _zero_then_later(value: datetime | None) -> tuple[int, float]:
    """``afterOrZero`` as a sort key: zero time first, then later times first."""
    return (0, 0.0) if value is None else (1, -value.timestamp())


def _time_key(value: object) -> tuple[int, float]:
    """:func:`_zero_then_later` of a JSON timestamp, memoised for text."""
    return _text_key(value) if type(value) is str else _zero_then_later(parse_time(value))


@functools.lru_cache(maxsize=4096)
def _text_key(text: str) -> tuple[int, float]:
    return _zero_then_later(_parse_text(text))


def deletion_order_key(pod: Pod) -> tuple[Any, ...]:
    """``ActivePods.Less`` as a key: pods that sort first are the first to be deleted."""
    ready = pod_status.ready_condition(pod)
    return (
        1 if node_name(pod) else 0,
        _PHASE_RANK.get(phase(pod), 0),
        0 if ready is None else 1,
        (0, 0.0) if ready is None else _time_key(ready.get("lastTransitionTime")),
        -_max_restarts(pod),
        _time_key(metadata(pod).get("creationTimestamp")),
    )
