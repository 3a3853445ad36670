"""The JSON name of a decoded value's type, for errors about input of the wrong type.

Input arrives as decoded JSON or YAML that nothing has type-checked yet; an error saying
``expected object, got array`` names the types as the document's author wrote them, not as Python
holds them (``list``, ``dict``). A value JSON cannot hold (YAML may decode a date) is named by its
Python type.

Signature::

    json_type(value: object) -> str    # "null", "boolean", "number", "string", "array", "object"
"""

from __future__ import annotations

from collections.abc import Mapping


def json_type(value: object) -> str:
    """``bool`` before ``int``: in Python every boolean is also an integer."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__
