"""Features a deployment adds without changing spreadbus: ``module:attribute`` entries.

Every service takes ``--feature-plugins module:attribute,...`` (``SPREADBUS_FEATURE_PLUGINS``),
each naming a :class:`~spreadbus.engine.feature.Feature`; they run after the built-in ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from spreadbus.engine.feature import Feature


class PluginError(ValueError):
    """A feature plugin that cannot be loaded; the message names the entry and why."""


def load_plugin(entry: str) -> Feature[Any]:
    module_name, _, attribute = entry.partition(":")
    if not module_name or not attribute:
        raise PluginError(f"{entry!r}: expected module:attribute")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PluginError(f"{entry!r}: {exc}") from exc
    feature = getattr(module, attribute, None)
    if not isinstance(feature, Feature):
        raise PluginError(f"{entry!r}: {attribute} is not a Feature")
    return feature


def with_plugins(builtin: Sequence[Feature[Any]],
                 plugins: Sequence[str]) -> tuple[Feature[Any], ...]:
    """The built-in features and the plugins, in that order; names must be unique."""
    chosen = [*builtin, *(load_plugin(entry) for entry in plugins)]
    names = [f.name for f in chosen]
    if duplicate := next((n for n in names if names.count(n) > 1), None):
        raise PluginError(f"feature {duplicate!r} registered twice")
    return tuple(chosen)
