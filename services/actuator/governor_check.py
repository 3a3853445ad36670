"""Reading a plan's governor, and a checked patch's target, before the plan is applied.

:mod:`spreadbus.engine.governor_check` decides; this reads what it asks for. Every plan of a
grant with a governor reads that governor, through :class:`~services.actuator.scope_cache.
ScopeCache` (kept 3 s, so a burst of plans of one governor reads it once; the scope check of a
pod plan then finds it kept too). A patch whose grant checks what it writes (a UnitedDeployment's
subset workload) also reads its target, fresh, since the check judges the object the patch
leaves. A governor not found is never kept: a plan is dropped as "gone" only on a read sent for
it. Any verdict reached with a kept governor (or one another check's read brought) is checked
again on a fresh read, as the scope check does, so a governor changed within the keeping time
neither refuses nor drops a plan decided on the change. A governor that lives in the host
(``Governor.in_host``: a propagated template's binding) is read from the host's API server when
the actuator has one (a member's), through a cache of its own.

A plan whose governor is in another cluster (``Plan.governor_cluster``: a UnitedDeployment in the
host, for its subset workload in this member) is covered only by an ``identified`` grant. Its
governor is read from that cluster's API server, the host's, as the actuator was given it
(``--host-kubeconfig``, named ``--host-cluster``); a plan naming any other cluster, or any plan of
an actuator given no host, is refused. The grant's ``identifies`` then judges the target (read
fresh here, or the object a create makes) against the governor as read: the target must name it,
and the governor must ask for the write in this cluster, or, for a delete, no longer ask for the
target (gone, another uid, or its subset no longer here). A create or patch then passes the
usual governor and ``follows`` checks.
"""

from __future__ import annotations

from typing import Any

from events.messages import Plan
from services.actuator.scope_cache import ScopeCache
from services.actuator.scope_check import Get
from spreadbus.engine.governor_check import (
    CHECKED_VERBS,
    Dropped,
    Refusal,
    governed,
    judge_governor,
    judge_written,
    written_object,
)
from spreadbus.engine.plan_grants import Granted, PlanGrant
from spreadbus.runtime.kube_client import NotFound, resource_path

Verdict = Dropped | Refusal | None


class GovernorCheck:
    """The governor of each plan, and a checked patch's target, read and judged."""

    def __init__(self, scope: ScopeCache, get: Get, *, host: ScopeCache | None = None,
                 host_cluster: str = "") -> None:
        self._scope = scope
        self._get = get
        self._host = host
        self._host_cluster = host_cluster

    async def judge(self, plan: Plan, granted: Granted) -> Verdict:
        """None when the plan may go on to be applied."""
        grant = granted.covered_by
        if grant is None or not governed(plan, grant):
            return None
        if grant.relation == "identified":
            verdict, reused = await self._identified(plan, grant, fresh=False)
            if verdict is not None and reused:
                verdict, _ = await self._identified(plan, grant, fresh=True)
            return verdict
        verdict, reused = await self._judge(plan, grant, fresh=False)
        if verdict is not None and reused:
            verdict, _ = await self._judge(plan, grant, fresh=True)
        return verdict

    async def _identified(self, plan: Plan, grant: PlanGrant, *,
                          fresh: bool) -> tuple[Verdict, bool]:
        """A plan whose governor is in the host: read there, and named by the target."""
        host = self._host
        if host is None or plan.governor_cluster != self._host_cluster:
            return Refusal(f"its governor is in cluster {plan.governor_cluster!r}, whose API "
                           "server this actuator does not read"), False
        ref = plan.governor
        assert ref is not None
        assert grant.governor is not None
        assert grant.identifies is not None
        path = resource_path(ref.group, ref.version, ref.resource, ref.namespace, ref.name)
        governor: dict[str, Any] | None
        try:
            governor, reused = await host.governor(path, fresh=fresh)
        except NotFound:
            governor, reused = None, False
        before: dict[str, Any] | None = None
        if plan.verb == "create":
            target = written_object(plan, None)
            if isinstance(target, str):
                return Refusal(target), reused
        else:
            t = plan.target
            try:
                before = await self._get(resource_path(t.group, t.version, t.resource,
                                                       t.namespace, t.name))
            except NotFound as exc:
                if plan.verb == "delete":
                    return None, reused  # gone already: the delete finds it so
                return Dropped(404, "NotFound", exc.message), reused
            target = before
        why = grant.identifies(plan, governor, target)
        if why:
            return Refusal(why), reused
        if plan.verb == "delete":
            return None, reused
        verdict = judge_governor(plan, grant.governor, governor)
        if verdict is not None or governor is None:
            return verdict, reused
        return judge_written(plan, grant, governor, before), reused

    async def _judge(self, plan: Plan, grant: PlanGrant, *, fresh: bool) -> tuple[Verdict, bool]:
        ref = plan.governor
        assert ref is not None  # governed()
        assert grant.governor is not None
        path = resource_path(ref.group, ref.version, ref.resource, ref.namespace, ref.name)
        governor: dict[str, Any] | None
        scope = (self._host if grant.governor.in_host and self._host is not None
                 else self._scope)
        try:
            governor, reused = await scope.governor(path, fresh=fresh)
        except NotFound:
            governor, reused = None, False
        verdict = judge_governor(plan, grant.governor, governor)
        if verdict is not None or governor is None:
            return verdict, reused
        if grant.follows is None or plan.verb not in CHECKED_VERBS:
            return None, reused
        before: dict[str, Any] | None = None
        if plan.verb == "patch":
            target = plan.target
            try:
                before = await self._get(resource_path(target.group, target.version,
                                                       target.resource, target.namespace,
                                                       target.name))
            except NotFound as exc:
                return Dropped(404, "NotFound", exc.message), reused
        return judge_written(plan, grant, governor, before), reused
