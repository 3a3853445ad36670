"""Incremental loads (the webhook's path) always equal a full recount (the planner's path)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.workloadspread.core.model import from_object
from spreadbus.features.workloadspread.core.occupancy import (
    Loads,
    Reservation,
    SubsetLoad,
    apply_pod_change,
    apply_reservation,
    expire,
    loads_from_pods,
    reservations_from_status,
)
from tests.core.builders import pod, subset, workloadspread

NOW = datetime(2026, 1, 1, tzinfo=UTC)
WS = from_object(workloadspread(subset("a", 3), subset("b", 3), subset("c")))
JSON = dict[str, Any]


def normal(loads: Loads) -> dict[str, dict[str, SubsetLoad]]:
    empty = SubsetLoad()
    return {
        v: {s: load for s, load in subsets.items() if load != empty}
        for v, subsets in loads.items()
        if any(load != empty for load in subsets.values())
    }


def _pod(name: str, subset_name: str, phase: str) -> JSON:
    return pod(name, ws="ws", subset_name=subset_name, phase=phase)


def _in_slot(p: JSON, subset_name: str) -> bool:
    annotation = p["metadata"]["annotations"]["apps.kruise.io/matched-workloadspread"]
    return p["status"]["phase"] != "Succeeded" and f'"subset":"{subset_name}"' in annotation


events = st.lists(
    st.tuples(
        st.sampled_from(["reserve", "appear", "change", "delete-begin", "gone"]),
        st.integers(0, 5),
        st.sampled_from(["a", "b", "c"]),
        st.sampled_from(["Running", "Pending", "Succeeded"]),
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(events)
def test_incremental_loads_match_a_full_recount(ops: list[tuple[str, int, str, str]]) -> None:
    pods: dict[str, JSON] = {}
    reservations: list[Reservation] = []
    loads: Loads = {}
    for op, n, subset_name, phase in ops:
        name = f"p{n}"
        if op == "reserve" and name not in pods:
            r = Reservation("default/ws", "versionIgnored", subset_name, name, "creating", NOW)
            reservations.append(r)
            loads = apply_reservation(loads, r)
        elif op == "appear" and name not in pods:
            pods[name] = _pod(name, subset_name, phase)
            loads = apply_pod_change(loads, WS, None, pods[name])
        elif op == "change" and name in pods:
            new = _pod(name, subset_name, phase)
            loads = apply_pod_change(loads, WS, pods[name], new)
            pods[name] = new
        elif op == "delete-begin" and name in pods and pods[name]["status"]["phase"] != "Succeeded":
            annotation = pods[name]["metadata"]["annotations"][
                "apps.kruise.io/matched-workloadspread"
            ]
            current = annotation.split('"subset":"')[1].split('"')[0]
            r = Reservation("default/ws", "versionIgnored", current, name, "deleting", NOW)
            reservations.append(r)
            loads = apply_reservation(loads, r)
        elif op == "gone" and name in pods:
            loads = apply_pod_change(loads, WS, pods.pop(name), None)
        # A reservation is settled (and its record dropped) once its pod is seen or leaves its
        # slot; what remains in flight is what the recount sees.
        reservations = [
            r
            for r in reservations
            if (r.kind == "creating" and r.pod not in pods)
            or (r.kind == "deleting" and r.pod in pods and _in_slot(pods[r.pod], r.subset))
        ]
        recount = loads_from_pods(WS, list(pods.values()), reservations)
        assert normal(loads) == normal(recount)


def test_expiry_drops_only_reservations_past_their_deadline() -> None:
    loads: Loads = {}
    for r in [
        Reservation("default/ws", "v", "a", "old-create", "creating", NOW - timedelta(seconds=31)),
        Reservation("default/ws", "v", "a", "new-create", "creating", NOW - timedelta(seconds=30)),
        Reservation("default/ws", "v", "a", "old-delete", "deleting", NOW - timedelta(seconds=16)),
        Reservation("default/ws", "v", "a", "new-delete", "deleting", NOW - timedelta(seconds=15)),
    ]:
        loads = apply_reservation(loads, r)
    kept = expire(loads, NOW)["v"]["a"]
    assert set(kept.creating) == {"new-create"}
    assert set(kept.deleting) == {"new-delete"}


def _statuses(creating: dict[str, str]) -> list[JSON]:
    return [{"name": "a", "replicas": 0, "missingReplicas": 3, "creatingPods": creating}]


def test_status_reservations_of_a_version_without_its_own_entry_come_from_the_top_level() -> None:
    ws = from_object(
        workloadspread(
            subset("a", 3),
            subset("c"),
            status={
                "subsetStatuses": _statuses({"top": "2026-01-01T00:00:00Z"}),
                "versionedSubsetStatuses": {"old": _statuses({"old-pod": "2026-01-01T00:00:00Z"})},
            },
        )
    )

    def pods_of(version: str | None) -> set[tuple[str, str]]:
        return {(r.version, r.pod) for r in reservations_from_status(ws, version=version)}

    assert pods_of(None) == {("old", "old-pod")}
    assert pods_of("new") == {("old", "old-pod"), ("new", "top")}
    assert pods_of("old") == {("old", "old-pod")}
