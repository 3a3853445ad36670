"""Kubernetes name and label-value checks, returning apimachinery's exact messages.

Field validation quotes these messages verbatim (``IsQualifiedName``, ``IsValidLabelValue``,
``IsDNS1123Subdomain``), including their odd double spaces before ``or``, so users see the text
kubectl would show them. The actuator checks every name a plan would put into a URL with the same
functions (``IsDNS1123Label`` for namespaces, ``IsDNS1123Subdomain`` for object names,
``IsValidPathSegmentName`` for any path segment).
"""

from __future__ import annotations

import re

_QNAME_CHAR = "[A-Za-z0-9]"
_QNAME_EXT = "[-A-Za-z0-9_.]"
QUALIFIED_NAME_FMT = f"({_QNAME_CHAR}{_QNAME_EXT}*)?{_QNAME_CHAR}"
_QUALIFIED_NAME_ERR = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
LABEL_VALUE_FMT = f"({QUALIFIED_NAME_FMT})?"
_LABEL_VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_ERR = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character"
)
DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_ERR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)

# ``\Z``, not ``$``: Python's ``$`` also matches before a final newline, Go's does not.
_QUALIFIED_NAME_RE = re.compile(f"^{QUALIFIED_NAME_FMT}\\Z")
_LABEL_VALUE_RE = re.compile(f"^{LABEL_VALUE_FMT}\\Z")
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{DNS1123_SUBDOMAIN_FMT}\\Z")
_DNS1123_LABEL_RE = re.compile(f"^{_DNS1123_LABEL_FMT}\\Z")


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """apimachinery's ``RegexError`` text, examples joined exactly as Go joins them."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    text = f"{message} (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            text += " or "
        text += f"'{example}', "
    return f"{text}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def is_dns1123_label(value: str) -> list[str]:
    """``IsDNS1123Label``: at most 63 characters, lower-case alphanumerics and inner ``-``."""
    errors: list[str] = []
    if len(value) > 63:
        errors.append(max_len_error(63))
    if not _DNS1123_LABEL_RE.match(value):
        errors.append(regex_error(_DNS1123_LABEL_ERR, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errors


def is_dns1123_subdomain(value: str) -> list[str]:
    errors: list[str] = []
    if len(value) > 253:
        errors.append(max_len_error(253))
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errors.append(regex_error(_DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


def is_qualified_name(value: str) -> list[str]:
    """``IsQualifiedName``: an optional DNS-subdomain prefix, ``/``, and a 63-character name."""
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend(f"prefix part {msg}" for msg in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + regex_error(_QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part " + max_len_error(63))
    if name and not _QUALIFIED_NAME_RE.match(name):
        errors.append(
            "name part "
            + regex_error(_QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errors


def is_valid_label_value(value: str) -> list[str]:
    errors: list[str] = []
    if len(value) > 63:
        errors.append(max_len_error(63))
    if not _LABEL_VALUE_RE.match(value):
        errors.append(
            regex_error(_LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errors


def is_valid_path_segment_name(value: str) -> list[str]:
    """``IsValidPathSegmentName``: what any name placed in an API path must be, whatever its kind.

    ``.`` and ``..`` would move the path up when a client or server normalizes it; ``/`` and
    ``%`` would split or re-encode it once the server decodes the path.
    """
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]
