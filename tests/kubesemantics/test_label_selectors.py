"""Label selectors against Kubernetes' own test tables.

The rows are the inputs and expected outputs of the upstream tests of ``pkg/labels`` (parsing,
the string form, matching, requirement construction), of ``metav1.LabelSelectorAsSelector`` and
``ValidateLabelSelector``, and of the label key and value rules, in this project's table form.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesemantics import label_selector as ls

R = ls.Requirement


def req(key: str, op: ls.Operator, *values: str) -> ls.Requirement:
    return R(key, op, frozenset(values))


# --- Parsing and the string form ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("x=a,y=b,z=c", id="three-equalities"),
        pytest.param("", id="empty-string"),
        pytest.param("x!=a,y=b", id="not-equal-then-equal"),
        pytest.param("x=", id="equal-to-empty-value"),
        pytest.param("x= ", id="equal-to-empty-value-with-trailing-space"),
        pytest.param("x=,z= ", id="two-empty-values"),
        pytest.param("x= ,z= ", id="two-empty-values-with-spaces"),
        pytest.param("!x", id="does-not-exist"),
        pytest.param("x>1", id="greater-than"),
        pytest.param("x>1,z<5", id="greater-than-and-less-than"),
    ],
)
def test_a_valid_selector_prints_as_itself_without_spaces(text: str) -> None:
    assert ls.to_string(ls.parse(text)) == text.replace(" ", "")


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("x=a||y=b", id="or-is-not-an-operator"),
        pytest.param("x==a==b", id="chained-equalities"),
        pytest.param("!x=a", id="negated-key-with-a-value"),
        pytest.param("x<a", id="less-than-a-non-integer"),
    ],
)
def test_an_invalid_selector_string_is_refused(text: str) -> None:
    with pytest.raises(ls.SelectorError):
        ls.parse(text)


def test_parsing_is_deterministic_whatever_the_order_of_requirements() -> None:
    assert ls.to_string(ls.parse("x=a,a=x")) == ls.to_string(ls.parse("a=x,x=a")) == "a=x,x=a"


_PARSED: list[Any] = [
    pytest.param("", [], id="empty"),
    pytest.param("\rx", [req("x", "exists")], id="carriage-return-before-key"),
    pytest.param(
        "this-is-a-dns.domain.com/key-with-dash",
        [req("this-is-a-dns.domain.com/key-with-dash", "exists")],
        id="prefixed-key-exists",
    ),
    pytest.param(
        "this-is-another-dns.domain.com/key-with-dash in (so,what)",
        [req("this-is-another-dns.domain.com/key-with-dash", "in", "so", "what")],
        id="prefixed-key-in-set",
    ),
    pytest.param(
        "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
        [req("0.1.2.domain/99", "notin", "10.10.100.1", "tick.tack.clock")],
        id="numeric-prefix-notin-dotted-values",
    ),
    pytest.param("foo  in\t (abc)", [req("foo", "in", "abc")], id="tab-and-spaces-around-in"),
    pytest.param("x notin\n (abc)", [req("x", "notin", "abc")], id="newline-after-notin"),
    pytest.param(
        "x  notin\t\t\t(abc,def)", [req("x", "notin", "abc", "def")], id="tabs-before-set"
    ),
    pytest.param("x in (abc,def)", [req("x", "in", "abc", "def")], id="in-two-values"),
    pytest.param("x in (abc,)", [req("x", "in", "abc", "")], id="trailing-comma-adds-empty"),
    pytest.param("x in (abc,abc)", [req("x", "in", "abc")], id="duplicate-values-collapse"),
    pytest.param("x in ()", [req("x", "in", "")], id="empty-parens-are-the-empty-value"),
    pytest.param("x in (a,,)", [req("x", "in", "a", "")], id="double-trailing-comma"),
    pytest.param("x in (a,,,)", [req("x", "in", "a", "")], id="triple-trailing-comma"),
    pytest.param("x in (a,,,,,,)", [req("x", "in", "a", "")], id="many-trailing-commas"),
    pytest.param(
        "x in (a,,a,,a,,a,,)", [req("x", "in", "a", "")], id="repeated-values-and-empties"
    ),
    pytest.param(
        "x notin (abc,,def),bar,z in (),w",
        [
            req("bar", "exists"),
            req("w", "exists"),
            req("x", "notin", "abc", "", "def"),
            req("z", "in", ""),
        ],
        id="mixed-requirements-sorted-by-key",
    ),
    pytest.param("x,y in (a)", [req("x", "exists"), req("y", "in", "a")], id="exists-then-in"),
    pytest.param("x=a", [req("x", "=", "a")], id="equals"),
    pytest.param("x>1", [req("x", "gt", "1")], id="greater-than"),
    pytest.param("x<7", [req("x", "lt", "7")], id="less-than"),
    pytest.param("x=a,y!=b", [req("x", "=", "a"), req("y", "!=", "b")], id="equal-and-not-equal"),
    pytest.param(
        "x=a,y!=b,z in (h,i,j)",
        [req("x", "=", "a"), req("y", "!=", "b"), req("z", "in", "h", "i", "j")],
        id="equal-not-equal-and-in",
    ),
    pytest.param("x notin ( )", [req("x", "notin", "")], id="notin-blank-parens"),
    pytest.param("x notin (, a)", [req("x", "notin", "", "a")], id="leading-comma-adds-empty"),
    pytest.param("a ", [req("a", "exists")], id="key-with-trailing-space"),
    pytest.param(
        "a in (x,y,notin, z,in)",
        [req("a", "in", "in", "notin", "x", "y", "z")],
        id="keywords-are-values-inside-a-set",
    ),
    pytest.param("notin=in", [req("notin", "=", "in")], id="keywords-as-key-and-value"),
]


@pytest.mark.parametrize(("text", "expected"), _PARSED)
def test_a_selector_string_parses_into_requirements_sorted_by_key(
    text: str, expected: list[ls.Requirement]
) -> None:
    assert list(ls.parse(text).requirements) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("x=a||y=b", id="or-is-not-an-operator"),
        pytest.param("x,,y", id="empty-requirement-between-commas"),
        pytest.param(",x,y", id="leading-comma"),
        pytest.param("x nott in (y)", id="misspelt-operator"),
        pytest.param("a in (xyz),", id="trailing-comma"),
        pytest.param("a in (xyz)b notin ()", id="missing-comma-between-requirements"),
        pytest.param("a in (xyz abc)", id="missing-comma-between-values"),
        pytest.param("a notin(", id="unclosed-set"),
        pytest.param("a (", id="open-paren-instead-of-operator"),
        pytest.param("(", id="open-paren-alone"),
    ],
)
def test_a_malformed_selector_string_is_refused(text: str) -> None:
    with pytest.raises(ls.SelectorError):
        ls.parse(text)


@pytest.mark.parametrize(
    ("operator", "value"),
    [
        pytest.param("in", "(a)", id="in"),
        pytest.param("=", "a", id="equals"),
        pytest.param("==", "a", id="double-equals"),
        pytest.param(">", "1", id="greater-than"),
        pytest.param("<", "1", id="less-than"),
        pytest.param("notin", "(a)", id="notin"),
        pytest.param("!=", "a", id="not-equals"),
    ],
)
def test_every_binary_operator_is_accepted_after_a_key(operator: str, value: str) -> None:
    (requirement,) = ls.parse(f"x {operator} {value}").requirements
    assert requirement.key == "x"


@pytest.mark.parametrize(
    "operator",
    [
        pytest.param("!", id="does-not-exist-is-unary"),
        pytest.param("exists", id="exists-is-not-a-word"),
        pytest.param("(", id="open-paren"),
    ],
)
def test_a_token_that_is_no_binary_operator_is_named_in_the_error(operator: str) -> None:
    with pytest.raises(ls.SelectorError) as caught:
        ls.parse(f"x {operator} y")
    assert str(caught.value) == (
        f"unable to parse requirement: found '{operator}', expected: in, notin, =, ==, !=, gt, lt"
    )


# --- Matching -----------------------------------------------------------------------------------

_FOO_BAZ = {"foo": "bar", "baz": "blah"}


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        pytest.param("", {"x": "y"}, True, id="empty-matches-anything"),
        pytest.param("x=y", {"x": "y"}, True, id="equal-value"),
        pytest.param("x=y,z=w", {"x": "y", "z": "w"}, True, id="both-equal"),
        pytest.param("x!=y,z!=w", {"x": "z", "z": "a"}, True, id="both-not-equal"),
        pytest.param("notin=in", {"notin": "in"}, True, id="keywords-as-label-and-value"),
        pytest.param("x", {"x": "z"}, True, id="exists"),
        pytest.param("!x", {"y": "z"}, True, id="does-not-exist"),
        pytest.param("x>1", {"x": "2"}, True, id="greater"),
        pytest.param("x<1", {"x": "0"}, True, id="less"),
        pytest.param("x=z", {}, False, id="equal-on-no-labels"),
        pytest.param("x=y", {"x": "z"}, False, id="other-value"),
        pytest.param("x=y,z=w", {"x": "w", "z": "w"}, False, id="one-of-two-differs"),
        pytest.param("x!=y,z!=w", {"x": "z", "z": "w"}, False, id="one-not-equal-fails"),
        pytest.param("x", {"y": "z"}, False, id="exists-missing"),
        pytest.param("!x", {"x": "z"}, False, id="does-not-exist-present"),
        pytest.param("x>1", {"x": "0"}, False, id="not-greater"),
        pytest.param("x<1", {"x": "2"}, False, id="not-less"),
        pytest.param("foo=bar", _FOO_BAZ, True, id="first-label"),
        pytest.param("baz=blah", _FOO_BAZ, True, id="second-label"),
        pytest.param("foo=bar,baz=blah", _FOO_BAZ, True, id="both-labels"),
        pytest.param("foo=blah", _FOO_BAZ, False, id="value-of-the-other-label"),
        pytest.param("baz=bar", _FOO_BAZ, False, id="swapped-value"),
        pytest.param("foo=bar,foobar=bar,baz=blah", _FOO_BAZ, False, id="one-label-missing"),
    ],
)
def test_a_parsed_selector_matches_labels_like_upstream(
    text: str, labels: dict[str, str], expected: bool
) -> None:
    assert ls.parse(text).matches(labels) is expected


@pytest.mark.parametrize(
    ("labels", "requirements", "expected"),
    [
        pytest.param(
            {"x": "foo", "y": "baz"},
            [req("x", "in", "foo"), req("y", "notin", "alpha")],
            True,
            id="in-and-notin",
        ),
        pytest.param(
            {"x": "foo", "y": "baz"},
            [req("x", "in", "foo"), req("y", "in", "alpha")],
            False,
            id="second-in-fails",
        ),
        pytest.param(
            {"y": ""},
            [req("x", "notin", ""), req("y", "exists")],
            True,
            id="notin-matches-a-missing-key",
        ),
        pytest.param(
            {"y": ""},
            [req("x", "!"), req("y", "exists")],
            True,
            id="exists-with-an-empty-value",
        ),
        pytest.param(
            {"y": ""},
            [req("x", "notin", ""), req("y", "!")],
            False,
            id="does-not-exist-on-an-empty-value",
        ),
        pytest.param({"y": "baz"}, [req("x", "in", "")], False, id="in-empty-needs-the-key"),
        pytest.param({"z": "2"}, [req("z", "gt", "1")], True, id="greater-than-integer"),
        pytest.param({"z": "v2"}, [req("z", "gt", "1")], False, id="greater-than-non-integer"),
    ],
)
def test_requirements_match_as_a_conjunction(
    labels: dict[str, str], requirements: list[ls.Requirement], expected: bool
) -> None:
    assert ls.Selector(tuple(requirements)).matches(labels) is expected


@pytest.mark.parametrize(
    "selector",
    [
        pytest.param({}, id="empty-set"),
        pytest.param({"foo": "bar"}, id="first-label"),
        pytest.param({"baz": "blah"}, id="second-label"),
        pytest.param({"foo": "bar", "baz": "blah"}, id="both-labels"),
    ],
)
def test_a_selector_from_a_label_set_matches_labels_holding_the_set(
    selector: dict[str, str],
) -> None:
    assert ls.from_label_selector({"matchLabels": selector}).matches(_FOO_BAZ)


def test_the_empty_selector_is_empty_and_matches_everything() -> None:
    for selector in (ls.parse(""), ls.from_label_selector({}), ls.Selector()):
        assert selector.empty
        assert selector.matches({"x": "y"})


# --- The string form ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requirements", "text"),
    [
        pytest.param(
            [req("x", "in", "abc", "def"), req("y", "notin", "jkl"), req("z", "exists")],
            "x in (abc,def),y notin (jkl),z",
            id="in-notin-exists",
        ),
        pytest.param(
            [req("x", "notin", "abc", "def"), req("y", "!=", "jkl"), req("z", "!")],
            "x notin (abc,def),y!=jkl,!z",
            id="notin-not-equal-does-not-exist",
        ),
        pytest.param(
            [req("x", "notin", "abc"), req("y", "in", "jkl", "mno"), req("z", "notin", "")],
            "x notin (abc),y in (jkl,mno),z notin ()",
            id="empty-value-prints-as-empty-parens",
        ),
        pytest.param(
            [req("x", "=", "abc"), req("y", "==", "jkl"), req("z", "!=", "a"), req("z", "exists")],
            "x=abc,y==jkl,z!=a,z",
            id="equal-double-equal-not-equal",
        ),
        pytest.param(
            [req("x", "gt", "2"), req("y", "lt", "8"), req("z", "exists")],
            "x>2,y<8,z",
            id="greater-less-exists",
        ),
    ],
)
def test_requirements_print_in_the_upstream_string_form(
    requirements: list[ls.Requirement], text: str
) -> None:
    assert ls.to_string(ls.Selector(tuple(requirements))) == text


@pytest.mark.parametrize(
    ("labels", "text"),
    [
        pytest.param({}, "", id="empty"),
        pytest.param({"app": "foo"}, "app=foo", id="one-label"),
        pytest.param({"app": "foo", "a": "b"}, "a=b,app=foo", id="labels-sorted-by-key"),
    ],
)
def test_a_label_set_prints_sorted_by_key(labels: dict[str, str], text: str) -> None:
    assert ls.to_string(ls.from_label_selector({"matchLabels": labels})) == text


# --- Requirement construction -------------------------------------------------------------------

_LONG = "a" * 254


@pytest.mark.parametrize(
    ("key", "operator", "values", "problems"),
    [
        pytest.param("x1", "in", [], [("values", "Invalid value", [])], id="in-without-values"),
        pytest.param(
            "x2", "notin", [], [("values", "Invalid value", [])], id="notin-without-values"
        ),
        pytest.param("x3", "in", ["foo"], [], id="in-one-value"),
        pytest.param("x4", "notin", ["foo"], [], id="notin-one-value"),
        pytest.param(
            "x5",
            "=",
            ["bar", "foo"],
            [("values", "Invalid value", ["bar", "foo"])],
            id="equals-two-values",
        ),
        pytest.param("x6", "exists", [], [], id="exists"),
        pytest.param("x7", "!", [], [], id="does-not-exist"),
        pytest.param(
            "x8", "exists", ["foo"], [("values", "Invalid value", ["foo"])], id="exists-with-value"
        ),
        pytest.param("x9", "in", ["bar"], [], id="in-bar"),
        pytest.param("x10", "in", ["bar"], [], id="in-bar-again"),
        pytest.param("x11", "gt", ["1"], [], id="greater-than-integer"),
        pytest.param("x12", "lt", ["6"], [], id="less-than-integer"),
        pytest.param(
            "x13", "gt", [], [("values", "Invalid value", [])], id="greater-than-without-value"
        ),
        pytest.param(
            "x14",
            "gt",
            ["bar"],
            [("values[0]", "Invalid value", "bar")],
            id="greater-than-non-integer",
        ),
        pytest.param(
            "x15",
            "lt",
            ["bar"],
            [("values[0]", "Invalid value", "bar")],
            id="less-than-non-integer",
        ),
        pytest.param(
            _LONG, "exists", [], [("key", "Invalid value", _LONG)], id="key-longer-than-253"
        ),
        pytest.param(
            "x16",
            "=",
            [_LONG],
            [("values[0][x16]", "Invalid value", _LONG)],
            id="value-too-long",
        ),
        pytest.param(
            "x17", "=", ["a b"], [("values[0][x17]", "Invalid value", "a b")], id="value-with-space"
        ),
        pytest.param(
            "x18",
            "unsupportedOp",
            [],
            [("operator", "Unsupported value", "unsupportedOp")],
            id="unsupported-operator",
        ),
    ],
)
def test_a_requirement_is_refused_for_exactly_the_upstream_reasons(
    key: str, operator: str, values: list[str], problems: list[tuple[str, str, object]]
) -> None:
    found = ls.requirement_problems(key, operator, values)
    assert [(p.field, p.kind, p.value) for p in found] == problems
    if problems:
        with pytest.raises(ls.SelectorError) as caught:
            ls.new_requirement(key, operator, values)
        assert [(p.field, p.kind) for p in caught.value.problems] == [p[:2] for p in problems]
    else:
        assert ls.new_requirement(key, operator, values) == R(key, operator, frozenset(values))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("labels", "problems"),
    [
        pytest.param({"key": "val"}, [], id="simple-set"),
        pytest.param(
            {"Key": "axahm2EJ8Phiephe2eixohbee9eGeiyees1thuozi1xoh0GiuH3diewi8iem7Nui"},
            ["values[0][Key]"],
            id="value-too-long",
        ),
    ],
)
def test_a_label_set_with_a_bad_value_names_the_value_and_its_key(
    labels: dict[str, str], problems: list[str]
) -> None:
    if not problems:
        assert ls.from_label_selector({"matchLabels": labels}).requirements == (
            req("key", "=", "val"),
        )
        return
    with pytest.raises(ls.SelectorError) as caught:
        ls.from_label_selector({"matchLabels": labels})
    assert [p.field for p in caught.value.problems] == problems


# --- metav1.LabelSelector -----------------------------------------------------------------------

_BAZ_IN = [{"key": "baz", "operator": "In", "values": ["qux", "norf"]}]


@pytest.mark.parametrize(
    ("selector", "text"),
    [
        pytest.param({}, "", id="empty-selects-everything"),
        pytest.param({"matchLabels": {"foo": "bar"}}, "foo=bar", id="match-labels"),
        pytest.param({"matchExpressions": _BAZ_IN}, "baz in (norf,qux)", id="match-expressions"),
        pytest.param(
            {"matchLabels": {"foo": "bar"}, "matchExpressions": _BAZ_IN},
            "baz in (norf,qux),foo=bar",
            id="both-sorted-by-key",
        ),
    ],
)
def test_a_label_selector_becomes_the_selector_upstream_prints(
    selector: dict[str, Any], text: str
) -> None:
    compiled = ls.from_label_selector(selector)
    assert ls.to_string(compiled) == text
    assert compiled == ls.parse(text)


def test_a_nil_label_selector_selects_nothing_and_prints_empty() -> None:
    nothing = ls.from_label_selector(None)
    assert nothing.nothing
    assert not nothing.empty
    assert not nothing.matches({})
    assert ls.to_string(nothing) == ""


def test_exists_with_values_in_a_label_selector_is_an_error() -> None:
    with pytest.raises(ls.SelectorError):
        ls.from_label_selector(
            {"matchExpressions": [{"key": "baz", "operator": "Exists", "values": ["qux", "norf"]}]}
        )


def test_compiling_a_label_selector_leaves_it_unchanged() -> None:
    selector = {"matchLabels": {"foo": "bar"}, "matchExpressions": [dict(e) for e in _BAZ_IN]}
    ls.from_label_selector(selector)
    assert selector == {"matchLabels": {"foo": "bar"}, "matchExpressions": _BAZ_IN}


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        pytest.param("nothing", True, id="nothing"),
        pytest.param("everything", False, id="everything"),
        pytest.param({}, False, id="empty-set"),
        pytest.param({"key": "value"}, False, id="non-empty-set"),
        pytest.param("", False, id="empty-string"),
        pytest.param("a", False, id="exists"),
        pytest.param("!a", False, id="does-not-exist"),
        pytest.param("a=b", False, id="equals"),
        pytest.param("a!=b", False, id="not-equals"),
        pytest.param("a in (b)", False, id="in"),
        pytest.param("a notin (b)", False, id="notin"),
        pytest.param("a,!a", False, id="conflicting-exists"),
        pytest.param("a=b,a!=b", False, id="conflicting-equality"),
        pytest.param("a in (b),a notin (b)", False, id="conflicting-sets"),
    ],
)
def test_only_the_nothing_selector_is_marked_as_selecting_nothing(
    selector: str | dict[str, str], message: bool
) -> None:
    if selector == "nothing":
        compiled = ls.MATCH_NOTHING
    elif selector == "everything":
        compiled = ls.Selector()
    elif isinstance(selector, dict):
        compiled = ls.from_label_selector({"matchLabels": selector})
    else:
        compiled = ls.parse(selector)
    assert compiled.nothing is message


# --- Validation of a LabelSelector --------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        pytest.param({"key": "key", "operator": "In", "values": ["value"]}, None, id="valid"),
        pytest.param(
            {"key": "-key", "operator": "In", "values": ["value"]},
            "name part must consist of alphanumeric characters",
            id="invalid-key",
        ),
        pytest.param(
            {"key": "key", "operator": "abc", "values": ["value"]},
            "not a valid selector operator",
            id="invalid-operator",
        ),
        pytest.param(
            {"key": "key", "operator": "In", "values": ["-value"]},
            "a valid label must be an empty string or consist of",
            id="invalid-value",
        ),
    ],
)
def test_validation_reports_one_error_in_upstream_words(
    expression: dict[str, Any], fragment: str | None
) -> None:
    errors = ls.validate_label_selector({"matchExpressions": [expression]}, "labelSelector")
    assert len(errors) == (0 if fragment is None else 1)
    if fragment is not None:
        assert fragment in errors[0][1]
        assert errors[0][0].startswith("labelSelector.matchExpressions[0].")


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


# --- Label keys and values ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "simple",
        "now-with-dashes",
        "1-starts-with-num",
        "1234",
        "simple/simple",
        "now-with-dashes/simple",
        "now-with-dashes/now-with-dashes",
        "now.with.dots/simple",
        "now-with.dashes-and.dots/simple",
        "1-num.2-num/3-num",
        "1234/5678",
        "1.2.3.4/5678",
        "Uppercase_Is_OK_123",
        "example.com/Uppercase_Is_OK_123",
        "requests.storage-foo",
        pytest.param("a" * 63, id="name-of-63"),
        pytest.param("a" * 253 + "/" + "b" * 63, id="prefix-of-253-and-name-of-63"),
    ],
)
def test_a_valid_label_key_is_accepted(key: str) -> None:
    assert ls.label_key_errors(key) == []


@pytest.mark.parametrize(
    ("key", "first_error"),
    [
        ("nospecialchars%^=@", "name part must consist of"),
        ("cantendwithadash-", "name part must consist of"),
        ("-cantstartwithadash-", "name part must consist of"),
        ("only/one/slash", "a valid label key must consist of"),
        ("Example.com/abc", "prefix part a lowercase RFC 1123 subdomain"),
        ("example_com/abc", "prefix part a lowercase RFC 1123 subdomain"),
        ("example.com/", "name part must be non-empty"),
        ("/simple", "prefix part must be non-empty"),
        pytest.param("a" * 64, "name part must be no more than 63 bytes", id="name-of-64"),
        pytest.param(
            "a" * 254 + "/abc", "prefix part must be no more than 253 bytes", id="prefix-of-254"
        ),
    ],
)
def test_an_invalid_label_key_is_refused_with_the_upstream_reason(
    key: str, first_error: str
) -> None:
    errors = ls.label_key_errors(key)
    assert errors
    assert errors[0].startswith(first_error)
    assert not ls.is_valid_key(key)


@pytest.mark.parametrize(
    "value",
    [
        "simple",
        "now-with-dashes",
        "1-starts-with-num",
        "end-with-num-1",
        "1234",
        pytest.param("a" * 63, id="value-of-63"),
        pytest.param("", id="empty-value"),
    ],
)
def test_a_valid_label_value_is_accepted(value: str) -> None:
    assert ls.label_value_errors(value) == []


@pytest.mark.parametrize(
    "value",
    [
        "nospecialchars%^=@",
        pytest.param("Tama-nui-te-rā.is.Māori.sun", id="non-ascii"),
        "\\backslashes\\are\\bad",
        "-starts-with-dash",
        "ends-with-dash-",
        ".starts.with.dot",
        "ends.with.dot.",
        pytest.param("a" * 64, id="value-of-64"),
    ],
)
def test_an_invalid_label_value_is_refused(value: str) -> None:
    assert ls.label_value_errors(value)
    assert not ls.is_valid_value(value)


# --- This project's own cases -------------------------------------------------------------------

LABELS = {"app": "web", "tier": "front", "env": "prod"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("app==web", True),
        ("app!=api", True),
        ("missing!=x", True),
        ("tier in (front, back)", True),
        ("tier in (back)", False),
        ("tier notin (back)", True),
        ("missing notin (a)", True),
        ("!missing", True),
        ("app=web,tier=front,!missing", True),
        ("app=web,tier=back", False),
        ("example.com/key", False),
    ],
)
def test_query_string_selectors_match_a_pod_s_labels(text: str, expected: bool) -> None:
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


# --- Properties ---------------------------------------------------------------------------------

_key = st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True)
_val = st.from_regex(r"[a-z0-9]{1,5}", fullmatch=True)


@given(st.dictionaries(_key, _val, max_size=4), st.dictionaries(_key, _val, max_size=4))
def test_structured_selector_round_trips_through_its_string_form(
    match: dict[str, str], labels: dict[str, str]
) -> None:
    sel = ls.from_label_selector({"matchLabels": match})
    again = ls.parse(ls.to_string(sel))
    assert again == sel
    assert again.matches(labels) == sel.matches(labels)
    assert sel.matches({**labels, **match})


@given(st.text(max_size=30))
def test_parse_never_fails_with_anything_but_selector_error(text: str) -> None:
    try:
        parsed = ls.parse(text)
    except ls.SelectorError:
        return
    assert ls.parse(ls.to_string(parsed)) == parsed
