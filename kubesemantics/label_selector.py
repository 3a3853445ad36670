"""Kubernetes label selectors: the query-string form and the structured ``LabelSelector`` form.

Both forms compile to one :class:`Selector` (a conjunction of :class:`Requirement`), so the API
simulator's ``?labelSelector=`` filter, a PodDisruptionBudget's ``spec.selector`` and a
WorkloadSpread's ``namespaceSelector`` all match by the same rules.

Parsing follows the upstream grammar of ``k8s.io/apimachinery/pkg/labels`` token for token: a
lexer that splits on the special symbols ``= ! ( ) , > <`` (longest operator first) and on
whitespace, ``in``/``notin`` as keywords only where an operator is expected, then requirements
``key``, ``!key``, ``key=v``, ``key==v``, ``key!=v``, ``key>n``, ``key<n``, ``key in (..)`` and
``key notin (..)``. A value set may hold empty values (``x in (a,)``, ``x in ()`` is the set of
the empty string). Requirements are kept sorted by key, which fixes the string form. ``!=`` and
``notin`` match objects that lack the key; ``>``/``<`` compare integers and never match a label
that is not one.

Errors raise :class:`SelectorError` in the upstream wording (field path, ``Invalid value``,
detail) so an API layer can pass them on in a 400 ``Status``. The label key and value rules
(:func:`label_key_errors`, :func:`label_value_errors`) are upstream's ``IsQualifiedName`` and
``IsValidLabelValue`` with their messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

Operator = Literal["in", "notin", "exists", "!", "=", "==", "!=", "gt", "lt"]

_EXACT: frozenset[str] = frozenset({"=", "==", "!="})
_BINARY: tuple[Operator, ...] = ("in", "notin", "=", "==", "!=", "gt", "lt")
_ALL_OPERATORS: tuple[Operator, ...] = (*_BINARY, "exists", "!")

_LABEL_NAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_NAME_RE = re.compile(_LABEL_NAME)
_LABEL_VALUE_RE = re.compile(f"({_LABEL_NAME})?")
_DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = rf"{_DNS_LABEL}(\.{_DNS_LABEL})*"
_DNS_SUBDOMAIN_RE = re.compile(_DNS_SUBDOMAIN)

_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)


def _regex_error(message: str, regex: str, *examples: str) -> str:
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{regex}')"


def _too_long(limit: int) -> str:
    return f"must be no more than {limit} bytes"


def _subdomain_errors(value: str) -> list[str]:
    errors: list[str] = []
    if len(value.encode()) > 253:
        errors.append(_too_long(253))
    if not _DNS_SUBDOMAIN_RE.fullmatch(value):
        errors.append(_regex_error(_SUBDOMAIN_MSG, _DNS_SUBDOMAIN, "example.com"))
    return errors


def label_key_errors(key: str) -> list[str]:
    """Why ``key`` is not a label key (an optional DNS subdomain prefix and a name), or []."""
    parts = key.split("/")
    errors: list[str] = []
    if len(parts) > 2:
        return [
            "a valid label key "
            + _regex_error(_NAME_MSG, _LABEL_NAME, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend(f"prefix part {m}" for m in _subdomain_errors(prefix))
    if not name:
        errors.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errors.append("name part " + _too_long(63))
    if not _LABEL_NAME_RE.fullmatch(name):
        errors.append(
            "name part " + _regex_error(_NAME_MSG, _LABEL_NAME, "MyName", "my.name", "123-abc")
        )
    return errors


def label_value_errors(value: str) -> list[str]:
    """Why ``value`` is not a label value (empty, or at most 63 name characters), or []."""
    errors: list[str] = []
    if len(value.encode()) > 63:
        errors.append(_too_long(63))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errors.append(_regex_error(_VALUE_MSG, f"({_LABEL_NAME})?", "MyValue", "my_value", "12345"))
    return errors


def is_valid_key(key: str) -> bool:
    return not label_key_errors(key)


def is_valid_value(value: str) -> bool:
    return not label_value_errors(value)


@dataclass(frozen=True, slots=True)
class FieldProblem:
    """One field error of a requirement, as ``field.Error`` renders it."""

    field: str
    kind: Literal["Invalid value", "Unsupported value"]
    value: object
    detail: str

    def __str__(self) -> str:
        return f"{self.field}: {self.kind}: {json.dumps(self.value)}: {self.detail}"


class SelectorError(ValueError):
    """A selector that cannot be parsed or is invalid; ``problems`` are its field errors."""

    def __init__(self, message: str, problems: Sequence[FieldProblem] = ()) -> None:
        super().__init__(message)
        self.problems: tuple[FieldProblem, ...] = tuple(problems)


def _aggregate(problems: Sequence[FieldProblem]) -> str:
    texts = list(dict.fromkeys(str(p) for p in problems))
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: Operator
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        value = labels.get(self.key)
        if op in ("=", "==", "in"):
            return value is not None and value in self.values
        if op in ("!=", "notin"):
            return value is None or value not in self.values
        if value is None or len(self.values) != 1:
            return False
        actual, bound = _as_int(value), _as_int(next(iter(self.values)))
        if actual is None or bound is None:
            return False
        return actual > bound if op == "gt" else actual < bound

    def __str__(self) -> str:
        op = self.operator
        if op == "exists":
            return self.key
        if op == "!":
            return f"!{self.key}"
        values = ",".join(sorted(self.values))
        if op in ("in", "notin"):
            return f"{self.key} {op} ({values})"
        symbol = {"gt": ">", "lt": "<"}.get(op, op)
        return f"{self.key}{symbol}{values}"


_INT_RE = re.compile(r"[+-]?[0-9]+")


def _as_int(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``: optional sign, decimal digits, 64-bit range."""
    if not _INT_RE.fullmatch(text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


def requirement_problems(
    key: str, operator: str, values: Sequence[str], path: str = ""
) -> list[FieldProblem]:
    """Every reason ``NewRequirement(key, operator, values)`` would refuse, in upstream order."""

    def at(child: str) -> str:
        return f"{path}.{child}" if path else child

    problems: list[FieldProblem] = []
    key_errors = label_key_errors(key)
    if key_errors:
        problems.append(FieldProblem(at("key"), "Invalid value", key, "; ".join(key_errors)))
    values_path = at("values")
    listed = list(values)
    wrong: str | None = None
    if operator in ("in", "notin"):
        wrong = None if listed else "for 'in', 'notin' operators, values set can't be empty"
    elif operator in _EXACT:
        wrong = None if len(listed) == 1 else "exact-match compatibility requires one single value"
    elif operator in ("exists", "!"):
        wrong = "values set must be empty for exists and does not exist" if listed else None
    elif operator in ("gt", "lt"):
        wrong = (None if len(listed) == 1
                 else "for 'Gt', 'Lt' operators, exactly one value is required")
    if wrong is not None:
        problems.append(FieldProblem(values_path, "Invalid value", listed, wrong))
    if operator in ("gt", "lt"):
        for i, value in enumerate(listed):
            if _as_int(value) is None:
                problems.append(
                    FieldProblem(
                        f"{values_path}[{i}]",
                        "Invalid value",
                        value,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )
                )
    elif operator not in ("in", "notin", "exists", "!") and operator not in _EXACT:
        supported = ", ".join(json.dumps(o) for o in _ALL_OPERATORS)
        problems.append(
            FieldProblem(
                at("operator"), "Unsupported value", operator, f"supported values: {supported}"
            )
        )
    for i, value in enumerate(listed):
        value_errors = label_value_errors(value)
        if value_errors:
            problems.append(
                FieldProblem(
                    f"{values_path}[{i}][{key}]", "Invalid value", value, "; ".join(value_errors)
                )
            )
    return problems


def new_requirement(key: str, operator: str, values: Sequence[str] = ()) -> Requirement:
    """A checked requirement, or :class:`SelectorError` listing every problem (NewRequirement)."""
    problems = requirement_problems(key, operator, values)
    if problems:
        raise SelectorError(_aggregate(problems), problems)
    op: Operator = next(o for o in _ALL_OPERATORS if o == operator)
    return Requirement(key, op, frozenset(values))


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements; the empty selector matches everything.

    ``nothing`` is upstream's ``labels.Nothing()``: it matches no labels and prints as "".
    """

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.nothing and not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


MATCH_NOTHING = Selector(nothing=True)
"""What a nil ``LabelSelector`` means where upstream treats nil as 'selects nothing'."""


def _sorted(requirements: Sequence[Requirement]) -> Selector:
    return Selector(tuple(sorted(requirements, key=lambda r: r.key)))


# --- The query-string form ---------------------------------------------------------------------

_Token = Literal["end", "ident", ",", "!", "=", "==", "!=", "(", ")", ">", "<", "in", "notin"]
_SPECIAL = "=!(),><"
_SPACE = " \t\r\n"
_SYMBOLS: frozenset[str] = frozenset({"=", "==", "!=", "!", "(", ")", ",", ">", "<"})


def _lex(text: str) -> list[tuple[_Token, str]]:
    """Every token of ``text`` and a final ``end``; symbols are read longest first."""
    tokens: list[tuple[_Token, str]] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in _SPACE:
            pos += 1
        if pos >= n or text[pos] == "\0":
            tokens.append(("end", ""))
            return tokens
        if text[pos] in _SPECIAL:
            end = pos + 1
            while end < n and text[end] in _SPECIAL and text[pos : end + 1] in _SYMBOLS:
                end += 1
            symbol = text[pos:end]
            tokens.append((cast(_Token, symbol), symbol))
            pos = end
            continue
        start = pos
        while pos < n and text[pos] not in _SPECIAL and text[pos] not in _SPACE:
            if text[pos] == "\0":
                break
            pos += 1
        word = text[start:pos]
        tokens.append((cast(_Token, word) if word in ("in", "notin") else "ident", word))


class _Parser:
    """Upstream's recursive descent over the token list; ``in``/``notin`` read as values where
    a value or key is expected."""

    def __init__(self, text: str) -> None:
        self.tokens = _lex(text)
        self.pos = 0

    def peek(self, values: bool = True) -> tuple[_Token, str]:
        return self._read(self.tokens[self.pos], values)

    def take(self, values: bool = True) -> tuple[_Token, str]:
        token = self.tokens[self.pos]
        self.pos += 1
        return self._read(token, values)

    @staticmethod
    def _read(token: tuple[_Token, str], values: bool) -> tuple[_Token, str]:
        if values and token[0] in ("in", "notin"):
            return "ident", token[1]
        return token

    def selector(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            tok, lit = self.peek()
            if tok == "end":
                return requirements
            if tok not in ("ident", "!"):
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self.requirement())
            except SelectorError as e:
                raise SelectorError(f"unable to parse requirement: {e}", e.problems) from e
            tok, lit = self.take()
            if tok == "end":
                return requirements
            if tok != ",":
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            tok, lit = self.peek()
            if tok not in ("ident", "!"):
                raise SelectorError(f"found '{lit}', expected: identifier after ','")

    def requirement(self) -> Requirement:
        negated = False
        tok, key = self.take()
        if tok == "!":
            negated = True
            tok, key = self.take()
        if tok != "ident":
            raise SelectorError(f"found '{key}', expected: identifier")
        key_errors = label_key_errors(key)
        if key_errors:
            problem = FieldProblem("<nil>", "Invalid value", key, "; ".join(key_errors))
            raise SelectorError(str(problem), (problem,))
        if negated:
            return new_requirement(key, "!")
        if self.peek()[0] in ("end", ","):
            return new_requirement(key, "exists")
        tok, lit = self.take(values=False)
        operators: dict[str, Operator] = {
            "in": "in",
            "notin": "notin",
            "=": "=",
            "==": "==",
            "!=": "!=",
            ">": "gt",
            "<": "lt",
        }
        if tok not in operators:
            raise SelectorError(f"found '{lit}', expected: {', '.join(_BINARY)}")
        op = operators[tok]
        values = self.value_set() if op in ("in", "notin") else self.exact_value()
        return new_requirement(key, op, sorted(values))

    def value_set(self) -> set[str]:
        tok, lit = self.take()
        if tok != "(":
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self.peek()
        if tok == ")":
            self.take()
            return {""}
        if tok not in ("ident", ","):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        values = self.identifiers()
        if self.take()[0] != ")":
            raise SelectorError(f"found '{lit}', expected: ')'")
        return values

    def identifiers(self) -> set[str]:
        values: set[str] = set()
        while True:
            tok, lit = self.take()
            if tok == "ident":
                values.add(lit)
                after, after_lit = self.peek()
                if after == ")":
                    return values
                if after != ",":
                    raise SelectorError(f"found '{after_lit}', expected: ',' or ')'")
            elif tok == ",":
                if not values:
                    values.add("")
                after = self.peek()[0]
                if after == ")":
                    values.add("")
                    return values
                if after == ",":
                    values.add("")
            else:
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        if self.peek()[0] in ("end", ","):
            return {""}
        tok, lit = self.take()
        if tok == "ident":
            return {lit}
        raise SelectorError(f"found '{lit}', expected: identifier")


def parse(text: str | None) -> Selector:
    """Parse the query-string form, e.g. ``app=web,tier in (a,b),!legacy``."""
    if text is None:
        return Selector()
    return _sorted(_Parser(text).selector())


# --- The structured form (metav1.LabelSelector) ------------------------------------------------

_STRUCT_OPS: dict[str, Operator] = {
    "In": "in",
    "NotIn": "notin",
    "Exists": "exists",
    "DoesNotExist": "!",
}


def from_label_selector(selector: Mapping[str, Any] | None) -> Selector:
    """Compile a ``metav1.LabelSelector`` as ``LabelSelectorAsSelector`` does: ``None`` selects
    nothing, ``{}`` selects everything, a bad requirement raises :class:`SelectorError`."""
    if selector is None:
        return MATCH_NOTHING
    labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(labels, Mapping) or not isinstance(expressions, list):
        raise SelectorError("matchLabels must be an object and matchExpressions a list")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        raise SelectorError("matchLabels keys and values must be strings")
    requirements = [new_requirement(k, "=", [v]) for k, v in sorted(labels.items())]
    for expr in expressions:
        operator = expr.get("operator") if isinstance(expr, Mapping) else None
        if operator not in _STRUCT_OPS:
            raise SelectorError(f"{json.dumps(operator)} is not a valid label selector operator")
        values = expr.get("values") or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise SelectorError("matchExpressions values must be a list of strings")
        if not isinstance(expr.get("key") or "", str):
            raise SelectorError("matchExpressions keys must be strings")
        requirements.append(new_requirement(expr.get("key") or "", _STRUCT_OPS[operator], values))
    return _sorted(requirements)


def validate_label_selector(selector: Mapping[str, Any], path: str = "") -> list[tuple[str, str]]:
    """Every problem in a ``LabelSelector`` as ``(field path, detail)`` in the wording of
    upstream's ``ValidateLabelSelector``; never raises."""
    errors: list[tuple[str, str]] = []
    base = f"{path}." if path else ""
    if not isinstance(selector, Mapping):
        return [(path or "selector", "must be an object")]
    labels = selector.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        errors.append((f"{base}matchLabels", "must be an object"))
        labels = {}
    for k, v in labels.items():
        key_errors = label_key_errors(k) if isinstance(k, str) else ["must be a string"]
        errors.extend((f"{base}matchLabels", m) for m in key_errors)
        value_errors = label_value_errors(v) if isinstance(v, str) else ["must be a string"]
        errors.extend((f"{base}matchLabels", m) for m in value_errors)
    exprs = selector.get("matchExpressions") or []
    if not isinstance(exprs, list):
        return [*errors, (f"{base}matchExpressions", "must be a list")]
    for i, expr in enumerate(exprs):
        p = f"{base}matchExpressions[{i}]"
        if not isinstance(expr, Mapping):
            errors.append((p, "must be an object"))
            continue
        key = expr.get("key")
        op = expr.get("operator")
        values = expr.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                errors.append(
                    (f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'")
                )
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errors.append(
                    (
                        f"{p}.values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            errors.append((f"{p}.operator", "not a valid selector operator"))
        key_errors = label_key_errors(key) if isinstance(key, str) else ["must be a string"]
        errors.extend((f"{p}.key", m) for m in key_errors)
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            errors.append((f"{p}.values", "must be a list of strings"))
            continue
        for j, value in enumerate(values):
            errors.extend((f"{p}.values[{j}]", m) for m in label_value_errors(value))
    return errors


def matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """Whether a structured ``LabelSelector`` selects ``labels`` (nil selects nothing)."""
    return from_label_selector(selector).matches(labels)


def to_string(selector: Selector) -> str:
    """The query-string form of a selector (what ``kubectl`` would send)."""
    return str(selector)
