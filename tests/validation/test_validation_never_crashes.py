"""``spreadbus validate`` answers any input with exit 0, 1 or 2 and never a traceback: arbitrary
JSON in the shape of every validated kind, and values nested beyond what a recursive rule can
walk, which are refused naming where."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesemantics.nesting import MAX_DEPTH, too_deep
from spreadbus.cli import main
from spreadbus.features.registry import BUILTIN
from spreadbus.features.workloadspread.core.validation import validate_workloadspread

KINDS = sorted({kind for feature in BUILTIN for kind in feature.validators})

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False,
                                                                           allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["spec", "subsets", "name", "patch", "targetRef", "maxReplicas",
                         "requiredNodeSelectorTerm", "tolerations", "metadata", "x"]),
        inner, max_size=5),
    max_leaves=30,
)


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                          HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(KINDS), spec=json_values, metadata=json_values)
def test_any_object_of_a_validated_kind_gets_an_answer_not_a_traceback(
    kind: tuple[str, str], spec: Any, metadata: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    group, name = kind
    obj = {"apiVersion": f"{group}/v1alpha1", "kind": name, "metadata": metadata, "spec": spec}
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "in.json"
        path.write_text(json.dumps(obj))
        code = main(["validate", "-f", str(path), "-o", "json"])
    out = capsys.readouterr()
    assert code in (0, 1, 2)
    if code in (0, 1):
        answer = json.loads(out.out)
        assert answer["allowed"] is (code == 0)
        assert all(e["message"] and e["field"] is not None for e in answer["errors"])
    else:
        assert out.err.startswith("error: ")


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1_000, 5_000])
def test_a_patch_nested_too_deep_is_unreadable_input_naming_where(
    depth: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spread = {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
              "metadata": {"name": "ws", "namespace": "default"},
              "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                     "name": "web"},
                       "subsets": [{"name": "a", "patch": {}}]}}
    path = tmp_path / "deep.json"
    text = json.dumps(spread).replace('"patch": {}', '"patch": ' + '{"a": ' * depth + "{}"
                                      + "}" * depth)
    path.write_text(text)
    assert main(["validate", "-f", str(path), "-o", "json"]) == 2
    err = capsys.readouterr().err
    assert f"nested deeper than {MAX_DEPTH} levels" in err


def test_the_webhooks_validation_refuses_a_deep_value_with_a_field_error() -> None:
    spread = {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
              "metadata": {"name": "ws", "namespace": "default"},
              "spec": {"subsets": [{"name": "a", "patch": nested(MAX_DEPTH + 5)}]}}
    [error] = validate_workloadspread(spread)
    assert error.type == "Invalid"
    assert error.field.startswith("spec.subsets[0].patch.a.a")
    assert str(MAX_DEPTH) in error.message


def test_depth_is_measured_exactly_at_the_limit() -> None:
    assert too_deep(nested(MAX_DEPTH - 1)) is None  # MAX_DEPTH objects, one in the other
    assert too_deep(nested(MAX_DEPTH)) is not None
    assert too_deep([[[]]], limit=2) == "[0][0]"
    assert too_deep({"a": [{"b": {}}]}, "spec", limit=2) == "spec.a[0]"
