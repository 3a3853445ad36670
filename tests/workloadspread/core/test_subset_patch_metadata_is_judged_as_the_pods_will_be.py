"""A subset patch's labels and annotations are judged as the API server will judge every pod of
the subset, whether or not the target workload exists yet."""

from __future__ import annotations

from typing import Any

import pytest

from spreadbus.features.workloadspread.core.validation import validate_workloadspread

TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def spread(patch: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
            "metadata": {"name": "ws", "namespace": "default"},
            "spec": {"targetRef": TARGET, "subsets": [{"name": "a", "patch": patch}]}}


def errors_of(patch: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(e.field, e.type, e.message) for e in validate_workloadspread(spread(patch))]


def test_the_seeds_label_patch_is_allowed() -> None:
    assert errors_of({"metadata": {"labels": {"topology.application.deploy/zone": "zone-a"},
                                   "annotations": {"subset": "a"}}}) == []


@pytest.mark.parametrize(("metadata", "field", "fragment"), [
    ({"labels": {"zone": "zone a"}}, "spec.subsets[0].patch.metadata.labels",
     "zone a: a valid label must be"),
    ({"labels": {"bad key": "x"}}, "spec.subsets[0].patch.metadata.labels",
     "bad key: name part must consist of"),
    ({"labels": {"a/b/c": "x"}}, "spec.subsets[0].patch.metadata.labels",
     "a/b/c: a qualified name must consist of"),
    ({"labels": {"zone": "x" * 64}}, "spec.subsets[0].patch.metadata.labels",
     "must be no more than 63 characters"),
    ({"annotations": {"-bad": "x"}}, "spec.subsets[0].patch.metadata.annotations",
     "-bad: name part must consist of"),
])
def test_a_label_or_annotation_no_pod_could_carry_is_refused_naming_the_field(
    metadata: dict[str, Any], field: str, fragment: str
) -> None:
    [(got_field, kind, message)] = errors_of({"metadata": metadata})
    assert (got_field, kind) == (field, "Invalid")
    assert fragment in message


def test_annotations_larger_than_a_pod_may_carry_are_too_long() -> None:
    [(field, kind, message)] = errors_of(
        {"metadata": {"annotations": {"big": "x" * (256 * 1024)}}})
    assert (field, kind) == ("spec.subsets[0].patch.metadata.annotations", "TooLong")
    assert "262144 bytes" in message


def test_a_label_value_of_the_wrong_type_is_a_type_error_at_its_key() -> None:
    [(field, kind, _)] = errors_of({"metadata": {"labels": {"zone": 3}}})
    assert (field, kind) == ("spec.subsets[0].patch.metadata.labels.zone", "Invalid")
