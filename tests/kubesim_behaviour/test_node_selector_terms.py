"""Node affinity and taint/toleration matching with upstream semantics."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesemantics.node_affinity import (
    node_matches_required,
    node_matches_term,
    pod_matches_node,
    preferred_score,
)
from kubesemantics.tolerations import (
    tolerates,
    toleration_seconds,
    untolerated_count,
    untolerated_taint,
)


def node(name: str = "n1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": dict(labels)}}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


ZONE_A = node("a-1", zone="a", cores="8")


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (expr("zone", "In", "a", "b"), True),
        (expr("zone", "In", "b"), False),
        (expr("zone", "In"), False),
        (expr("zone", "NotIn", "b"), True),
        (expr("zone", "NotIn", "a"), False),
        (expr("missing", "NotIn", "a"), True),
        (expr("zone", "Exists"), True),
        (expr("missing", "Exists"), False),
        (expr("zone", "Exists", "a"), False),
        (expr("missing", "DoesNotExist"), True),
        (expr("zone", "DoesNotExist"), False),
        (expr("cores", "Gt", "4"), True),
        (expr("cores", "Gt", "8"), False),
        (expr("cores", "Lt", "16"), True),
        (expr("cores", "Lt", "8"), False),
        (expr("zone", "Gt", "1"), False),
        (expr("cores", "Gt", "x"), False),
        (expr("cores", "Gt", "1", "2"), False),
        (expr("missing", "Lt", "1"), False),
        (expr("zone", "Near", "a"), False),
    ],
)
def test_each_operator_matches_labels_as_upstream(
    requirement: dict[str, Any], expected: bool
) -> None:
    assert node_matches_term(ZONE_A, {"matchExpressions": [requirement]}) is expected


def test_match_fields_selects_by_node_name_only() -> None:
    by_name = {"matchFields": [expr("metadata.name", "In", "a-1")]}
    not_name = {"matchFields": [expr("metadata.name", "NotIn", "a-1")]}
    other_field = {"matchFields": [expr("metadata.uid", "In", "a-1")]}
    assert node_matches_term(ZONE_A, by_name)
    assert not node_matches_term(ZONE_A, not_name)
    assert not node_matches_term(ZONE_A, other_field)
    assert not node_matches_term(node("b-1", zone="a"), by_name)


def test_expressions_and_fields_in_one_term_are_anded_and_terms_are_ored() -> None:
    term = {
        "matchExpressions": [expr("zone", "In", "a")],
        "matchFields": [expr("metadata.name", "In", "other")],
    }
    assert not node_matches_term(ZONE_A, term)
    selector = {"nodeSelectorTerms": [term, {"matchExpressions": [expr("cores", "Exists")]}]}
    assert node_matches_required(ZONE_A, selector)


def test_an_empty_term_matches_nothing_and_no_selector_matches_everything() -> None:
    assert not node_matches_term(ZONE_A, {})
    assert not node_matches_required(ZONE_A, {"nodeSelectorTerms": [{}]})
    assert node_matches_required(ZONE_A, None)


def test_preferred_score_sums_weights_of_matching_terms_and_skips_empty_ones() -> None:
    terms = [
        {"weight": 10, "preference": {"matchExpressions": [expr("zone", "In", "a")]}},
        {"weight": 5, "preference": {"matchExpressions": [expr("cores", "Gt", "2")]}},
        {"weight": 7, "preference": {"matchExpressions": [expr("zone", "In", "b")]}},
        {"weight": 50, "preference": {}},
    ]
    assert preferred_score(ZONE_A, terms) == 15
    assert preferred_score(node("x"), terms) == 0


def test_pod_needs_both_node_selector_and_required_affinity() -> None:
    spec = {
        "nodeSelector": {"zone": "a"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [expr("cores", "Lt", "4")]}]
                }
            }
        },
    }
    assert not pod_matches_node(spec, ZONE_A)
    assert pod_matches_node(spec, node("a-2", zone="a", cores="2"))
    assert not pod_matches_node(spec, node("b-2", zone="b", cores="2"))


@given(
    st.dictionaries(st.sampled_from("abc"), st.sampled_from(["1", "2", "x"]), max_size=3),
    st.sampled_from("abc"),
    st.lists(st.sampled_from(["1", "2", "x"]), min_size=1, max_size=2),
)
def test_in_and_notin_are_complements_when_the_label_exists(
    labels: dict[str, str], key: str, values: list[str]
) -> None:
    n = node("n", **labels)
    matched_in = node_matches_term(n, {"matchExpressions": [expr(key, "In", *values)]})
    matched_not = node_matches_term(n, {"matchExpressions": [expr(key, "NotIn", *values)]})
    if key in labels:
        assert matched_in != matched_not
    else:
        assert not matched_in
        assert matched_not


VK = {"key": "virtual-kubelet.io/provider", "value": "alibabacloud", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        (
            {
                "key": VK["key"],
                "operator": "Equal",
                "value": "alibabacloud",
                "effect": "NoSchedule",
            },
            True,
        ),
        ({"key": VK["key"], "value": "alibabacloud"}, True),
        ({"key": VK["key"], "operator": "Equal", "value": "other"}, False),
        ({"key": VK["key"], "operator": "Exists"}, True),
        ({"key": VK["key"], "operator": "Exists", "effect": "NoExecute"}, False),
        ({"operator": "Exists"}, True),
        ({"key": "other", "operator": "Exists"}, False),
        ({"key": VK["key"], "operator": "Bogus"}, False),
    ],
)
def test_toleration_matching_follows_upstream(toleration: dict[str, Any], expected: bool) -> None:
    assert tolerates(toleration, VK) is expected


def test_untolerated_taint_only_considers_the_given_effects() -> None:
    prefer = {"key": "spot", "effect": "PreferNoSchedule"}
    assert untolerated_taint([prefer, VK], []) == VK
    assert untolerated_taint([prefer], []) is None
    assert untolerated_taint([VK], [{"operator": "Exists"}]) is None
    assert untolerated_count([prefer, VK], []) == 1


def test_toleration_seconds_takes_the_shortest_matching_limit() -> None:
    unreachable = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}
    tols = [
        {
            "key": unreachable["key"],
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 30,
        },
        {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10},
    ]
    assert toleration_seconds([unreachable], tols) == 10
    assert toleration_seconds([unreachable], [{"operator": "Exists"}]) is None
    assert toleration_seconds([unreachable], []) == 0
    assert toleration_seconds([VK], []) is None
