"""Both API versions decode to one model; IntOrString scaling; JSON Patch round trips."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesemantics import json_patch
from kubesemantics.intstr import IntOrStrError, int_value, scaled_value
from spreadbus.features.workloadspread.core.model import (
    Condition,
    Status,
    SubsetStatus,
    from_object,
    status_to_json,
)
from tests.workloadspread.core.builders import zone_term


def test_v1alpha1_and_v1beta1_field_names_decode_the_same() -> None:
    pref = [{"weight": 3, "preference": zone_term("b")}]
    alpha: dict[str, Any] = {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "WorkloadSpread",
        "metadata": {"name": "ws", "namespace": "ns"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "subsets": [
                {
                    "name": "a",
                    "requiredNodeSelectorTerm": zone_term("a"),
                    "preferredNodeSelectorTerms": pref,
                    "maxReplicas": "50%",
                }
            ],
        },
    }
    beta = {
        **alpha,
        "apiVersion": "apps.kruise.io/v1beta1",
        "spec": {
            **alpha["spec"],
            "subsets": [
                {
                    "name": "a",
                    "requiredNodeSelector": zone_term("a"),
                    "preferredNodeSelector": pref,
                    "maxReplicas": "50%",
                }
            ],
        },
    }
    a, b = from_object(alpha), from_object(beta)
    assert a.subsets == b.subsets
    assert a.subsets[0].required_node_selector == zone_term("a")
    assert a.subsets[0].preferred_node_selector == tuple(pref)
    assert a.key == "ns/ws"


def test_status_json_keeps_kruise_shape_and_v1beta1_fills_reason() -> None:
    at = datetime(2026, 1, 1, 0, 0, 0, 500_000, tzinfo=UTC)
    status = Status(
        observed_generation=3,
        subset_statuses=(
            SubsetStatus(
                name="a",
                replicas=2,
                missing_replicas=1,
                creating_pods={"p": at},
                conditions=(Condition("Schedulable", "True", "", "", at),),
            ),
        ),
    )
    alpha = status_to_json(status)
    assert alpha == {
        "observedGeneration": 3,
        "subsetStatuses": [
            {
                "name": "a",
                "replicas": 2,
                "missingReplicas": 1,
                "creatingPods": {"p": "2026-01-01T00:00:00Z"},
                "conditions": [
                    {
                        "type": "Schedulable",
                        "status": "True",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                ],
            }
        ],
    }
    beta = status_to_json(status, api_version="apps.kruise.io/v1beta1")
    assert beta["subsetStatuses"][0]["conditions"][0]["reason"] == "Unknown"
    assert from_object({"status": alpha}).status.subset_statuses[0].creating_pods == {
        "p": datetime(2026, 1, 1, tzinfo=UTC)
    }


@pytest.mark.parametrize(
    ("value", "total", "expected"),
    [
        (3, 10, 3),
        ("34%", 10, 4),
        ("33%", 10, 4),
        ("50%", 3, 2),
        ("0%", 10, 0),
        ("100%", 7, 7),
        ("-1%", 100, -1),
    ],
)
def test_percentages_round_up(value: int | str, total: int, expected: int) -> None:
    assert scaled_value(value, total, round_up=True) == expected


@pytest.mark.parametrize(
    "value", ["0.2%", "50.2%", "10", " 5%", "5 %", "1_0%", "%", True, None, 2.5]
)
def test_values_that_do_not_scale(value: object) -> None:
    with pytest.raises(IntOrStrError):
        scaled_value(value, 100, round_up=True)


def test_int_value_is_zero_for_percent_strings() -> None:
    assert (int_value("50%"), int_value("7"), int_value(4)) == (0, 7, 4)


json_leaf = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)
json_docs: st.SearchStrategy[Any] = st.recursive(
    json_leaf,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text("ab/~", max_size=3), kids, max_size=4)
    ),
    max_leaves=15,
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.text("ab/~", max_size=3), json_docs, max_size=4),
    st.dictionaries(st.text("ab/~", max_size=3), json_docs, max_size=4),
)
def test_a_diff_applied_to_the_original_gives_the_target(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    assert json_patch.apply(old, json_patch.diff(old, new)) == new
