"""The Kubernetes API access each service needs, declared once; ``deploy/rbac`` grants exactly this.

Only two services talk to the Kubernetes API; the planner and the webhook work from the bus.

- The watcher lists and watches its resources (``--resources``, whose defaults come from the
  workload kind table): verbs ``list`` and ``watch``, never ``get``, since it reads collections.
- The actuator applies plans. What a plan costs in API requests depends on its verb
  (:data:`PLAN_REQUESTS`): ``patch`` reads the object (uid and resourceVersion preconditions,
  "already true") and patches it; ``patch_status`` reads the object too (the status
  subresource's GET would need its own grant, and the main resource carries the same fields) and
  patches ``<resource>/status``; ``evict`` creates ``pods/eviction``; ``create`` creates the
  object and, when the name is taken, reads the object there (is it already ours?); ``delete``
  deletes it (reading it first when its grant names an owner the object must have). A grant
  that relates the target to its governor by a read (``governed``, ``named``) also reads the
  target before an eviction, and reads the governor and the links of the target's controller
  chain it may pass through (:meth:`~spreadbus.engine.plan_grants.PlanGrant.reads`). The plans
  the actuator may apply are those the registered features grant their rules
  (``Feature.plan_grants``, :mod:`spreadbus.engine.plan_grants`).

A feature whose rules emit a new kind of plan, or a new target, declares it; the test in
``tests/deploy`` then fails until ``deploy/rbac/actuator.yaml`` grants it, and fails too if the
RBAC grants anything the features do not need.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, NamedTuple

from spreadbus.engine.plan_grants import READ_RELATIONS, PlanGrant


class Access(NamedTuple):
    """One RBAC grant: API group (``""`` is core), resource (``res/sub`` if a subresource), verb."""

    group: str
    resource: str
    verb: str


WATCH_VERBS: Final = ("list", "watch")

PLAN_REQUESTS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "patch": (("", "get"), ("", "patch")),
    "patch_status": (("", "get"), ("status", "patch")),
    "evict": (("eviction", "create"),),
    "create": (("", "create"), ("", "get")),
    "delete": (("", "delete"),),
}
"""Plan verb -> (subresource, RBAC verb) of every request applying it makes."""

def watch_access(resources: Iterable[str]) -> frozenset[Access]:
    """What listing and watching ``[group/]version/resource`` specs needs."""
    out = set()
    for spec in resources:
        parts = spec.split("/")
        group = parts[0] if len(parts) == 3 else ""
        out |= {Access(group, parts[-1], verb) for verb in WATCH_VERBS}
    return frozenset(out)


def plan_access(grants: Iterable[PlanGrant]) -> frozenset[Access]:
    """What applying the plans these grants allow needs."""
    out = set()
    for grant in grants:
        requests = PLAN_REQUESTS[grant.verb]
        if grant.verb in ("delete", "evict") and (grant.controller is not None
                                                   or grant.relation in READ_RELATIONS):
            requests = (*requests, ("", "get"))  # the target is checked as read
        for sub, rbac_verb in requests:
            resource = f"{grant.resource}/{sub}" if sub else grant.resource
            out.add(Access(grant.group, resource, rbac_verb))
        out |= {Access(group, resource, "get") for group, resource in grant.reads()}
    return frozenset(out)
