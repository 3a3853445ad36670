"""The UnitedDeployment answer of ``spreadbus validate``: the defaulting webhook, then validation.

A UnitedDeployment is defaulted as Kruise's mutating webhook would on a CREATE (an UPDATE from
``old``), and the defaulted object is validated as the validating webhook would see it. The other
objects of the input are not read: a UnitedDeployment's validity depends on itself alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spreadbus.engine.feature import OfflineValidation
from spreadbus.features.uniteddeployment.core.defaulting import default_uniteddeployment
from spreadbus.features.uniteddeployment.core.validation import validate_uniteddeployment


def validate_offline(obj: dict[str, Any], *, old: dict[str, Any] | None,
                     context: Sequence[dict[str, Any]]) -> OfflineValidation:
    defaulted = default_uniteddeployment(obj, old=old)
    errors = validate_uniteddeployment(defaulted, old=old)
    return OfflineValidation(errors=errors, defaulted=defaulted)
