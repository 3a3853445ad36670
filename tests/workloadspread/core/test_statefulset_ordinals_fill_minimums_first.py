"""StatefulSet pods are placed by ordinal, and minReplicas lays the ordinals out minimums first."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.workloadspread.core.admission import admit_create_for
from spreadbus.features.workloadspread.core.model import from_object
from spreadbus.features.workloadspread.core.occupancy import subset_minimum
from spreadbus.features.workloadspread.core.subset_choice import (
    INT32_MAX,
    choose_subset_by_ordinal,
    ordinal_layout,
)
from spreadbus.features.workloadspread.core.validation import validate_workloadspread
from tests.workloadspread.core.builders import pod, subset, workloadspread

JSON = dict[str, Any]
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def statefulset_spread(*subsets: JSON, status: JSON | None = None) -> Any:
    return from_object(workloadspread(*subsets, kind="StatefulSet", status=status))


@pytest.mark.parametrize(
    ("ordinal", "expected"),
    [
        (0, "b"),
        (1, "b"),
        (2, "c"),
        (3, "a"),
        (5, "a"),
        (6, "b"),
        (8, "b"),
        (9, "c"),
        (10_000, "c"),
        (-1, "a"),  # no ordinal: the first schedulable subset, as in Kruise
    ],
)
def test_ordinals_fill_every_minimum_then_the_room_above_them(ordinal: int, expected: str) -> None:
    ws = statefulset_spread(
        subset("a", 3), subset("b", 5, minReplicas=2), subset("c", minReplicas=1)
    )
    assert choose_subset_by_ordinal(ws, ordinal) == expected


def test_an_unschedulable_subset_gives_up_its_minimum_and_its_room() -> None:
    ws = statefulset_spread(
        subset("a", 3, minReplicas=1),
        subset("b", 2, minReplicas=2),
        subset("c", 2, minReplicas=1),
        status={
            "subsetStatuses": [
                {"name": "b", "conditions": [{"type": "Schedulable", "status": "False"}]}
            ]
        },
    )
    placed = [choose_subset_by_ordinal(ws, i) for i in range(6)]
    assert placed == ["a", "c", "a", "a", "c", None]


def test_the_webhook_places_a_statefulset_pod_by_its_ordinal_and_minimums() -> None:
    ws = statefulset_spread(subset("a", 3), subset("b", 5, minReplicas=2))
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "default", "uid": "sts"},
    }
    decisions = [
        admit_create_for(
            ws, pod(f"web-{i}", owner=sts), replicas=8, loads={}, now=NOW, generated_uid="u"
        )
        for i in range(4)
    ]
    assert [d.subset for d in decisions] == ["b", "b", "a", "a"]
    assert all(d.reservation is None for d in decisions)  # no bookkeeping for StatefulSets


def test_a_percentage_minimum_is_refused_and_reserves_no_ordinals_if_it_gets_through() -> None:
    spec = workloadspread(subset("a", 3), subset("b", 4, minReplicas="50%"), kind="StatefulSet")
    assert [(e.field, e.message) for e in validate_workloadspread(spec)] == [
        ("spec.subsets[1].minReplicas", "minReplicas must be an integer")
    ]
    # A spread stored without validation: the layout reserves what the first-fit rule does.
    ws = from_object(spec)
    assert ordinal_layout(ws) == [("a", 0), ("b", 0), ("a", 3), ("b", 4)]
    assert [subset_minimum(s, 8) for s in ws.subsets] == [0, 0]
    assert [choose_subset_by_ordinal(ws, i) for i in range(8)] == ["a"] * 3 + ["b"] * 4 + [None]


def kruise_threshold_choice(limits: list[int | None], ordinal: int) -> str | None:
    """Kruise's rule, restated: running totals of maxReplicas (unlimited is 2^31-1)."""
    threshold = 0
    for i, limit in enumerate(limits):
        threshold += INT32_MAX if limit is None else limit
        if ordinal < threshold:
            return f"s{i}"
    return None


@st.composite
def ordinal_specs(draw: st.DrawFn) -> list[tuple[int | None, int]]:
    """Per subset (maxReplicas, minReplicas) as validation allows them for a StatefulSet."""
    spec: list[tuple[int | None, int]] = []
    for _ in range(draw(st.integers(1, 4))):
        maximum = draw(st.one_of(st.none(), st.integers(0, 6)))
        spec.append((maximum, draw(st.integers(0, 6 if maximum is None else maximum))))
    return spec


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(0, 6)), min_size=1, max_size=4))
def test_without_minimums_ordinals_follow_kruise_thresholds(limits: list[int | None]) -> None:
    ws = statefulset_spread(*(subset(f"s{i}", m) for i, m in enumerate(limits)))
    for ordinal in range(-1, 30):
        assert choose_subset_by_ordinal(ws, ordinal) == kruise_threshold_choice(limits, ordinal)


@settings(max_examples=200, deadline=None)
@given(ordinal_specs())
def test_at_any_replica_count_no_subset_is_above_its_minimum_while_another_is_below(
    spec: list[tuple[int | None, int]],
) -> None:
    ws = statefulset_spread(*(subset(f"s{i}", m, minReplicas=n) for i, (m, n) in enumerate(spec)))
    names = [f"s{i}" for i in range(len(spec))]
    counts = dict.fromkeys(names, 0)
    # A StatefulSet of N replicas holds ordinals 0..N-1: growing N is scale-out, shrinking it
    # (highest ordinal first) is scale-in, so checking every N covers both directions.
    for ordinal in range(40):
        chosen = choose_subset_by_ordinal(ws, ordinal)
        if chosen is None:
            assert all(m is not None and counts[f"s{i}"] == m for i, (m, _) in enumerate(spec))
            break
        counts[chosen] += 1
        for name, (maximum, _) in zip(names, spec, strict=True):
            assert maximum is None or counts[name] <= maximum
        above = [n for n, (_, minimum) in zip(names, spec, strict=True) if counts[n] > minimum]
        below = [n for n, (_, minimum) in zip(names, spec, strict=True) if counts[n] < minimum]
        assert not (above and below), (ordinal, counts)


@settings(max_examples=200, deadline=None)
@given(ordinal_specs(), st.integers(0, 50))
def test_the_ordinal_layout_reserves_the_minimums_the_first_fit_rule_keeps(
    spec: list[tuple[int | None, int]], replicas: int
) -> None:
    ws = statefulset_spread(*(subset(f"s{i}", m, minReplicas=n) for i, (m, n) in enumerate(spec)))
    reserved = ordinal_layout(ws)[: len(spec)]
    assert reserved == [(s.name, subset_minimum(s, replicas)) for s in ws.subsets]
