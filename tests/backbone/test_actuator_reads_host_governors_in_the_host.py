"""A governor that lives in the host (a propagated template's binding) is read from the host's
API server by a member's actuator, and from nowhere else: without a host the plan finds no
governor and is dropped unsent; a governor of the member's own (any other grant) is read from
the member as before."""

from __future__ import annotations

from typing import Any

from events.messages import ObjectRef, Plan
from services.actuator.governor_check import GovernorCheck
from services.actuator.scope_cache import ScopeCache, ScopeLimits
from spreadbus.engine.governor_check import Dropped
from spreadbus.engine.plan_grants import Governor, Granted, PlanAuthority, PlanGrant
from spreadbus.runtime.kube_client import NotFound

NONE = ScopeLimits(governor_seconds=0, link_seconds=0)
PATH = "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings/web-deployment"
BINDING = {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
           "metadata": {"name": "web-deployment", "namespace": "default", "uid": "rb1",
                        "generation": 4}}


class Api:
    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        self.objects = objects
        self.reads: list[str] = []

    async def get(self, path: str) -> dict[str, Any]:
        self.reads.append(path)
        if path not in self.objects:
            raise NotFound(404, "NotFound", path)
        return self.objects[path]


def grant(in_host: bool) -> PlanGrant:
    return PlanGrant(rule="r", verb="delete", group="apps", resource="deployments",
                     governor=Governor(group="work.karmada.io", kind="ResourceBinding",
                                       resource="resourcebindings", in_host=in_host),
                     relation="named", names="spec.resource")


def plan() -> Plan:
    return Plan(id="p", cluster="member1", verb="delete", rule="r",
                target=ObjectRef(group="apps", version="v1", resource="deployments",
                                 namespace="default", name="web"),
                governor=ObjectRef(group="work.karmada.io", version="v1alpha2",
                                   resource="resourcebindings", namespace="default",
                                   name="web-deployment", uid="rb1"),
                governor_generation=4)


async def verdict(in_host: bool, member: Api, host: Api | None) -> object:
    granted = PlanAuthority([grant(in_host)]).authorize(plan())
    assert isinstance(granted, Granted), granted
    check = GovernorCheck(ScopeCache(member.get, limits=NONE), member.get,
                          host=ScopeCache(host.get, limits=NONE) if host else None)
    return await check.judge(plan(), granted)


async def test_a_host_governor_is_read_in_the_host() -> None:
    member, host = Api({}), Api({PATH: BINDING})
    assert await verdict(True, member, host) is None
    assert (member.reads, host.reads) == ([], [PATH])


async def test_without_a_host_the_plan_finds_no_governor_and_is_dropped() -> None:
    member = Api({})
    found = await verdict(True, member, None)
    assert isinstance(found, Dropped)
    assert found.status == 404
    assert member.reads == [PATH]


async def test_a_governor_of_the_members_own_is_read_in_the_member() -> None:
    member, host = Api({PATH: BINDING}), Api({})
    assert await verdict(False, member, host) is None
    assert (member.reads, host.reads) == ([PATH], [])
