"""Label selector parsing and matching, both query-string and structured forms."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesemantics import label_selector as ls

LABELS = {"app": "web", "tier": "front", "env": "prod"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app!=web", False),
        ("app!=api", True),
        ("missing!=x", True),
        ("tier in (front, back)", True),
        ("tier in (back)", False),
        ("tier notin (back)", True),
        ("missing notin (a)", True),
        ("env", True),
        ("!env", False),
        ("!missing", True),
        ("app=web,tier=front,!missing", True),
        ("app=web,tier=back", False),
        ("example.com/key", False),
    ],
)
def test_query_string_selectors_match_like_upstream(text: str, expected: bool) -> None:
    assert ls.parse(text).matches(LABELS) is expected


@pytest.mark.parametrize("bad", ["app in (a", "=x", "app in a", "a=b,", "bad key=1", "app=-x-"])
def test_malformed_selectors_raise_selector_error(bad: str) -> None:
    with pytest.raises(ls.SelectorError):
        ls.parse(bad)


def test_structured_selector_supports_every_operator() -> None:
    sel = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["front"]},
            {"key": "env", "operator": "NotIn", "values": ["dev"]},
            {"key": "env", "operator": "Exists"},
            {"key": "legacy", "operator": "DoesNotExist"},
        ],
    }
    assert ls.matches(sel, LABELS)
    assert not ls.matches(sel, {**LABELS, "legacy": "1"})


def test_nil_selector_selects_nothing_and_empty_selects_everything() -> None:
    assert not ls.matches(None, LABELS)
    assert ls.matches({}, LABELS)


def test_validation_reports_every_bad_expression_with_its_path() -> None:
    errors = ls.validate_label_selector(
        {
            "matchExpressions": [
                {"key": "a", "operator": "In"},
                {"key": "b", "operator": "Near", "values": ["x"]},
            ]
        },
        "spec.selector",
    )
    assert [p for p, _ in errors] == [
        "spec.selector.matchExpressions[0].values",
        "spec.selector.matchExpressions[1].operator",
    ]


_key = st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True)
_val = st.from_regex(r"[a-z0-9]{1,5}", fullmatch=True)


@given(st.dictionaries(_key, _val, max_size=4), st.dictionaries(_key, _val, max_size=4))
def test_structured_selector_round_trips_through_its_string_form(
    match: dict[str, str], labels: dict[str, str]
) -> None:
    sel = ls.from_label_selector({"matchLabels": match})
    again = ls.parse(ls.to_string(sel))
    assert again.matches(labels) == sel.matches(labels)
    assert sel.matches({**labels, **match})


@given(st.text(max_size=30))
def test_parse_never_fails_with_anything_but_selector_error(text: str) -> None:
    try:
        ls.parse(text)
    except ls.SelectorError:
        pass
