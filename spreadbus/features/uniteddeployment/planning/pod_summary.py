"""A pod as the UnitedDeployment reconcile reads it, and nothing more.

A UD may have thousands of pods: the rule keeps what it needs of each pod it follows between
rounds, so a round does not decode any pod's whole JSON again.
Keeping whole pods decoded would cost many times their JSON (a realistic pod's spec and
annotations become thousands of small Python objects), and even a decoded summary costs more
than the JSON it came from. The reconcile reads only who the pod is (name, namespace, labels,
owners), whether and since when it is deleted or created, its phase, its conditions and its node:
:func:`summary` picks just those fields out of the watcher's JSON (msgspec skips the rest
without building it) and keeps them as compact JSON, a fifth of the pod's, beside the pod's
counted facts (:mod:`.followed_pods`), to be decoded only when the pod must be judged.
"""

from __future__ import annotations

from typing import Final

import msgspec

READ_CONDITIONS: Final = frozenset({"PodScheduled", "Ready"})
"""The pod conditions the reconcile reads (Adaptive's pending test, readiness)."""


class _OwnerRef(msgspec.Struct, omit_defaults=True, gc=False):
    apiVersion: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None


class _Metadata(msgspec.Struct, omit_defaults=True, gc=False):
    name: str = ""
    namespace: str = ""
    labels: dict[str, str] | None = None
    ownerReferences: list[_OwnerRef] | None = None
    creationTimestamp: str | None = None
    deletionTimestamp: str | None = None


class _Spec(msgspec.Struct, omit_defaults=True, gc=False):
    nodeName: str | None = None


class _Condition(msgspec.Struct, omit_defaults=True, gc=False):
    type: str = ""
    status: str | None = None
    reason: str | None = None
    lastTransitionTime: str | None = None


class _Status(msgspec.Struct, omit_defaults=True, gc=False):
    phase: str | None = None
    conditions: list[_Condition] | None = None


class _Pod(msgspec.Struct, omit_defaults=True, gc=False):
    metadata: _Metadata = msgspec.field(default_factory=_Metadata)
    spec: _Spec = msgspec.field(default_factory=_Spec)
    status: _Status = msgspec.field(default_factory=_Status)


_DECODER: Final = msgspec.json.Decoder(_Pod)
_ENCODER: Final = msgspec.json.Encoder()


def summary(raw: bytes) -> bytes:
    """The reconcile's fields of one pod, as JSON; a pod of an unusual shape is kept whole."""
    try:
        pod = _DECODER.decode(raw)
    except msgspec.ValidationError:
        return bytes(raw)
    conditions = pod.status.conditions
    if conditions:
        pod.status.conditions = [c for c in conditions if c.type in READ_CONDITIONS]
    return _ENCODER.encode(pod)
