"""One cluster's subset workloads of UnitedDeployments in other clusters, by the UD they name.

No owner reference links such a workload to its UD (:mod:`..core.member_workloads`), so the
owner graph ends at it; this index keeps, from the workloads that changed alone, which UD each
one names, and which workloads name each UD.
"""

from __future__ import annotations

from spreadbus.features.uniteddeployment.core.member_workloads import Identity
from spreadbus.features.uniteddeployment.planning.family import Node

UdName = tuple[str, str, str]
"""(cluster, namespace, name) of a UnitedDeployment."""


def ud_name(identity: Identity) -> UdName:
    return (identity.cluster, identity.namespace, identity.name)


class MemberIndex:
    def __init__(self) -> None:
        self._of: dict[Node, Identity] = {}
        self._by: dict[UdName, set[Node]] = {}

    def put(self, node: Node, identity: Identity | None) -> tuple[Identity | None,
                                                                   Identity | None]:
        """Record the UD ``node`` names now (None: none); answers the one before and now."""
        old = self._of.pop(node, None)
        if old is not None:
            names = self._by[ud_name(old)]
            names.discard(node)
            if not names:
                del self._by[ud_name(old)]
        if identity is not None:
            self._of[node] = identity
            self._by.setdefault(ud_name(identity), set()).add(node)
        return old, identity

    def __bool__(self) -> bool:
        return bool(self._of)

    def identity(self, node: Node) -> Identity | None:
        return self._of.get(node)

    def workloads(self, ud: UdName) -> set[Node]:
        """The workloads naming that UD (by any uid)."""
        return set(self._by.get(ud, ()))
