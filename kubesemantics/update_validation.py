"""An UPDATE's stored object, as a validating webhook receives it in ``oldObject``.

Both kinds with update rules (WorkloadSpread's immutable target, UnitedDeployment's immutable
selector) check the new object against the old one only when the old one is an object; anything
else in ``oldObject`` is itself the error, named there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubesemantics.field_errors import FieldError, Path
from kubesemantics.scheduling_validation import type_error

UpdateRules = Callable[[Mapping[str, Any], Mapping[str, Any]], list[FieldError]]


def old_object_errors(obj: Mapping[str, Any], old: object,
                      update_errors: UpdateRules) -> list[FieldError]:
    """``update_errors(obj, old)``; none for a CREATE (``old`` is ``None``)."""
    if old is None:
        return []
    if isinstance(old, Mapping):
        return update_errors(obj, old)
    return [type_error(Path("oldObject"), "object", old)]
