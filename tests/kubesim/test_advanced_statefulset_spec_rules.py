"""Kruise's defaults and validation of an Advanced StatefulSet, as plain functions."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesim.advanced_statefulset_spec import (
    default_advanced_statefulset,
    validate_advanced_statefulset,
)


def body(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web"},
        "spec": {
            "serviceName": "web",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1"}]},
            },
            **spec,
        },
    }


def defaulted(**spec: Any) -> dict[str, Any]:
    obj = body(**spec)
    default_advanced_statefulset(obj)
    return obj


def messages(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [f"{e.path}: {e.detail}" for e in validate_advanced_statefulset(obj, old)]


def test_an_on_delete_set_gets_no_rolling_update_defaults() -> None:
    spec = defaulted(updateStrategy={"type": "OnDelete"})["spec"]
    assert spec["updateStrategy"] == {"type": "OnDelete"}
    assert messages(defaulted(updateStrategy={"type": "OnDelete"})) == []


def test_given_values_are_kept_and_only_missing_ones_defaulted() -> None:
    spec = defaulted(
        podManagementPolicy="Parallel",
        updateStrategy={"rollingUpdate": {"partition": 2, "maxUnavailable": "50%"}},
    )["spec"]
    assert spec["podManagementPolicy"] == "Parallel"
    assert spec["updateStrategy"]["rollingUpdate"] == {
        "partition": 2,
        "maxUnavailable": "50%",
        "podUpdatePolicy": "ReCreate",
        "minReadySeconds": 0,
    }


@pytest.mark.parametrize(
    "change",
    [
        {"replicas": 5},
        {"updateStrategy": {"type": "OnDelete"}},
        {"scaleStrategy": {"maxUnavailable": 1}},
        {"reserveOrdinals": [3]},
        {"revisionHistoryLimit": 2},
    ],
    ids=lambda change: next(iter(change)),
)
def test_an_update_may_change_what_kruise_lets_change(change: dict[str, Any]) -> None:
    old = defaulted()
    new = copy.deepcopy(old)
    new["spec"].update(change)
    assert messages(new, old) == []


@pytest.mark.parametrize(
    "change",
    [{"serviceName": "other"}, {"podManagementPolicy": "Parallel"}, {"minReadySeconds": 3}],
    ids=lambda change: next(iter(change)),
)
def test_an_update_may_not_change_the_other_spec_fields(change: dict[str, Any]) -> None:
    old = defaulted()
    new = copy.deepcopy(old)
    new["spec"].update(change)
    assert any("updates to statefulset spec for fields other than" in m for m in messages(new, old))


def test_reserved_ordinals_must_be_numbers_or_forward_ranges() -> None:
    assert messages(defaulted(reserveOrdinals=[0, "2-4"])) == []
    assert messages(defaulted(reserveOrdinals=[-1])) == [
        "spec: 0 th reserve ordinal is negative: -1"
    ]
    assert messages(defaulted(reserveOrdinals=[1, "a-b"])) == [
        "spec: 1 th reserve ordinal is not a valid range: a-b"
    ]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "1", "5%", "2-1", "x"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)
spec_fields = st.sampled_from(
    [
        "replicas",
        "podManagementPolicy",
        "updateStrategy",
        "scaleStrategy",
        "reserveOrdinals",
        "revisionHistoryLimit",
        "persistentVolumeClaimRetentionPolicy",
    ]
)


def test_a_field_of_the_wrong_type_is_refused_in_the_schemas_words() -> None:
    assert messages(defaulted(reserveOrdinals=True)) == [
        'spec.reserveOrdinals: spec.reserveOrdinals in body must be of type array: "boolean"'
    ]


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(spec_fields, json_values, max_size=4))
def test_odd_specs_are_defaulted_and_judged_without_crashing(spec: dict[str, Any]) -> None:
    """Whatever a client sends in these fields is accepted or refused field by field."""
    obj = body(**spec)
    default_advanced_statefulset(obj)
    for error in validate_advanced_statefulset(obj, None):
        assert error.path.startswith("spec")
