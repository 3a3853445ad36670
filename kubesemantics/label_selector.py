"""Kubernetes label selectors: the query-string form and the structured ``LabelSelector`` form.

Both forms compile to one :class:`Selector` (a conjunction of :class:`Requirement`), so the API
simulator's ``?labelSelector=`` filter, a PodDisruptionBudget's ``spec.selector`` and a
WorkloadSpread's ``namespaceSelector`` all match by the same rules. Parsing follows the upstream
grammar (``k8s.io/apimachinery/pkg/labels``): ``=``/``==``/``!=``, ``in``/``notin`` with a
parenthesised value set, ``key`` (exists) and ``!key`` (does not exist). ``!=`` and ``notin``
match objects that lack the key, as upstream does. Errors raise :class:`SelectorError` with a
message in the upstream wording so an API layer can pass it on in a 400 ``Status``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Operator = Literal["in", "notin", "exists", "!", "=", "!="]

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_KEY_RE = re.compile(
    rf"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{_NAME}$"
)
_VALUE_RE = re.compile(rf"^({_NAME})?$")


class SelectorError(ValueError):
    """A selector that cannot be parsed or is invalid."""


def is_valid_key(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    return bool(_KEY_RE.match(key)) and len(prefix) <= 253 and len(name) <= 63


def is_valid_value(value: str) -> bool:
    return len(value) <= 63 and bool(_VALUE_RE.match(value))


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
        if op in ("=", "in"):
            return value is not None and value in self.values
        # "!=" and "notin" also match objects without the key.
        return value is None or value not in self.values


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


MATCH_NOTHING = Selector((Requirement("", "in", frozenset()),))
"""What a nil ``LabelSelector`` means where upstream treats nil as 'selects nothing'."""

_TOKEN_RE = re.compile(r"\s*(==|!=|=|\(|\)|,|!|[^\s=!(),]+)")


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            break
        if m.end() == pos:
            break
        out.append(m.group(1))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


def _check_key(key: str) -> None:
    if not is_valid_key(key):
        raise SelectorError(
            f"unable to parse requirement: invalid label key {key!r}: name part must consist of "
            "alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character"
        )


def _check_value(value: str) -> None:
    if not is_valid_value(value):
        raise SelectorError(
            f"unable to parse requirement: invalid label value: {value!r}: a valid label must be "
            "an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character"
        )


def parse(text: str | None) -> Selector:
    """Parse the query-string form, e.g. ``app=web,tier in (a,b),!legacy``."""
    if text is None or not text.strip():
        return Selector()
    toks = _tokens(text)
    reqs: list[Requirement] = []
    i = 0
    n = len(toks)

    def expect(cond: bool, what: str) -> None:
        if not cond:
            raise SelectorError(f"unable to parse requirement: found {what!r}, expected: {text!r}")

    while i < n:
        if toks[i] == "!":
            expect(i + 1 < n, "end of string")
            key = toks[i + 1]
            _check_key(key)
            reqs.append(Requirement(key, "!"))
            i += 2
        else:
            key = toks[i]
            expect(key not in ("=", "==", "!=", "(", ")", ","), key)
            _check_key(key)
            i += 1
            if i >= n or toks[i] == ",":
                reqs.append(Requirement(key, "exists"))
            elif toks[i] in ("=", "==", "!="):
                op: Operator = "!=" if toks[i] == "!=" else "="
                i += 1
                value = ""
                if i < n and toks[i] not in (",", "(", ")", "=", "==", "!="):
                    value = toks[i]
                    i += 1
                _check_value(value)
                reqs.append(Requirement(key, op, frozenset((value,))))
            elif toks[i].lower() in ("in", "notin"):
                op = "in" if toks[i].lower() == "in" else "notin"
                i += 1
                expect(i < n and toks[i] == "(", toks[i] if i < n else "end of string")
                i += 1
                values: list[str] = []
                expect_value = True
                while i < n and toks[i] != ")":
                    if toks[i] == ",":
                        if expect_value:
                            values.append("")
                        expect_value = True
                    else:
                        expect(expect_value, toks[i])
                        _check_value(toks[i])
                        values.append(toks[i])
                        expect_value = False
                    i += 1
                expect(i < n, "end of string")
                if expect_value and values:
                    values.append("")
                if op == "in" and not values:
                    raise SelectorError("for 'in', 'notin' operators, values set can't be empty")
                i += 1
                reqs.append(Requirement(key, op, frozenset(values)))
            else:
                raise SelectorError(
                    f"unable to parse requirement: found {toks[i]!r}, expected: "
                    "in, notin, =, ==, !=, gt, lt"
                )
        if i < n:
            expect(toks[i] == ",", toks[i])
            i += 1
            expect(i < n, "end of string")
    return Selector(tuple(reqs))


_STRUCT_OPS: dict[str, Operator] = {
    "In": "in",
    "NotIn": "notin",
    "Exists": "exists",
    "DoesNotExist": "!",
}


def from_label_selector(selector: Mapping[str, Any] | None) -> Selector:
    """Compile a ``metav1.LabelSelector``; ``None`` selects nothing, ``{}`` selects everything."""
    if selector is None:
        return MATCH_NOTHING
    errors = validate_label_selector(selector)
    if errors:
        raise SelectorError("; ".join(f"{path}: {msg}" for path, msg in errors))
    reqs = [
        Requirement(k, "=", frozenset((v,)))
        for k, v in sorted((selector.get("matchLabels") or {}).items())
    ]
    for expr in selector.get("matchExpressions") or []:
        reqs.append(
            Requirement(
                expr["key"], _STRUCT_OPS[expr["operator"]], frozenset(expr.get("values") or ())
            )
        )
    return Selector(tuple(reqs))


def validate_label_selector(selector: Mapping[str, Any], path: str = "") -> list[tuple[str, str]]:
    """Every problem in a ``LabelSelector`` as ``(field path, message)``; never raises."""
    errors: list[tuple[str, str]] = []
    base = f"{path}." if path else ""
    if not isinstance(selector, Mapping):
        return [(path or "selector", "must be an object")]
    labels = selector.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        errors.append((f"{base}matchLabels", "must be an object"))
        labels = {}
    for k, v in labels.items():
        if not isinstance(k, str) or not is_valid_key(k):
            errors.append((f"{base}matchLabels", f"Invalid value: {k!r}: invalid label key"))
        if not isinstance(v, str) or not is_valid_value(v):
            errors.append((f"{base}matchLabels", f"Invalid value: {v!r}: invalid label value"))
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
        if not isinstance(key, str) or not is_valid_key(key):
            errors.append((f"{p}.key", f"Invalid value: {key!r}: invalid label key"))
        if op not in _STRUCT_OPS:
            errors.append(
                (
                    f"{p}.operator",
                    f'Unsupported value: {op!r}: supported values: "DoesNotExist", "Exists", '
                    '"In", "NotIn"',
                )
            )
        elif op in ("In", "NotIn") and not values:
            errors.append(
                (
                    f"{p}.values",
                    "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                )
            )
        elif op in ("Exists", "DoesNotExist") and values:
            errors.append(
                (
                    f"{p}.values",
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            errors.append((f"{p}.values", "must be a list of strings"))
    return errors


def matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """Whether a structured ``LabelSelector`` selects ``labels`` (nil selects nothing)."""
    return from_label_selector(selector).matches(labels)


def to_string(selector: Selector) -> str:
    """The query-string form of a selector (what ``kubectl`` would send)."""
    parts: list[str] = []
    for r in selector.requirements:
        if r.operator == "exists":
            parts.append(r.key)
        elif r.operator == "!":
            parts.append(f"!{r.key}")
        elif r.operator in ("=", "!="):
            parts.append(f"{r.key}{r.operator}{next(iter(r.values))}")
        else:
            parts.append(f"{r.key} {r.operator} ({','.join(sorted(r.values))})")
    return ",".join(parts)
