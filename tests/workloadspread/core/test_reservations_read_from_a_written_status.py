"""The offline commands read a written status's creating and deleting entries as reservations."""

from __future__ import annotations

from typing import Any

from spreadbus.features.workloadspread.core.model import from_object
from spreadbus.features.workloadspread.core.occupancy import reservations_from_status
from tests.workloadspread.core.builders import subset, workloadspread

JSON = dict[str, Any]


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
