"""The pods of one cluster as a webhook replica keeps them: one view, each pod in the form every
feature that reads pods registers.

An admission review names a pod without carrying it (an eviction) or needs the other pods of its
spread, so every replica holds every pod of its cluster, and what it keeps per pod bounds it.
Each feature registers the one function that makes a pod's kept form (``Feature.webhook_pods``:
``keep(pod, name, namespace)``, a compact value that compares equal when a decision would read
two pods alike). The replica holds ONE :class:`PodView`: pods keyed by ``(namespace, name)`` in
one cluster, each observation decoded and identified once, and per pod one dictionary entry
whose value is the features' kept forms (the one form itself when one feature keeps pods).
A feature reads its own forms through its :class:`PodPart`, a mapping, and may listen to it to
re-read a pod only when its own kept form changed.

Signatures::

    pod_identity(event: Observation, cluster: str) -> tuple[str, str] | None
    is_pod_subject(subject: str) -> bool
    PodView(cluster: str, keeps: Sequence[Keep])   # keep(pod, name, namespace) -> kept form
        .fold(seq, subject, data)                   # the follower sink: pods, others skipped
        .observe(at: (namespace, name), pod | None) -> bool   # True: what is kept changed
        .part(index) -> PodPart[K]                  # the forms of keeps[index]
    PodPart[K]: Mapping[(namespace, name), K]; .listen(listener(at, pod | None, changed))
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, Generic, TypeVar

from events import codec
from events.messages import Observation
from events.subjects import escape

K = TypeVar("K")

POD_RESOURCE: Final = ("", "pods")
_POD_TOKEN: Final = escape("pods")
_ABSENT: Final = object()

Keep = Callable[[Mapping[str, Any], str, str], K]
"""A feature's kept form of one pod, given the pod, its name and its namespace."""
Listener = Callable[[tuple[str, str], Mapping[str, Any] | None, bool], None]
"""Told of every observation of a pod: its key, the pod (``None``: it is gone), and whether
the listening feature's kept form of it changed."""


def pod_identity(event: Observation, cluster: str) -> tuple[str, str] | None:
    """``(namespace, name)`` of a pod observed in ``cluster``; ``None`` for any other object, or
    a pod whose name or namespace is not text (a view counts or skips it, never raises)."""
    if event.cluster != cluster or (event.group, event.resource) != POD_RESOURCE:
        return None
    metadata = event.object.get("metadata")
    if not isinstance(metadata, dict):
        return None
    name, namespace = metadata.get("name"), metadata.get("namespace") or ""
    if not isinstance(name, str) or not isinstance(namespace, str):
        return None
    return namespace, name


def is_pod_subject(subject: str) -> bool:
    """An observation subject whose resource is ``pods`` (read before decoding: a fold that
    leaves pods to the pod view skips them unread)."""
    tokens = subject.split(".", 6)
    return len(tokens) == 7 and tokens[4] == _POD_TOKEN


class PodView:
    """``(namespace, name) ->`` every registered feature's kept form of the pod, in one cluster."""

    __slots__ = ("_keeps", "_listeners", "_single", "cluster", "kept", "skipped")

    def __init__(self, cluster: str, keeps: Sequence[Keep[Any]]) -> None:
        self.cluster = cluster
        self._keeps = tuple(keeps)
        self._single = len(self._keeps) == 1
        self._listeners: tuple[list[Listener], ...] = tuple([] for _ in self._keeps)
        self.kept: dict[tuple[str, str], Any] = {}
        """One entry per pod: the one kept form, or a tuple of them in ``keeps`` order."""
        self.skipped = 0
        """Pod observations not kept: a message that does not decode, or a pod without a
        name."""

    def part(self, index: int) -> PodPart[Any]:
        """The kept forms of ``keeps[index]``."""
        if not 0 <= index < len(self._keeps):
            raise IndexError(f"no keep {index} among {len(self._keeps)}")
        return PodPart(self, index)

    def fold(self, seq: int, subject: str, data: bytes) -> None:
        """Fold one message of the observation stream: a pod is kept (or forgotten), anything
        else is skipped before decoding."""
        if not self._keeps or not is_pod_subject(subject):
            return
        event = codec.decode(data)
        if not isinstance(event, Observation):
            self.skipped += 1
            return
        at = pod_identity(event, self.cluster)
        if at is None:
            if event.cluster == self.cluster:
                self.skipped += 1
            return
        self.observe(at, None if event.event == "DELETED" else event.object)

    def observe(self, at: tuple[str, str], pod: Mapping[str, Any] | None) -> bool:
        """Keep ``pod`` at ``(namespace, name)`` (``None``: it is gone), tell the listeners, and
        answer whether what is kept of it changed. The view stores ``at`` itself, so a feature's
        own index of the pod can share the key rather than hold a second one."""
        if pod is None:
            if self.kept.pop(at, None) is None:
                return False
            for listeners in self._listeners:
                for listener in listeners:
                    listener(at, None, True)
            return True
        namespace, name = at
        old = self.kept.get(at, _ABSENT)
        if self._single:
            new = self._keeps[0](pod, name, namespace)
            changed = old is _ABSENT or old != new
            if changed:
                self.kept[at] = new
            for listener in self._listeners[0]:
                listener(at, pod, changed)
            return changed
        forms = [keep(pod, name, namespace) for keep in self._keeps]
        flags = [old is _ABSENT or old[i] != form for i, form in enumerate(forms)]
        if any(flags):
            self.kept[at] = tuple(form if flag else old[i]
                                  for i, (form, flag) in enumerate(zip(forms, flags, strict=True)))
        for listeners, flag in zip(self._listeners, flags, strict=True):
            for listener in listeners:
                listener(at, pod, flag)
        return any(flags)

    def get(self, namespace: str, name: str) -> Any:
        """The pod's entry (every feature's form), or ``None``."""
        return self.kept.get((namespace, name))


class PodPart(Mapping[tuple[str, str], K], Generic[K]):
    """One feature's forms of the pods of a :class:`PodView`: ``(namespace, name) ->`` form."""

    __slots__ = ("_index", "_view")

    def __init__(self, view: PodView, index: int) -> None:
        self._view = view
        self._index = index

    def listen(self, listener: Listener) -> None:
        """Tell ``listener`` of every pod observed (after the view kept it)."""
        self._view._listeners[self._index].append(listener)

    def __getitem__(self, at: tuple[str, str]) -> K:
        found = self._view.kept[at]
        form: K = found if self._view._single else found[self._index]
        return form

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._view.kept)

    def __len__(self) -> int:
        return len(self._view.kept)

    def __contains__(self, at: object) -> bool:
        return at in self._view.kept
