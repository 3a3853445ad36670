"""The cluster registry as a webhook replica has seen it: the Cluster objects (both served
kinds) of its cluster's observations, so validation can look a subset's ``targetCluster`` up.

Only observations of the two Cluster resources are decoded; every other message is skipped on
its subject. A replica that has not yet seen any Cluster of a kind does not know that registry,
and validation then does not look targets of that kind up (as offline without Cluster objects).
"""

from __future__ import annotations

from typing import Any

from events import codec, subjects
from events.messages import Observation
from spreadbus.clusterregistry.registry import SERVED_KINDS

_RESOURCES = frozenset((k.group, k.plural) for k in SERVED_KINDS)


class ClusterRegistryView:
    def __init__(self) -> None:
        self._objects: dict[tuple[str, str, str], dict[str, Any]] = {}

    def apply_message(self, subject: str, data: bytes) -> None:
        if not subject.startswith(f"{subjects.OBSERVATIONS}."):
            return
        try:
            parts = subjects.parse_observation(subject)
        except subjects.SubjectError:
            return
        if (parts.group, parts.resource) not in _RESOURCES:
            return
        event = codec.decode(data)
        if not isinstance(event, Observation):
            return
        key = (parts.group, parts.namespace, parts.name)
        if event.event == "DELETED":
            self._objects.pop(key, None)
        else:
            self._objects[key] = event.object

    def clusters(self) -> list[dict[str, Any]]:
        """Every Cluster object seen and not deleted since."""
        return list(self._objects.values())
