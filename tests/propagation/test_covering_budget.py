"""Which PodUnavailableBudget of the host covers a propagated template, the minimum it keeps
(Kruise's ``desiredAvailable`` over the template's replicas), and the step record on a binding
read from anything without a crash."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.propagation.core.covering_budget import Covering, covering, minimum_of
from spreadbus.features.propagation.core.stepped_replicas import (
    STEPPED_REPLICAS,
    held_above,
    recorded,
    text_of,
)

TEMPLATE: dict[str, Any] = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"replicas": 10, "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web", "tier": "front"}}}}}


def budget(name: str = "pub", namespace: str = "default", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


@pytest.mark.parametrize(("spec", "minimum"), [
    ({"maxUnavailable": 1}, 9),
    ({"maxUnavailable": "25%"}, 7),   # 2.5 rounded up to 3 unavailable
    ({"minAvailable": "25%"}, 3),     # 2.5 rounded up to 3 available
    ({"minAvailable": 4}, 4),
    ({"maxUnavailable": 20}, 0),
    ({"maxUnavailable": 1, "minAvailable": 10}, 9),  # maxUnavailable first, as Kruise
])
def test_the_minimum_is_kruises_desired_available(spec: dict[str, Any], minimum: int) -> None:
    assert minimum_of(budget(**spec), 10) == minimum


@pytest.mark.parametrize("spec", [
    {"maxUnavailable": "a lot"}, {"minAvailable": "50"}, {}, {"minAvailable": None}])
def test_a_budget_without_a_readable_minimum_covers_nothing(spec: dict[str, Any]) -> None:
    assert covering([budget(targetRef=TARGET, **spec)], TEMPLATE) is None


def test_a_budget_covers_by_target_ref_or_by_the_pod_labels() -> None:
    assert covering([budget(targetRef=TARGET, maxUnavailable=1)], TEMPLATE) == Covering(9)
    # The version of the targetRef does not matter, its group does.
    assert covering([budget(targetRef={**TARGET, "apiVersion": "apps/v1beta2"},
                            maxUnavailable=1)], TEMPLATE) == Covering(9)
    for other in ({**TARGET, "name": "api"}, {**TARGET, "kind": "StatefulSet"},
                  {**TARGET, "apiVersion": "apps.kruise.io/v1alpha1"}):
        assert covering([budget(targetRef=other, maxUnavailable=1)], TEMPLATE) is None
    assert covering([budget(selector={"matchLabels": {"tier": "front"}}, maxUnavailable=1)],
                    TEMPLATE) == Covering(9)
    assert covering([budget(selector={"matchLabels": {"tier": "back"}}, maxUnavailable=1)],
                    TEMPLATE) is None
    assert covering([budget(namespace="other", targetRef=TARGET, maxUnavailable=1)],
                    TEMPLATE) is None


def test_the_strictest_budget_wins_and_its_status_caps_the_moves() -> None:
    loose = budget("loose", targetRef=TARGET, maxUnavailable=3)
    strict = {**budget("strict", selector={"matchLabels": {"app": "web"}}, maxUnavailable=1),
              "status": {"unavailableAllowed": 0}}
    assert covering([loose, strict], TEMPLATE) == Covering(minimum=9, allowed=0)
    deleting = {**strict, "metadata": {**strict["metadata"],
                                       "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    assert covering([loose, deleting], TEMPLATE) == Covering(minimum=7)


def test_the_record_round_trips_and_names_only_held_copies() -> None:
    held = held_above({"member1": 2, "member2": 3}, {"member1": 2, "member2": 2})
    assert held == {"member2": 3}
    text = text_of(held)
    assert text == '{"member2":3}'
    assert recorded({"metadata": {"annotations": {STEPPED_REPLICAS: text}}}) == held
    assert text_of({}) is None


@settings(max_examples=200, deadline=None)
@given(value=st.one_of(st.text(max_size=40), st.integers(), st.none(),
                       st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=3)
                                       | st.booleans(), max_size=3).map(json.dumps)))
def test_any_annotation_reads_as_counts_or_nothing(value: object) -> None:
    found = recorded({"metadata": {"annotations": {STEPPED_REPLICAS: value}}})
    assert all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
               for v in found.values())
