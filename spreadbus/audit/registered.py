"""The audit schema of the features this build registers, read through the registry.

The audit names no feature: its schema is made of the features it is given
(:meth:`spreadbus.audit.schema.AuditSchema.of`). The registry is the one door to them
(import-linter holds that ``spreadbus.audit`` imports no other module of
``spreadbus.features``); it is read here, on first use, rather than passed down by every
caller, so that a database, ``why`` and ``audit serve`` agree on the tables whoever opens them.
A caller with other features (a plugin's) passes its own schema: :func:`schema_with`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from spreadbus.audit.schema import AuditSchema


@cache
def registered_schema() -> AuditSchema:
    from spreadbus.features.registry import BUILTIN

    return AuditSchema.of(BUILTIN)


def or_registered(schema: AuditSchema | None) -> AuditSchema:
    """``schema``, or the registered features' when none is given."""
    return registered_schema() if schema is None else schema


def schema_with(plugins: Sequence[str]) -> AuditSchema:
    """The registered features' schema with these feature plugins' parts (``--feature-plugins``
    of the audit commands); raises :class:`~spreadbus.engine.feature_plugins.PluginError` for a
    plugin that cannot be loaded."""
    if not plugins:
        return registered_schema()
    from spreadbus.features.registry import features

    return AuditSchema.of(features(plugins))
