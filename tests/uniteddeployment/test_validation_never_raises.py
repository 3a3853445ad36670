"""Defaulting and validation take any JSON and answer with errors, never an exception."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesemantics.field_errors import FieldError
from spreadbus.features.uniteddeployment.core.defaulting import default_uniteddeployment
from spreadbus.features.uniteddeployment.core.validation import validate_uniteddeployment
from tests.uniteddeployment.test_validation_rules import base

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(
    max_size=6)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.text(max_size=6), children, max_size=4),
    max_leaves=25,
)
"""Any JSON."""

# Paths into a valid object where junk does the most damage: every field the rules read.
PLACES = [
    ("spec",), ("metadata",), ("spec", "replicas"), ("spec", "selector"),
    ("spec", "selector", "matchLabels"), ("spec", "selector", "matchExpressions"),
    ("spec", "template"), ("spec", "template", "deploymentTemplate"),
    ("spec", "template", "statefulSetTemplate"),
    ("spec", "template", "advancedStatefulSetTemplate"),
    ("spec", "template", "deploymentTemplate", "spec"),
    ("spec", "template", "deploymentTemplate", "spec", "template"),
    ("spec", "template", "deploymentTemplate", "spec", "template", "spec"),
    ("spec", "template", "deploymentTemplate", "spec", "template", "spec", "containers"),
    ("spec", "topology"), ("spec", "topology", "subsets"),
    ("spec", "topology", "scheduleStrategy"), ("spec", "updateStrategy"),
    ("spec", "updateStrategy", "manualUpdate"),
    ("spec", "updateStrategy", "manualUpdate", "partitions"),
]
SUBSET_KEYS = ["name", "replicas", "minReplicas", "maxReplicas", "nodeSelectorTerm",
               "tolerations", "patch"]


def put(obj: dict[str, Any], path: tuple[str, ...], value: object) -> None:
    target: Any = obj
    for key in path[:-1]:
        if not isinstance(target, dict):
            return
        target = target.setdefault(key, {})
    if isinstance(target, dict):
        target[path[-1]] = value


def check(obj: object, old: object | None = None) -> None:
    errors = validate_uniteddeployment(obj, old=old)
    assert all(isinstance(e, FieldError) and e.field is not None for e in errors)
    if isinstance(obj, dict):
        defaulted = default_uniteddeployment(obj, old=old if isinstance(old, dict) else None)
        validate_uniteddeployment(defaulted, old=old)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_json_at_all(value: object) -> None:
    check(value)
    check({"spec": value}, old=value)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(PLACES), json_values, st.booleans())
def test_junk_in_any_field_of_a_valid_object(place: tuple[str, ...], junk: object,
                                             as_update: bool) -> None:
    obj = base()
    put(obj, place, junk)
    check(obj, old=base() if as_update else None)
    if as_update:
        check(base(), old=obj)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SUBSET_KEYS), json_values, st.integers(0, 2))
def test_junk_in_a_subset(key: str, junk: object, index: int) -> None:
    obj = base()
    obj["spec"]["topology"]["subsets"][index][key] = junk
    old = copy.deepcopy(base())
    check(obj, old=old)


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    deep: Any = "leaf"
    for _ in range(5000):
        deep = {"a": deep}
    obj = base()
    obj["spec"]["topology"]["subsets"][0]["patch"] = deep
    errors = validate_uniteddeployment(obj)
    assert len(errors) == 1
    assert errors[0].field.startswith("spec.topology.subsets[0].patch.a.a")
    assert "must not nest deeper than" in errors[0].message
