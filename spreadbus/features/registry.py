"""The features this build runs, in registry order; adding a capability is one line here.

Order matters where features share an admission path: their handlers run, and their patches
compose, in this order (:mod:`spreadbus.engine.admission_chain`).

A deployment may add features of its own without changing spreadbus: every service takes
``--feature-plugins module:attribute,...`` (``SPREADBUS_FEATURE_PLUGINS``), each naming a
:class:`~spreadbus.engine.feature.Feature`, which run after the built-in ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Final

from spreadbus.engine.feature import Feature
from spreadbus.features.workloadspread.feature import FEATURE as WORKLOADSPREAD

BUILTIN: Final[tuple[Feature, ...]] = (WORKLOADSPREAD,)


class PluginError(ValueError):
    """A feature plugin that cannot be loaded; the message names the entry and why."""


def load_plugin(entry: str) -> Feature:
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


def features(plugins: Sequence[str] = ()) -> tuple[Feature, ...]:
    """The built-in features and the plugins, in that order; names must be unique."""
    chosen = [*BUILTIN, *(load_plugin(entry) for entry in plugins)]
    names = [f.name for f in chosen]
    if duplicate := next((n for n in names if names.count(n) > 1), None):
        raise PluginError(f"feature {duplicate!r} registered twice")
    return tuple(chosen)


def watched_resources(chosen: Sequence[Feature]) -> tuple[str, ...]:
    """Every resource the features watch, each once, in registry order."""
    return tuple(dict.fromkeys(r for f in chosen for r in f.watches))


def plan_targets(chosen: Sequence[Feature]) -> tuple[tuple[str, str, str], ...]:
    """Every (verb, group, resource) the features' rules may emit, each once."""
    return tuple(dict.fromkeys(t for f in chosen for t in f.plan_targets))
