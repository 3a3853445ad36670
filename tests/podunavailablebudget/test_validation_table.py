"""PodUnavailableBudget validation: Kruise v1.9.0's paths, types, messages and error count."""

from __future__ import annotations

from typing import Any

import pytest

from spreadbus.features.podunavailablebudget.core.selector_overlap import loosely_overlap
from spreadbus.features.podunavailablebudget.core.validation import PERCENT_MESSAGE, validate_budget
from tests.podunavailablebudget.builders import budget

JSON = dict[str, Any]
SEL_OR_REF = "spec.selector, targetRef"
MAX_OR_MIN = "spec.maxUnavailable, minAvailable"
OPS = "kruise.io/pub-protect-operations"
TOTAL = "pub.kruise.io/protect-total-replicas"
EMPTY_REF = "empty TargetReference is not valid for PodUnavailableBudget."


def errors(obj: JSON, **kwargs: Any) -> list[tuple[str, str, str]]:
    return [(e.field, e.type, e.message) for e in validate_budget(obj, **kwargs)]


SELECTOR = {"matchLabels": {"app": "web"}}

CASES: list[tuple[str, JSON, list[tuple[str, str, str]]]] = [
    ("the seed's targetRef budget", budget(), []),
    ("a selector budget", budget(target=None, selector=SELECTOR, max_unavailable=None,
                                 min_available=2), []),
    ("neither selector nor targetRef", budget(target=None),
     [(SEL_OR_REF, "Required", "no selector or targetRef defined in PodUnavailableBudget")]),
    ("both selector and targetRef", budget(selector=SELECTOR),
     [(SEL_OR_REF, "Required", "selector and targetRef are mutually exclusive")]),
    ("a targetRef without a name", budget(target=("apps/v1", "Deployment", "")),
     [("spec.TargetReference", "Invalid", EMPTY_REF)]),
    ("a targetRef without an apiVersion", budget(target=("", "Deployment", "web")),
     [("spec.TargetReference", "Invalid", EMPTY_REF)]),
    ("an apiVersion with two slashes", budget(target=("a/b/c", "Deployment", "web")),
     [("spec.TargetReference", "Invalid", "unexpected GroupVersion string: a/b/c")]),
    ("an empty and unparsable targetRef: two errors", budget(target=("a/b/c", "", "web")),
     [("spec.TargetReference", "Invalid", EMPTY_REF),
      ("spec.TargetReference", "Invalid", "unexpected GroupVersion string: a/b/c")]),
    ("an empty selector", budget(target=None, selector={}),
     [("spec.selector", "Invalid", "empty selector is not valid for PodUnavailableBudget.")]),
    ("In without values: the requirement and the conversion",
     budget(target=None, selector={"matchExpressions": [{"key": "app", "operator": "In"}]}),
     [("spec.selector.matchExpressions[0].values", "Required",
       "must be specified when `operator` is 'In' or 'NotIn'"),
      ("spec.selector", "Invalid", "")]),
    ("Exists with values",
     budget(target=None, selector={"matchExpressions": [
         {"key": "app", "operator": "Exists", "values": ["a"]}]}),
     [("spec.selector.matchExpressions[0].values", "Forbidden",
       "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
      ("spec.selector", "Invalid", "")]),
    ("an unknown operator",
     budget(target=None, selector={"matchExpressions": [{"key": "app", "operator": "Near"}]}),
     [("spec.selector.matchExpressions[0].operator", "Invalid", "not a valid selector operator"),
      ("spec.selector", "Invalid", "")]),
    ("neither maxUnavailable nor minAvailable", budget(max_unavailable=None),
     [(MAX_OR_MIN, "Required", "no maxUnavailable or minAvailable defined in "
                               "PodUnavailableBudget")]),
    ("both maxUnavailable and minAvailable", budget(min_available=1),
     [(MAX_OR_MIN, "Required", "maxUnavailable and minAvailable are mutually exclusive")]),
    ("a negative maxUnavailable", budget(max_unavailable=-1),
     [("spec.maxUnavailable", "Invalid", "must be greater than or equal to 0")]),
    ("a number as a string", budget(max_unavailable="60"),
     [("spec.maxUnavailable", "Invalid", PERCENT_MESSAGE)]),
    ("a fraction of a percent", budget(max_unavailable=None, min_available="0.5%"),
     [("spec.minAvailable", "Invalid", PERCENT_MESSAGE)]),
    ("more than 100%", budget(max_unavailable=None, min_available="120%"),
     [("spec.minAvailable", "Invalid", "must not be greater than 100%")]),
    ("a value of neither type", budget(max_unavailable=1.5),
     [("spec.maxUnavailable", "Invalid", "must be an integer or percentage (e.g '5%')")]),
    ("0 and 100% are legal", budget(max_unavailable=0), []),
    ("100% is legal", budget(max_unavailable="100%"), []),
    ("every protectable operation", budget(annotations={OPS: "DELETE,UPDATE,EVICT,RESIZE"}), []),
    ("an operation with a space", budget(annotations={OPS: "DELETE, EVICT"}),
     [("metadata", "Internal", f"annotation[{OPS}] is invalid")]),
    ("an empty operations annotation", budget(annotations={OPS: ""}),
     [("metadata", "Internal", f"annotation[{OPS}] is invalid")]),
    ("one error per bad item", budget(annotations={OPS: "delete,,EVICT"}),
     [("metadata", "Internal", f"annotation[{OPS}] is invalid")] * 2),
    ("a negative total passes", budget(annotations={TOTAL: "-3"}), []),
    ("a total that is not a number", budget(annotations={TOTAL: "five"}),
     [("metadata", "Internal", f"annotation[{TOTAL}] is invalid")]),
    ("a total beyond int32", budget(annotations={TOTAL: "2147483648"}),
     [("metadata", "Internal", f"annotation[{TOTAL}] is invalid")]),
    ("errors of every group, in Kruise's order",
     budget(target=None, max_unavailable=None, annotations={OPS: "KILL", TOTAL: "x"}),
     [("metadata", "Internal", f"annotation[{OPS}] is invalid"),
      ("metadata", "Internal", f"annotation[{TOTAL}] is invalid"),
      (SEL_OR_REF, "Required", "no selector or targetRef defined in PodUnavailableBudget"),
      (MAX_OR_MIN, "Required", "no maxUnavailable or minAvailable defined in "
                               "PodUnavailableBudget")]),
]


@pytest.mark.parametrize(("obj", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_create(obj: JSON, expected: list[tuple[str, str, str]]) -> None:
    assert errors(obj) == expected


def test_a_bad_label_value_is_reported_twice_as_kruise_does() -> None:
    found = errors(budget(target=None, selector={"matchLabels": {"app": "-web-"}}))
    assert [(f, t) for f, t, _ in found] == [
        ("spec.selector.matchLabels", "Invalid"), ("spec.selector", "Invalid")
    ]
    assert found[0][2].startswith("a valid label must be an empty string")


def test_update_may_not_change_the_target() -> None:
    old = budget()
    new = budget(target=("apps/v1", "Deployment", "other"))
    assert errors(new, old=old) == [
        (SEL_OR_REF, "Required", "selector and targetRef cannot be modified")
    ]


def test_update_may_switch_from_max_unavailable_to_min_available() -> None:
    old = budget()
    new = budget(max_unavailable=None, min_available="50%", annotations={OPS: "DELETE"})
    assert errors(new, old=old) == []


def test_update_replacing_target_ref_by_a_selector() -> None:
    old = budget()
    new = budget(target=None, selector=SELECTOR)
    assert errors(new, old=old) == [
        (SEL_OR_REF, "Required", "selector and targetRef cannot be modified")
    ]


def test_same_target_in_another_group_version_conflicts() -> None:
    other = budget("other", target=("apps/v1beta1", "Deployment", "web-server"))
    assert errors(budget(), others=[other]) == [
        ("spec.targetReference", "Invalid",
         "pub.spec.targetReference is in conflict with other PodUnavailableBudget other")
    ]


def test_the_stored_version_and_other_namespaces_are_skipped() -> None:
    stored = budget(max_unavailable=1)
    elsewhere = budget("other", namespace="elsewhere")
    assert errors(budget(), others=[stored, elsewhere]) == []


def test_only_the_first_conflict_is_reported() -> None:
    first, second = budget("a"), budget("b")
    assert [e[2] for e in errors(budget(), others=[first, second])] == [
        "pub.spec.targetReference is in conflict with other PodUnavailableBudget a"
    ]


def test_overlapping_selectors_conflict() -> None:
    mine = budget(target=None, selector=SELECTOR)
    other = budget("other", target=None, selector={
        "matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]})
    assert errors(mine, others=[other]) == [
        ("spec.selector", "Invalid",
         "pub.spec.selector is in conflict with other PodUnavailableBudget other")
    ]


def test_a_selector_and_a_target_are_never_compared() -> None:
    mine = budget(target=None, selector=SELECTOR)
    assert errors(mine, others=[budget("other")]) == []


def _req(op: str, *values: str) -> JSON:
    expr: JSON = {"key": "app", "operator": op}
    if values:
        expr["values"] = list(values)
    return {"matchExpressions": [expr]}


OVERLAP = [
    (_req("In", "a"), _req("In", "a", "b"), True),
    (_req("In", "a"), _req("In", "b"), False),
    (_req("In", "a"), _req("Exists"), True),
    (_req("In", "a"), _req("NotIn", "a"), False),
    (_req("In", "a", "b"), _req("NotIn", "a"), True),
    (_req("NotIn", "a"), _req("In", "a", "b"), True),
    (_req("NotIn", "a", "b"), _req("In", "a"), False),
    (_req("Exists"), _req("DoesNotExist"), False),
    (_req("DoesNotExist"), _req("NotIn", "a"), True),
    (_req("DoesNotExist"), _req("In", "a"), False),
    (_req("NotIn", "a"), _req("NotIn", "b"), True),
    ({"matchLabels": {"app": "a"}}, {"matchLabels": {"app": "a", "tier": "web"}}, False),
    ({"matchLabels": {"app": "a"}, **_req("In", "b")}, _req("In", "a"), True),
]


@pytest.mark.parametrize(("first", "second", "expected"), OVERLAP)
def test_loose_overlap(first: JSON, second: JSON, expected: bool) -> None:
    assert loosely_overlap(first, second) is expected
    assert loosely_overlap(second, first) is expected
