"""What a set of features declares, folded over the set in its order: what the watcher
watches, what each service may do on NATS, what plans the actuator accepts.

Kept apart from :mod:`spreadbus.features.registry`, which is only the list, so the folds serve
any set (the built-in one, plugins, a test's) without naming a feature.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from spreadbus.engine.bus_access import BusAccess
from spreadbus.engine.feature import Feature
from spreadbus.engine.plan_grants import PlanGrant


def watched_resources(chosen: Sequence[Feature[Any]]) -> tuple[str, ...]:
    """Every resource the features watch, each once, in their order."""
    return tuple(dict.fromkeys(r for f in chosen for r in f.watches))


def bus_accesses(chosen: Sequence[Feature[Any]]) -> tuple[Mapping[str, BusAccess], ...]:
    """What each feature does on NATS, by service, in their order."""
    return tuple(f.bus for f in chosen)


def plan_grants(chosen: Sequence[Feature[Any]]) -> tuple[PlanGrant, ...]:
    """Every kind of plan the features' rules may emit, in their order."""
    return tuple(g for f in chosen for g in f.plan_grants)
