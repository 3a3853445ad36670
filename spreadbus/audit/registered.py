"""The audit schema of the features this build registers, read through the registry.

The audit names no feature: its schema is made of the features it is given
(:meth:`spreadbus.audit.schema.AuditSchema.of`). The registry is the one door to them
(import-linter holds that ``spreadbus.audit`` imports no other module of
``spreadbus.features``); it is read here, on first use, rather than passed down by every
caller, so that a database, ``why`` and ``audit serve`` agree on the tables whoever opens them.
A caller with other features (a plugin's) passes its own schema.
"""

from __future__ import annotations

from functools import cache

from spreadbus.audit.schema import AuditSchema


@cache
def registered_schema() -> AuditSchema:
    from spreadbus.features.registry import BUILTIN

    return AuditSchema.of(BUILTIN)


def or_registered(schema: AuditSchema | None) -> AuditSchema:
    """``schema``, or the registered features' when none is given."""
    return registered_schema() if schema is None else schema
