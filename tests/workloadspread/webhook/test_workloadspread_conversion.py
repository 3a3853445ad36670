"""WorkloadSpreads convert between v1alpha1 and v1beta1 without losing anything."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spreadbus.engine import conversion_review
from spreadbus.features.workloadspread.admission.conversion import (
    ALPHA,
    BETA,
    ConversionError,
    convert,
)
from tests.webhook.conftest import RunningWebhook

TERM = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
PREFERRED = [{"weight": 10, "preference": TERM}]


def alpha_spread(subsets: list[dict[str, Any]], **status: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": ALPHA,
        "kind": "WorkloadSpread",
        "metadata": {"name": "ws", "namespace": "default"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "targetFilter": {"selector": {"matchLabels": {"role": "worker"}}},
            "subsets": subsets,
        },
    }
    if status:
        obj["status"] = status
    return obj


def test_subset_fields_take_the_v1beta1_names() -> None:
    subset = {
        "name": "a",
        "requiredNodeSelectorTerm": TERM,
        "preferredNodeSelectorTerms": PREFERRED,
        "maxReplicas": 3,
        "minReplicas": 1,
    }
    beta = convert(alpha_spread([subset]), BETA)
    assert beta["apiVersion"] == BETA
    assert beta["spec"]["subsets"] == [
        {
            "name": "a",
            "requiredNodeSelector": TERM,
            "preferredNodeSelector": PREFERRED,
            "maxReplicas": 3,
            "minReplicas": 1,
        }
    ]
    assert beta["spec"]["targetFilter"] == {"selector": {"matchLabels": {"role": "worker"}}}


def test_conditions_without_a_reason_get_unknown_in_v1beta1() -> None:
    status = {
        "subsetStatuses": [
            {
                "name": "a",
                "replicas": 1,
                "missingReplicas": 2,
                "conditions": [{"type": "Schedulable", "status": "True"}],
            }
        ]
    }
    beta = convert(alpha_spread([{"name": "a"}], **status), BETA)
    (condition,) = beta["status"]["subsetStatuses"][0]["conditions"]
    assert condition["reason"] == "Unknown"



def test_converting_leaves_the_object_it_was_given_unchanged() -> None:
    condition = {"type": "Schedulable", "status": "False"}
    status = {
        "subsetStatuses": [{"name": "a", "conditions": [condition]}],
        "versionedSubsetStatuses": {"v1": [{"name": "a", "conditions": [condition]}]},
    }
    original = alpha_spread([{"name": "a", "requiredNodeSelectorTerm": TERM}], **status)
    before = copy.deepcopy(original)
    beta = convert(original, BETA)
    assert original == before
    assert beta["status"]["versionedSubsetStatuses"]["v1"][0]["conditions"][0]["reason"] == (
        "Unknown"
    )
    assert convert(beta, ALPHA)["spec"]["subsets"][0]["requiredNodeSelectorTerm"] == TERM

subsets = st.lists(
    st.fixed_dictionaries(
        {"name": st.text(min_size=1, max_size=5)},
        optional={
            "requiredNodeSelectorTerm": st.just(TERM),
            "preferredNodeSelectorTerms": st.just(PREFERRED),
            "maxReplicas": st.one_of(st.integers(0, 100), st.sampled_from(["50%", "10%"])),
            "tolerations": st.just([{"key": "spot", "operator": "Exists"}]),
            "patch": st.just({"metadata": {"labels": {"tier": "spot"}}}),
        },
    ),
    max_size=4,
)


@given(subsets=subsets)
def test_a_round_trip_through_v1beta1_returns_the_same_object(
    subsets: list[dict[str, Any]],
) -> None:
    original = alpha_spread(subsets)
    assert convert(convert(original, BETA), ALPHA) == original
    assert convert(original, ALPHA) == original


def test_other_kinds_and_versions_are_refused_by_name() -> None:
    with pytest.raises(ConversionError, match="v2"):
        convert(alpha_spread([]), "apps.kruise.io/v2")
    with pytest.raises(ConversionError, match="Deployment"):
        convert({"apiVersion": ALPHA, "kind": "Deployment"}, BETA)


def test_a_conversion_review_converts_every_object_or_fails_naming_the_first_bad_one() -> None:
    good: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "c1",
            "desiredAPIVersion": BETA,
            "objects": [alpha_spread([{"name": "a"}]), alpha_spread([])],
        },
    }
    answer = conversion_review.answer(good, convert)["response"]
    assert answer["uid"] == "c1"
    assert answer["result"] == {"status": "Success"}
    assert [o["apiVersion"] for o in answer["convertedObjects"]] == [BETA, BETA]
    bad = {**good, "request": {**good["request"], "objects": [alpha_spread([]), "x"]}}
    failed = conversion_review.answer(bad, convert)["response"]
    assert failed["result"]["status"] == "Failure"
    assert "objects[1]" in failed["result"]["message"]
    assert conversion_review.answer(None, convert)["response"]["result"]["status"] == "Failure"


async def test_conversion_is_served_over_https(webhook: RunningWebhook) -> None:
    body = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "c2",
            "desiredAPIVersion": BETA,
            "objects": [alpha_spread([{"name": "a", "requiredNodeSelectorTerm": TERM}])],
        },
    }
    async with webhook.http.post(f"{webhook.url}/convert", json=body) as response:
        assert response.status == 200
        answer = await response.json()
    (converted,) = answer["response"]["convertedObjects"]
    assert converted["spec"]["subsets"][0]["requiredNodeSelector"] == TERM
