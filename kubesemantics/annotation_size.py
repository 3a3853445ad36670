"""The API server's limit on the annotations of one object, counted as it counts them.

``ValidateAnnotationsSize`` adds up the bytes of every key and value (Go's ``len``, so UTF-8
bytes, not characters) and refuses an object whose total is above 256 KiB with a TooLong error.
Validations use it for the objects spreadbus writes from what a user gives (a subset's pods, a
subset's workload), so a value that would make every such write fail is refused up front.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from kubesemantics.field_errors import FieldError, Path, too_long

TOTAL_ANNOTATION_SIZE_LIMIT: Final = 256 * 1024
"""Bytes of annotation keys and values one object may carry."""


def annotations_size(annotations: Mapping[str, object]) -> int:
    """Bytes of every key and string value; a value of another JSON type counts as nothing
    (its type error is reported by the caller's own check)."""
    size = 0
    for key, value in annotations.items():
        size += len(key.encode("utf-8", "surrogatepass"))
        if isinstance(value, str):
            size += len(value.encode("utf-8", "surrogatepass"))
    return size


def annotations_size_errors(size: int, path: Path) -> list[FieldError]:
    """The API server's error for annotations of ``size`` bytes, if it refuses them."""
    if size <= TOTAL_ANNOTATION_SIZE_LIMIT:
        return []
    return [too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT)]
