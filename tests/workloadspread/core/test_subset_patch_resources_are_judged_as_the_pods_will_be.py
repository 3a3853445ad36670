"""The resources a subset patch gives a container are judged as the API server will judge every
pod of the subset (merged with the container's template resources when the workload is known),
and a patch larger than :data:`MAX_PATCH_BYTES` is refused whole, naming the limit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spreadbus.features.workloadspread.core.validation import (
    MAX_PATCH_BYTES,
    validate_workloadspread,
)

TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
AT = "spec.subsets[0].patch.spec.containers[0].resources"


def spread(patch: object) -> dict[str, Any]:
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
            "metadata": {"name": "ws", "namespace": "default"},
            "spec": {"targetRef": TARGET, "subsets": [{"name": "a", "patch": patch}]}}


def resources_patch(resources: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "app", "resources": resources}]}}


def deployment(resources: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"template": {"spec": {"containers": [
                {"name": "app", "image": "nginx", "resources": resources}]}}}}


def errors_of(patch: object, workload: dict[str, Any] | None = None) -> list[tuple[str, str, str]]:
    return [(e.field, e.type, e.message)
            for e in validate_workloadspread(spread(patch), workload=workload)]


@pytest.mark.parametrize("resources", [
    {"requests": {"cpu": "500m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
    {"requests": {"cpu": "1000m"}, "limits": {"cpu": "1"}},
    {"requests": {"cpu": 0.5, "memory": 1048576}},
    {"limits": {"example.com/gpu": "2"}, "requests": {"example.com/gpu": "2"}},
    {"limits": {"hugepages-2Mi": "100Mi", "memory": "1Gi"},
     "requests": {"hugepages-2Mi": "100Mi", "memory": "1Gi"}},
    {"requests": {"cpu": "1e-3"}, "limits": {"cpu": "1m"}},
])
def test_resources_a_pod_may_have_are_allowed(resources: dict[str, Any]) -> None:
    assert errors_of(resources_patch(resources)) == []


@pytest.mark.parametrize(("resources", "field", "kind", "fragment"), [
    ({"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}, f"{AT}.requests", "Invalid",
     "2: must be less than or equal to cpu limit of 1"),
    ({"requests": {"memory": "2Gi"}, "limits": {"memory": "2000Mi"}}, f"{AT}.requests",
     "Invalid", "must be less than or equal to memory limit of 2000Mi"),
    ({"limits": {"memory": "1Gx"}}, f"{AT}.limits[memory]", "Invalid",
     "1Gx: quantities must match the regular expression"),
    ({"requests": {"cpu": "-1"}}, f"{AT}.requests[cpu]", "Invalid",
     "-1: must be greater than or equal to 0"),
    ({"requests": {"cpu": True}}, f"{AT}.requests[cpu]", "Invalid",
     "quantities must match the regular expression"),
    ({"requests": {"example.com/gpu": "1"}}, f"{AT}.limits", "Required",
     "Limit must be set for non overcommitable resources"),
    ({"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}},
     f"{AT}.requests", "Invalid", "1: must be equal to example.com/gpu limit of 2"),
    ({"limits": {"example.com/gpu": "500m"}, "requests": {"example.com/gpu": "500m"}},
     f"{AT}.limits[example.com/gpu]", "Invalid", "500m: must be an integer"),
    ({"limits": {"pods": "1"}}, f"{AT}.limits[pods]", "Invalid",
     "pods: must be a standard resource for containers"),
    ({"limits": {"a/b/c": "1"}}, f"{AT}.limits[a/b/c]", "Invalid",
     "a/b/c: a qualified name must consist of"),
    ({"limits": {"hugepages-2Mi": "2Mi"}, "requests": {"hugepages-2Mi": "2Mi"}}, AT,
     "Forbidden", "HugePages require cpu or memory"),
    ({"limits": "1"}, f"{AT}.limits", "Invalid", "must be an object"),
])
def test_resources_no_pod_could_have_are_refused_naming_the_field(
    resources: dict[str, Any], field: str, kind: str, fragment: str
) -> None:
    errors = errors_of(resources_patch(resources))
    assert any(f == field and k == kind and fragment in m for f, k, m in errors), errors


def test_a_single_segment_name_that_is_no_resource_gets_both_of_kubernetes_errors() -> None:
    assert errors_of(resources_patch({"limits": {"gpu": "1"}})) == [
        (f"{AT}.limits[gpu]", "Invalid",
         "gpu: must be a standard resource type or fully qualified"),
        (f"{AT}.limits[gpu]", "Invalid", "gpu: must be a standard resource for containers"),
    ]


def test_a_patched_request_is_judged_against_the_templates_limit() -> None:
    workload = deployment({"limits": {"cpu": "1"}})
    patch = resources_patch({"requests": {"cpu": "2"}})
    assert errors_of(patch) == []  # alone the request is fine
    assert errors_of(patch, workload) == [
        (f"{AT}.requests", "Invalid", "2: must be less than or equal to cpu limit of 1")]


def test_a_patch_that_removes_the_templates_limit_is_judged_without_it() -> None:
    workload = deployment({"requests": {"cpu": "2"}, "limits": {"cpu": "1"}})
    assert errors_of(resources_patch({"limits": {"cpu": None}}), workload) == []


def test_init_containers_are_judged_too() -> None:
    patch = {"spec": {"initContainers": [
        {"name": "init", "resources": {"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}}}
    ]}}
    assert [f for f, _, _ in errors_of(patch)] == [
        "spec.subsets[0].patch.spec.initContainers[0].resources.requests"]


quantities = st.one_of(
    st.integers(min_value=-5, max_value=10**6),
    st.sampled_from(["100m", "1", "1.5", "2Gi", "128Mi", "1e3", "0.1", "1Gx", "", "+1", ".5k"]),
    st.text(max_size=6),
    st.floats(allow_nan=True),
    st.none(),
)


@given(st.dictionaries(st.sampled_from(["requests", "limits", "claims"]),
                       st.dictionaries(st.sampled_from(["cpu", "memory", "example.com/gpu",
                                                        "hugepages-1Gi", "gpu"]),
                                       quantities, max_size=3), max_size=2))
def test_any_resources_get_errors_with_a_field_and_a_message_never_an_exception(
    resources: dict[str, Any],
) -> None:
    for field, _, message in errors_of(resources_patch(resources)):
        assert field.startswith(AT)
        assert message


def test_a_patch_over_the_limit_is_refused_once_naming_the_limit() -> None:
    patch = {"metadata": {"labels": {"bad key": "x"}}, "spec": {"containers": [
        {"name": "app", "env": [{"name": "X", "value": "x" * MAX_PATCH_BYTES}]}]}}
    [(field, kind, message)] = errors_of(patch)
    size = len(json.dumps(patch, separators=(",", ":")))
    assert (field, kind) == ("spec.subsets[0].patch", "TooLong")
    assert message == f"may not be more than {MAX_PATCH_BYTES} bytes of JSON (it is {size})"


def test_a_patch_of_exactly_the_limit_is_allowed() -> None:
    def patch_of(value: str) -> dict[str, Any]:
        return {"spec": {"containers": [{"name": "app", "env": [{"name": "X", "value": value}]}]}}

    filler = MAX_PATCH_BYTES - len(json.dumps(patch_of(""), separators=(",", ":")))
    patch = patch_of("x" * filler)
    assert len(json.dumps(patch, separators=(",", ":"))) == MAX_PATCH_BYTES
    assert errors_of(patch) == []
    patch = patch_of("x" * (filler + 1))
    assert [k for _, k, _ in errors_of(patch)] == ["TooLong"]


def test_a_megabyte_patch_is_refused() -> None:
    patch = {"metadata": {"annotations": {f"k{i}": "v" * 1000 for i in range(1024)}}}
    assert ("spec.subsets[0].patch", "TooLong") in [(f, k) for f, k, _ in errors_of(patch)]


def test_the_documented_limit_is_the_one_enforced() -> None:
    docs = (Path(__file__).resolve().parents[3] / "docs" / "workloadspread.md").read_text()
    assert f"a patch is at most {MAX_PATCH_BYTES // 1024} KiB of JSON" in " ".join(docs.split())
