"""What a webhook replica keeps of one pod: the fields an admission decision reads, compactly.

A replica folds every pod of its cluster and must answer from memory, so what it holds per pod
is what bounds it. A decoded pod is about five times its JSON (a dict per object, a string per
value); the decisions read a handful of its fields: the name, the kind, the phase and deletion
(:func:`kubesemantics.pod_status.active_deleting_truthy`), the matched-workloadspread
annotation, the two labels a version is read from and the controller owner reference. A
:class:`KeptPod` holds exactly these, in a slotted struct that the garbage collector does not
track, with every string that repeats across pods (namespace, kind, phase, annotation, labels)
interned and each controller owner shared by all of its pods.

:meth:`KeptPod.to_object` hands a decision back a pod object that the counting rule and the
deletion path read as they would the whole pod (a property test checks that every reading
agrees). Two pods kept alike read alike, so a new version of a pod whose kept form is equal to
the one held needs no new reading.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Iterator, Mapping
from typing import Any, Final

import msgspec

from kubesemantics.owner_refs import controller_ref
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.model import MATCHED_ANNOTATION

TEMPLATE_HASH: Final = "pod-template-hash"
REVISION_HASH: Final = "controller-revision-hash"


class Owner(msgspec.Struct, frozen=True, weakref=True):
    """A pod's controller owner reference: one object shared by all of the owner's pods."""

    api_version: str
    kind: str
    name: str
    uid: str

    def to_object(self) -> dict[str, Any]:
        return {"apiVersion": self.api_version, "kind": self.kind, "name": self.name,
                "uid": self.uid, "controller": True}


_OWNERS: weakref.WeakValueDictionary[tuple[str, str, str, str], Owner] = (
    weakref.WeakValueDictionary()
)
"""Owners in use, to share: an entry goes with the last pod that holds its owner."""


def _text(value: object) -> str:
    return sys.intern(value) if isinstance(value, str) else ""


def _owner(ref: Mapping[str, Any] | None) -> Owner | None:
    if ref is None:
        return None
    fields = (_text(ref.get("apiVersion")), _text(ref.get("kind")), _text(ref.get("name")),
              _text(ref.get("uid")))
    found = _OWNERS.get(fields)
    if found is None:
        found = _OWNERS[fields] = Owner(*fields)
    return found


def _interned(value: str | None) -> str | None:
    return None if value is None else sys.intern(value)


def _deletion(value: object) -> str | None:
    """A deletion timestamp is only read for being set; any set value is kept as text."""
    if not value:
        return None
    return sys.intern(value if isinstance(value, str) else msgspec.json.encode(value).decode())


class KeptPod(msgspec.Struct, frozen=True, gc=False):
    """One pod as a webhook replica holds it (see the module docstring)."""

    name: str
    namespace: str
    kind: str | None
    phase: str | None
    deletion: str | None
    matched: str | None
    template_hash: str | None
    revision_hash: str | None
    owner: Owner | None

    @classmethod
    def of(cls, pod: pod_state.Pod, name: str, namespace: str) -> KeptPod:
        """The kept form of ``pod``, named as the view files it."""
        kind = pod.get("kind")
        status = pod.get("status")
        phase = status.get("phase") if isinstance(status, Mapping) else None
        metadata = pod_state.metadata(pod)
        labels = metadata.get("labels")
        if not isinstance(labels, Mapping):
            labels = {}
        template_hash, revision_hash = labels.get(TEMPLATE_HASH), labels.get(REVISION_HASH)
        return cls(
            name=name,
            namespace=sys.intern(namespace),
            kind=sys.intern(kind) if isinstance(kind, str) else None,
            phase=sys.intern(phase) if isinstance(phase, str) else None,
            deletion=_deletion(metadata.get("deletionTimestamp")),
            matched=_interned(pod_state.annotation(pod, MATCHED_ANNOTATION)),
            template_hash=sys.intern(template_hash) if isinstance(template_hash, str) else None,
            revision_hash=sys.intern(revision_hash) if isinstance(revision_hash, str) else None,
            owner=_owner(controller_ref(pod)),
        )

    def to_object(self) -> dict[str, Any]:
        """A pod object with only the kept fields, read by the rules as the whole pod is."""
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        labels = {}
        if self.template_hash is not None:
            labels[TEMPLATE_HASH] = self.template_hash
        if self.revision_hash is not None:
            labels[REVISION_HASH] = self.revision_hash
        if labels:
            metadata["labels"] = labels
        if self.matched is not None:
            metadata["annotations"] = {MATCHED_ANNOTATION: self.matched}
        if self.owner is not None:
            metadata["ownerReferences"] = [self.owner.to_object()]
        if self.deletion is not None:
            metadata["deletionTimestamp"] = self.deletion
        pod: dict[str, Any] = {"apiVersion": "v1"}
        if self.kind is not None:
            pod["kind"] = self.kind
        pod["metadata"] = metadata
        if self.phase is not None:
            pod["status"] = {"phase": self.phase}
        return pod


class KeptPods(Mapping[tuple[str, str], dict[str, Any]]):
    """``(namespace, name) ->`` the kept pod, read as its object (:meth:`KeptPod.to_object`)."""

    __slots__ = ("kept",)

    def __init__(self, kept: Mapping[tuple[str, str], KeptPod]) -> None:
        self.kept = kept

    def __getitem__(self, key: tuple[str, str]) -> dict[str, Any]:
        return self.kept[key].to_object()

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.kept)

    def __len__(self) -> int:
        return len(self.kept)
