"""Reading what a plan's governor governs before its plan is applied.

:mod:`spreadbus.engine.plan_scope` decides; this reads the objects it asks for. The cost of one
plan: the governor, when the grant needs one of its fields (a WorkloadSpread's ``targetRef``, a
budget's selector, a rebalancer's list), plus one read per link of the target's controller chain
that is not yet the one sought (a ReplicaSet for a Deployment's pod). The target itself is read
by the caller, which needs it anyway. Those reads go through :class:`Reads`: straight to the
API (:class:`Uncached`) or through :class:`services.actuator.scope_cache.ScopeCache`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from events.messages import ObjectRef, Plan
from spreadbus.engine.plan_grants import PlanGrant
from spreadbus.engine.plan_scope import (
    MAX_HOPS,
    Read,
    chain_end,
    named,
    selected,
    step,
    uid_of,
)
from spreadbus.runtime.kube_client import resource_path

Get = Callable[[str], Awaitable[dict[str, Any]]]


class Reads(Protocol):
    """Where the check's reads come from."""

    async def governor(self, path: str) -> dict[str, Any]:
        """The governor at ``path``."""
        ...

    async def link(self, path: str, uid: str) -> dict[str, Any]:
        """The chain link at ``path`` that an owner reference names with ``uid``."""
        ...


@dataclass(frozen=True)
class Uncached:
    """Every read sent to the API."""

    get: Get

    async def governor(self, path: str) -> dict[str, Any]:
        return await self.get(path)

    async def link(self, path: str, uid: str) -> dict[str, Any]:
        return await self.get(path)


@dataclass(frozen=True)
class OutOfScope:
    """The governor does not govern the target: the plan is refused."""

    message: str


@dataclass(frozen=True)
class Stale:
    """An object the decision was made on was replaced since (another uid): the plan fails."""

    message: str


async def judge(plan: Plan, grant: PlanGrant, target: dict[str, Any],
                reads: Reads) -> OutOfScope | Stale | None:
    """None when the plan's governor governs ``target`` (the plan's target as read)."""
    ref = plan.governor
    kind = grant.governor
    if ref is None or kind is None:
        return OutOfScope("it names no governor")  # authorize refuses these first
    who = f"{kind.kind} {_name(ref)}"
    governor: dict[str, Any] | None = None
    if grant.reach or grant.selector or grant.names:
        governor = await reads.governor(resource_path(ref.group, ref.version, ref.resource,
                                                      ref.namespace, ref.name))
        uid = uid_of(governor)
        if ref.uid and uid != ref.uid:
            return Stale(f"the governing {who} is now uid {uid!r}, the plan was for {ref.uid!r}")
    namespace = plan.target.namespace
    if grant.relation == "named":
        if not named(grant, governor, target, namespace):
            return OutOfScope(f"the {who} does not name it")
        if grant.marked is not None and not grant.marked(governor or {}, target):
            return OutOfScope(f"it is not the {who}'s: it does not name it back")
        return None
    if selected(grant, governor, target):
        return None
    end = chain_end(grant, ref.name, ref.uid, governor)
    if end is None:
        return OutOfScope(f"the {who} names no workload at {grant.reach}")
    obj = target
    for hop in range(MAX_HOPS + 1):
        verdict = step(grant, end, obj)
        if verdict is True:
            return None
        if isinstance(verdict, str):
            return OutOfScope(f"it is not governed by the {who}: {verdict}")
        if hop == MAX_HOPS:
            break
        obj = await reads.link(_path(verdict, namespace), verdict.uid)
        uid = uid_of(obj)
        if verdict.uid and uid != verdict.uid:
            return Stale(f"{verdict.resource} {verdict.name!r} is now uid {uid!r}, its "
                         f"owner reference names {verdict.uid!r}")
    return OutOfScope(f"it is not governed by the {who}: no path to {end} "
                      f"within {MAX_HOPS} owners")


def _path(read: Read, namespace: str) -> str:
    return resource_path(read.group, read.version, read.resource, namespace, read.name)


def _name(ref: ObjectRef) -> str:
    return f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name
