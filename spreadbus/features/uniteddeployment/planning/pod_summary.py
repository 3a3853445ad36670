"""A pod as the UnitedDeployment reconcile reads it, and nothing more.

A UD's plan reads every one of its pods, and a UD may have thousands: the rule keeps each pod it
follows decoded between rounds, so a round costs the pods that changed, not a decode of them all.
Keeping whole pods decoded would cost many times their JSON (a realistic pod's spec, managed
fields and annotations become thousands of small Python objects); the reconcile reads only who
the pod is (name, namespace, labels, owners), whether and since when it is deleted or created,
its phase, its conditions and its node. :func:`summary` decodes just those fields straight from
the watcher's JSON (msgspec skips the rest without building it) into the same JSON shape.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec


class _Metadata(msgspec.Struct, omit_defaults=True, gc=False):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    labels: dict[str, str] | None = None
    ownerReferences: list[dict[str, Any]] | None = None
    creationTimestamp: str | None = None
    deletionTimestamp: str | None = None


class _Spec(msgspec.Struct, omit_defaults=True, gc=False):
    nodeName: str | None = None


class _Status(msgspec.Struct, omit_defaults=True, gc=False):
    phase: str | None = None
    conditions: list[dict[str, Any]] | None = None


class _Pod(msgspec.Struct, omit_defaults=True, gc=False):
    metadata: _Metadata = msgspec.field(default_factory=_Metadata)
    spec: _Spec = msgspec.field(default_factory=_Spec)
    status: _Status = msgspec.field(default_factory=_Status)


_DECODER: Final = msgspec.json.Decoder(_Pod)
_GENERIC: Final = msgspec.json.Decoder(dict[str, Any])


def summary(raw: bytes) -> dict[str, Any]:
    """The reconcile's fields of one pod; a pod of an unusual shape is kept whole."""
    try:
        pod = _DECODER.decode(raw)
    except msgspec.ValidationError:
        whole: dict[str, Any] = _GENERIC.decode(raw)
        return whole
    out: dict[str, Any] = msgspec.to_builtins(pod)
    out["apiVersion"] = "v1"
    out["kind"] = "Pod"
    return out
