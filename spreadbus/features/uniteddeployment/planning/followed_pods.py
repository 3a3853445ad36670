"""The pods the rule follows, counted per controller owner between rounds.

Every pod under some UnitedDeployment is kept as its facts (:mod:`..core.pod_groups`, built from
its summary, :mod:`.pod_summary`) in the group of the owner its controller reference names. A
changed pod moves its own facts and nothing else, and a round hands the reconcile the groups of
the UD's workloads and ReplicaSets as they stand: no pod is read or decoded for a round, except
those the reconcile must judge one by one.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from kubesemantics.group_version import api_group
from spreadbus.features.uniteddeployment.core.pod_groups import (
    OwnerKey,
    OwnerPods,
    PodFacts,
    facts_of,
)
from spreadbus.features.uniteddeployment.planning.family import Node
from spreadbus.features.uniteddeployment.planning.pod_summary import summary

_SUMMARY: Final = msgspec.json.Decoder(dict[str, Any])


def facts_from_json(raw: bytes) -> PodFacts:
    """One pod's facts from the watcher's JSON, keeping only its summary."""
    kept = summary(raw)
    return facts_of(_SUMMARY.decode(kept), kept)


def owner_node(key: OwnerKey) -> Node:
    namespace, api_version, kind, name, _ = key
    return (api_group(api_version), kind, namespace, name)


class FollowedPods:
    def __init__(self) -> None:
        self._facts: dict[str, PodFacts] = {}
        self._owners: dict[Node, dict[OwnerKey, OwnerPods]] = {}

    def __contains__(self, pod: str) -> bool:
        return pod in self._facts

    def put(self, pod: str, facts: PodFacts | None) -> None:
        """Follow ``pod`` (a projection key) with these facts; None: stop following it."""
        old = self._facts.pop(pod, None)
        if old is not None and old.owner is not None:
            node = owner_node(old.owner)
            groups = self._owners[node]
            group = groups[old.owner]
            group.put(pod, None)
            if not group:
                del groups[old.owner]
                if not groups:
                    del self._owners[node]
        if facts is None:
            return
        self._facts[pod] = facts
        if facts.owner is not None:
            groups = self._owners.setdefault(owner_node(facts.owner), {})
            groups.setdefault(facts.owner, OwnerPods()).put(pod, facts)

    def owned_by(self, owner: Node) -> dict[OwnerKey, OwnerPods]:
        """The groups of pods whose controller reference names ``owner`` (by any uid)."""
        return self._owners.get(owner, {})

    def __len__(self) -> int:
        return len(self._facts)
