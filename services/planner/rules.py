"""The rules this planner runs, in one place; a new placement rule is added here.

Each rule is a pure object satisfying :class:`spreadbus.projection.planning.Rule`; the planner
runs them in this order on every decision round and publishes their plans.
"""

from __future__ import annotations

from spreadbus.projection.observed_generation import ObservedGeneration
from spreadbus.projection.planning import Rule


def default_rules(cluster: str) -> list[Rule]:
    return [ObservedGeneration(cluster)]
