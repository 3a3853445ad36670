"""Node affinity against Kubernetes' own test tables.

The rows are the inputs and expected outputs of the upstream tests of
``component-helpers/scheduling/corev1`` (node selector matching, preferred term scores,
requirements as a label selector, and a pod's nodeSelector with its required node affinity) and
of the scheduler's NodeAffinity score, in this project's table form, followed by this project's
own cases.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesemantics import label_selector as ls
from kubesemantics.node_affinity import (
    node_matches_required,
    node_matches_term,
    pod_matches_node,
    preferred_score,
    requirements_as_selector,
)


def node(name: str = "n1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": dict(labels)}}


def named(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def by_name(operator: str, *names: str) -> dict[str, Any]:
    return expr("metadata.name", operator, *names)


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeSelectorTerms": list(terms)}


def affinity(selector: dict[str, Any] | None, **spec: Any) -> dict[str, Any]:
    return {
        **spec,
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": selector}},
    }


# --- Node selector matching ---------------------------------------------------------------------

_LABEL_1_AND_HOST_1 = {
    "matchExpressions": [expr("label_1", "In", "label_1_val")],
    "matchFields": [by_name("In", "host_1")],
}


@pytest.mark.parametrize(
    ("selector", "target", "expected"),
    [
        pytest.param(
            required(_LABEL_1_AND_HOST_1),
            named("host_1"),
            False,
            id="node-matches-the-field-but-not-the-labels",
        ),
        pytest.param(
            required(_LABEL_1_AND_HOST_1),
            named("host_1", {"label_1": "label_1_val"}),
            True,
            id="node-matches-the-field-and-the-labels",
        ),
        pytest.param(
            required(
                {"matchExpressions": [expr("label_1", "In", "label_1_val")]},
                {"matchFields": [by_name("In", "host_1")]},
            ),
            named("host_1"),
            True,
            id="second-term-matches",
        ),
    ],
)
def test_a_node_selector_matches_when_one_term_matches_entirely(
    selector: dict[str, Any], target: dict[str, Any], expected: bool
) -> None:
    assert node_matches_required(target, selector) is expected


@pytest.mark.parametrize(
    "term",
    [
        pytest.param({"matchFields": [by_name("In", "host_1", "host_2")]}, id="field-two-values"),
        pytest.param(
            {"matchExpressions": [expr("invalid key", "In", "label_value")]},
            id="expression-with-an-invalid-key",
        ),
    ],
)
def test_an_invalid_term_matches_no_node_even_one_it_describes(term: dict[str, Any]) -> None:
    target = named("host_1", {"invalid key": "label_value"})
    assert not node_matches_term(target, term)
    assert node_matches_required(target, required(term, _LABEL_1_AND_HOST_1)) is False
    described = named("host_1", {"invalid key": "label_value", "label_1": "label_1_val"})
    assert node_matches_required(described, required(term, _LABEL_1_AND_HOST_1))


_L1 = {"matchExpressions": [expr("label_1", "In", "label_1_val")]}
_HOST_1 = {"matchFields": [by_name("In", "host_1")]}


@pytest.mark.parametrize(
    ("terms", "target", "expected"),
    [
        pytest.param([_L1], named("", {"label_1": "label_1_val"}), True, id="label-matches"),
        pytest.param([_HOST_1], named("host_1"), True, id="field-matches"),
        pytest.param(
            [{"matchFields": [by_name("In", "host_1", "host_2")]}],
            named("host_1"),
            False,
            id="field-requirement-with-two-values-is-invalid",
        ),
        pytest.param(
            [_HOST_1],
            named("not_host_1", {"metadata.name": "host_1"}),
            False,
            id="field-term-ignores-a-label-named-like-the-field",
        ),
        pytest.param(
            [{"matchExpressions": [expr("metadata.name", "In", "host_1")]}],
            named("host_1"),
            False,
            id="label-term-ignores-the-node-name",
        ),
        pytest.param(
            [_LABEL_1_AND_HOST_1], named("host_1"), False, id="one-term-only-the-field-matches"
        ),
        pytest.param(
            [_LABEL_1_AND_HOST_1],
            named("host_1", {"label_1": "label_1_val"}),
            True,
            id="one-term-field-and-label-match",
        ),
        pytest.param(
            [_LABEL_1_AND_HOST_1],
            named("host_1", {"label_1": "label_1_val-failed"}),
            False,
            id="one-term-label-mismatched",
        ),
        pytest.param(
            [_L1, _HOST_1],
            named("host_1", {"label_1": "label_1_val-failed"}),
            True,
            id="two-terms-label-mismatched-field-matches",
        ),
    ],
)
def test_node_selector_terms_are_ored_over_labels_and_fields_kept_apart(
    terms: list[dict[str, Any]], target: dict[str, Any], expected: bool
) -> None:
    assert node_matches_required(target, required(*terms)) is expected


_UNORDERED = [
    pytest.param(
        {"matchExpressions": [expr("label_1", "In", *labels)]} if labels else {}, fields, id=name
    )
    for name, labels, fields in [
        ("preordered-expressions", ("label_1_val", "label_2_val"), None),
        ("unordered-expressions", ("label_2_val", "label_1_val"), None),
        ("preordered-fields", (), ("host_1", "host_2")),
        ("unordered-fields", (), ("host_2", "host_1")),
        ("both-ordered", ("label_1_val", "label_2_val"), ("host_1", "host_2")),
        (
            "ordered-expressions-unordered-fields",
            ("label_1_val", "label_2_val"),
            ("host_2", "host_1"),
        ),
        (
            "unordered-expressions-ordered-fields",
            ("label_2_val", "label_1_val"),
            ("host_1", "host_2"),
        ),
        ("both-unordered", ("label_2_val", "label_1_val"), ("host_2", "host_1")),
    ]
]


@pytest.mark.parametrize(("term", "fields"), _UNORDERED)
def test_matching_leaves_the_node_selector_as_it_was(
    term: dict[str, Any], fields: tuple[str, ...] | None
) -> None:
    if fields is not None:
        term = {**term, "matchFields": [by_name("In", *fields)]}
    selector = required(term)
    before = copy.deepcopy(selector)
    node_matches_required(named("host_1", {"label_1": "label_1_val"}), selector)
    assert selector == before


# --- Preferred scheduling terms -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("terms", "target", "score"),
    [
        pytest.param(
            [{"weight": 0, "preference": {"matchFields": [by_name("In", "host_1", "host_2")]}}],
            named("host_1"),
            0,
            id="invalid-term-without-weight-is-ignored",
        ),
        pytest.param(
            [
                {"weight": 5, "preference": {"matchFields": [by_name("In", "host_1")]}},
                {
                    "weight": 7,
                    "preference": {
                        "matchExpressions": [expr("unknown_label", "In", "unknown_label_val")]
                    },
                },
                {
                    "weight": 11,
                    "preference": {"matchExpressions": [expr("label_1", "In", "label_1_val")]},
                },
            ],
            named("host_1", {"label_1": "label_1_val"}),
            16,
            id="first-and-third-term-match",
        ),
    ],
)
def test_preferred_terms_score_the_sum_of_the_weights_that_match(
    terms: list[dict[str, Any]], target: dict[str, Any], score: int
) -> None:
    assert preferred_score(target, terms) == score


def _weighted(weight: int, *requirements: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "preference": {"matchExpressions": list(requirements)}}


_FOO_BAR = expr("foo", "In", "bar")
_KEY_VALUE = expr("key", "In", "value")
_PREFER_FOO = [_weighted(2, _FOO_BAR)]
_PREFER_THREE = [
    _weighted(2, _FOO_BAR),
    _weighted(4, _KEY_VALUE),
    _weighted(5, _FOO_BAR, _KEY_VALUE, expr("az", "In", "az1")),
]
_L_FOO = {"foo": "bar"}
_L_KEY = {"key": "value"}
_L_AZ = {"az": "az1"}
_L_ALL = {"foo": "bar", "key": "value", "az": "az1"}


def _normalized(scores: list[int]) -> list[int]:
    """The scheduler's default score normalisation: the best node gets 100, the rest in
    proportion (integer division)."""
    best = max(scores)
    return [0 if best == 0 else 100 * s // best for s in scores]


@pytest.mark.parametrize(
    ("terms", "nodes", "scores"),
    [
        pytest.param([], [_L_FOO, _L_KEY, _L_AZ], [0, 0, 0], id="no-preferences-score-nothing"),
        pytest.param(
            _PREFER_FOO,
            [{"abc": "az11", "def": "az22"}, _L_KEY, _L_AZ],
            [0, 0, 0],
            id="no-node-matches-the-preference",
        ),
        pytest.param(_PREFER_FOO, [_L_FOO, _L_KEY, _L_AZ], [100, 0, 0], id="one-node-matches"),
        pytest.param(
            _PREFER_THREE, [_L_FOO, _L_ALL, _L_KEY], [18, 100, 36], id="weights-add-up-per-node"
        ),
    ],
)
def test_preferred_terms_rank_nodes_like_the_scheduler_s_node_affinity_score(
    terms: list[dict[str, Any]], nodes: list[dict[str, str]], scores: list[int]
) -> None:
    raw = [preferred_score(named(f"node{i}", labels), terms) for i, labels in enumerate(nodes)]
    assert _normalized(raw) == scores


# --- Requirements as a label selector -----------------------------------------------------------


@pytest.mark.parametrize(
    ("requirements", "text"),
    [
        pytest.param([expr("foo", "In", "bar", "baz")], "foo in (bar,baz)", id="in"),
        pytest.param([expr("foo", "Gt", "1")], "foo>1", id="greater-than"),
        pytest.param([expr("bar", "Lt", "7")], "bar<7", id="less-than"),
    ],
)
def test_match_expressions_become_the_label_selector_upstream_prints(
    requirements: list[dict[str, Any]], text: str
) -> None:
    selector = requirements_as_selector(requirements)
    assert ls.to_string(selector) == text
    assert selector == ls.parse(text)


@pytest.mark.parametrize(
    "requirements", [pytest.param(None, id="nil"), pytest.param([], id="empty")]
)
def test_no_match_expressions_select_nothing(requirements: list[dict[str, Any]] | None) -> None:
    assert requirements_as_selector(requirements) == ls.MATCH_NOTHING


@pytest.mark.parametrize(
    "requirement",
    [
        pytest.param(expr("foo", "Exists", "bar", "baz"), id="exists-with-values"),
        pytest.param(expr("baz", "invalid", "5"), id="unknown-operator"),
    ],
)
def test_an_invalid_match_expression_is_refused(requirement: dict[str, Any]) -> None:
    with pytest.raises(ls.SelectorError):
        requirements_as_selector([requirement])


# --- A pod's nodeSelector and required node affinity --------------------------------------------

_GPU = "NVIDIA-GRID-K1"

_POD_ON_NODE: list[Any] = [
    pytest.param({}, {}, "", True, id="no-selector"),
    pytest.param({"nodeSelector": {"foo": "bar"}}, {}, "", False, id="missing-labels"),
    pytest.param({"nodeSelector": {"foo": "bar"}}, {"foo": "bar"}, "", True, id="same-labels"),
    pytest.param(
        {"nodeSelector": {"foo": "bar"}},
        {"foo": "bar", "baz": "blah"},
        "",
        True,
        id="node-labels-are-a-superset",
    ),
    pytest.param(
        {"nodeSelector": {"foo": "bar", "baz": "blah"}},
        {"foo": "bar"},
        "",
        False,
        id="node-labels-are-a-subset",
    ),
    pytest.param(
        affinity(required({"matchExpressions": [expr("foo", "In", "bar", "value2")]})),
        {"foo": "bar"},
        "",
        True,
        id="in-matches",
    ),
    pytest.param(
        affinity(required({"matchExpressions": [expr("kernel-version", "Gt", "0204")]})),
        {"kernel-version": "0206"},
        "",
        True,
        id="greater-than-matches-zero-padded-integers",
    ),
    pytest.param(
        affinity(required({"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]})),
        {"mem-type": "DDR3"},
        "",
        True,
        id="notin-matches",
    ),
    pytest.param(
        affinity(required({"matchExpressions": [expr("GPU", "Exists")]})),
        {"GPU": _GPU},
        "",
        True,
        id="exists-matches",
    ),
    pytest.param(
        affinity(required({"matchExpressions": [expr("foo", "In", "value1", "value2")]})),
        {"foo": "bar"},
        "",
        False,
        id="in-does-not-match",
    ),
    pytest.param(affinity({"nodeSelectorTerms": None}), {"foo": "bar"}, "", False, id="nil-terms"),
    pytest.param(affinity(required()), {"foo": "bar"}, "", False, id="empty-terms"),
    pytest.param(
        affinity(required({"matchExpressions": []})),
        {"foo": "bar"},
        "",
        False,
        id="empty-match-expressions",
    ),
    pytest.param({}, {"foo": "bar"}, "", True, id="no-affinity"),
    pytest.param(affinity(None), {"foo": "bar"}, "", True, id="affinity-without-node-selector"),
    pytest.param(
        affinity(
            required(
                {"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]}
            )
        ),
        {"GPU": _GPU},
        "",
        True,
        id="anded-expressions-match",
    ),
    pytest.param(
        affinity(
            required(
                {"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")]}
            )
        ),
        {"GPU": _GPU},
        "",
        False,
        id="anded-expressions-do-not-match",
    ),
    pytest.param(
        affinity(
            required(
                {"matchExpressions": [expr("foo", "In", "bar", "value2")]},
                {"matchExpressions": [expr("diffkey", "In", "wrong", "value2")]},
            )
        ),
        {"foo": "bar"},
        "",
        True,
        id="ored-terms-match",
    ),
    pytest.param(
        affinity(
            required({"matchExpressions": [expr("foo", "Exists")]}), nodeSelector={"foo": "bar"}
        ),
        {"foo": "bar"},
        "",
        True,
        id="affinity-and-node-selector-both-satisfied",
    ),
    pytest.param(
        affinity(
            required({"matchExpressions": [expr("foo", "Exists")]}), nodeSelector={"foo": "bar"}
        ),
        {"foo": "barrrrrr"},
        "",
        False,
        id="affinity-satisfied-but-node-selector-not",
    ),
    pytest.param(
        affinity(required({"matchExpressions": [expr("foo", "NotIn", "invalid value: ___@#$%^")]})),
        {"foo": "bar"},
        "",
        False,
        id="invalid-value-in-a-term",
    ),
    pytest.param(
        affinity(required({"matchFields": [by_name("In", "node_1")]})),
        {},
        "node_1",
        True,
        id="match-fields-in-matches",
    ),
    pytest.param(
        affinity(required({"matchFields": [by_name("In", "node_1")]})),
        {},
        "node_2",
        False,
        id="match-fields-in-does-not-match",
    ),
    pytest.param(
        affinity(
            required(
                {"matchFields": [by_name("In", "node_1")]},
                {"matchExpressions": [expr("foo", "In", "bar")]},
            )
        ),
        {"foo": "bar"},
        "node_2",
        True,
        id="two-terms-fields-fail-expressions-match",
    ),
    pytest.param(
        affinity(
            required(
                {
                    "matchFields": [by_name("In", "node_1")],
                    "matchExpressions": [expr("foo", "In", "bar")],
                }
            )
        ),
        {"foo": "bar"},
        "node_2",
        False,
        id="one-term-fields-fail-expressions-match",
    ),
    pytest.param(
        affinity(
            required(
                {
                    "matchFields": [by_name("In", "node_1")],
                    "matchExpressions": [expr("foo", "In", "bar")],
                }
            )
        ),
        {"foo": "bar"},
        "node_1",
        True,
        id="one-term-fields-and-expressions-match",
    ),
    pytest.param(
        affinity(
            required(
                {"matchFields": [by_name("In", "node_1")]},
                {"matchExpressions": [expr("foo", "In", "not-match-to-bar")]},
            )
        ),
        {"foo": "bar"},
        "node_2",
        False,
        id="two-terms-neither-matches",
    ),
]


@pytest.mark.parametrize(("spec", "labels", "node_name", "expected"), _POD_ON_NODE)
def test_a_pod_fits_a_node_by_its_node_selector_and_required_node_affinity(
    spec: dict[str, Any], labels: dict[str, str], node_name: str, expected: bool
) -> None:
    assert pod_matches_node(spec, named(node_name, labels)) is expected


# --- This project's own cases -------------------------------------------------------------------

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
    by_name_a = {"matchFields": [by_name("In", "a-1")]}
    not_name = {"matchFields": [by_name("NotIn", "a-1")]}
    other_field = {"matchFields": [expr("metadata.uid", "In", "a-1")]}
    assert node_matches_term(ZONE_A, by_name_a)
    assert not node_matches_term(ZONE_A, not_name)
    assert not node_matches_term(ZONE_A, other_field)
    assert not node_matches_term(node("b-1", zone="a"), by_name_a)


def test_expressions_and_fields_in_one_term_are_anded_and_terms_are_ored() -> None:
    term = {
        "matchExpressions": [expr("zone", "In", "a")],
        "matchFields": [by_name("In", "other")],
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
