"""The pods of one cluster as a webhook replica keeps them, each in the form its feature registers.

An admission review names a pod without carrying it (an eviction) or needs the other pods of its
spread, so every replica holds every pod of its cluster, and what it keeps per pod bounds it.
Each feature registers the one function that makes a pod's kept form (``keep(pod, name,
namespace)``, a compact value that compares equal when a decision would read two pods alike);
:class:`PodView` holds what the shared part of every such view is: pods keyed by ``(namespace,
name)`` in one cluster, the observation's identity read once, and whether an observation changes
what is kept, so that a feature re-reads a pod only when its kept form changed. It holds nothing
per pod beyond the feature's kept value in one dictionary entry.

Signatures::

    pod_identity(event: Observation, cluster: str) -> tuple[str, str] | None
    PodView(cluster: str, keep: Keep[K])   # keep(pod, name, namespace) -> K
        .observe(at: (namespace, name), pod | None) -> bool   # True: what is kept changed
        .kept: dict[tuple[str, str], K]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Generic, TypeVar

from events.messages import Observation

K = TypeVar("K")

POD_RESOURCE: Final = ("", "pods")

Keep = Callable[[Mapping[str, Any], str, str], K]
"""A feature's kept form of one pod, given the pod, its name and its namespace."""


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


class PodView(Generic[K]):
    """``(namespace, name) ->`` the pod's kept form, for the pods of one cluster."""

    __slots__ = ("cluster", "keep", "kept")

    def __init__(self, cluster: str, keep: Keep[K]) -> None:
        self.cluster = cluster
        self.keep = keep
        self.kept: dict[tuple[str, str], K] = {}

    def observe(self, at: tuple[str, str], pod: Mapping[str, Any] | None) -> bool:
        """Keep ``pod`` at ``(namespace, name)`` (``None``: it is gone); whether what is kept of
        it changed. The view stores ``at`` itself, so a feature's own index of the pod can share
        the key rather than hold a second one."""
        if pod is None:
            return self.kept.pop(at, None) is not None
        kept = self.keep(pod, at[1], at[0])
        if self.kept.get(at) == kept:
            return False
        self.kept[at] = kept
        return True

    def get(self, namespace: str, name: str) -> K | None:
        return self.kept.get((namespace, name))
