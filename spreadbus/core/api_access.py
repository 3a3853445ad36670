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
  deletes it. The resources a plan may target are those the registered features declare
  (``Feature.plan_targets``, gathered by :func:`spreadbus.features.registry.plan_targets`).

A feature whose rules emit a new kind of plan, or a new target, declares it; the test in
``tests/deploy`` then fails until ``deploy/rbac/actuator.yaml`` grants it, and fails too if the
RBAC grants anything the features do not need.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, NamedTuple


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


def plan_access(targets: Iterable[tuple[str, str, str]]) -> frozenset[Access]:
    """What applying plans of these (verb, group, resource) needs."""
    out = set()
    for verb, group, resource in targets:
        for sub, rbac_verb in PLAN_REQUESTS[verb]:
            out.add(Access(group, f"{resource}/{sub}" if sub else resource, rbac_verb))
    return frozenset(out)
