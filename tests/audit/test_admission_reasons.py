"""The reason an admission gives for its subset, in the words of the choice's own passes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from spreadbus.features.workloadspread.core.admission_reasons import (
    admission_reason,
    subsets_seen,
)
from spreadbus.features.workloadspread.core.model import WorkloadSpread, from_object
from spreadbus.features.workloadspread.core.occupancy import SubsetLoad
from spreadbus.features.workloadspread.core.subset_choice import choose_subset

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def ws(*subsets: dict[str, Any], unschedulable: tuple[str, ...] = ()) -> WorkloadSpread:
    return from_object({
        "metadata": {"name": "ws", "namespace": "ns"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "subsets": list(subsets)},
        "status": {"subsetStatuses": [
            {"name": n, "conditions": [{"type": "Schedulable", "status": "False"}]}
            for n in unschedulable]},
    })


FIXED = {"name": "fixed", "maxReplicas": 100}
ELASTIC = {"name": "elastic"}


def reason(spread: WorkloadSpread, active: dict[str, int]) -> tuple[str | None, str]:
    loads = {name: SubsetLoad(active=n) for name, n in active.items()}
    chosen = choose_subset(spread, replicas=150, loads=loads, now=NOW)
    seen = subsets_seen(spread, replicas=150, loads=loads, now=NOW)
    return chosen, admission_reason(spread, seen, chosen)


def test_the_101st_pod_goes_elastic_because_fixed_is_full() -> None:
    assert reason(ws(FIXED, ELASTIC), {"fixed": 100}) == (
        "elastic", "fixed is full (100/100); elastic has room (0/unlimited)")
    assert reason(ws(FIXED, ELASTIC), {"fixed": 99}) == ("fixed", "fixed has room (99/100)")


def test_unschedulable_minimum_and_none() -> None:
    spread = ws(FIXED, ELASTIC, unschedulable=("fixed",))
    assert reason(spread, {}) == (
        "elastic", "fixed is unschedulable; elastic has room (0/unlimited)")
    with_minimum = ws(FIXED, {"name": "elastic", "minReplicas": 2})
    assert reason(with_minimum, {"fixed": 5}) == ("elastic", "elastic is below its minimum (0/2)")
    small = ws({"name": "a", "maxReplicas": 1}, {"name": "b", "maxReplicas": 1})
    assert reason(small, {"a": 1, "b": 1}) == (
        None, "no subset has room: a is full (1/1); b is full (1/1)")
