"""The features this build runs, in registry order; adding a capability is one line here.

Order matters where features share an admission path: their handlers run, and their patches
compose, in this order (:mod:`spreadbus.engine.admission_chain`).

A deployment may add features of its own without changing spreadbus: every service takes
``--feature-plugins module:attribute,...`` (``SPREADBUS_FEATURE_PLUGINS``), each naming a
:class:`~spreadbus.engine.feature.Feature`, which run after the built-in ones.

The settings of a service that runs features are :class:`FeatureServiceSettings`: its own fields
plus those of the features it runs, composed when the settings are loaded, since the plugins
are only known then (:mod:`spreadbus.engine.feature_settings`).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final, Self, cast

from pydantic import field_validator
from pydantic_core import PydanticCustomError

from spreadbus.engine.bus_access import BusAccess
from spreadbus.engine.feature import Feature
from spreadbus.engine.feature_settings import FeatureSettings, SettingsClash, compose, settings_for
from spreadbus.engine.plan_grants import PlanGrant
from spreadbus.features.podunavailablebudget.feature import FEATURE as PODUNAVAILABLEBUDGET
from spreadbus.features.uniteddeployment.feature import FEATURE as UNITEDDEPLOYMENT
from spreadbus.features.workloadrebalancer.feature import FEATURE as WORKLOADREBALANCER
from spreadbus.features.workloadspread.feature import FEATURE as WORKLOADSPREAD
from spreadbus.runtime.settings import ServiceSettings

BUILTIN: Final[tuple[Feature[Any], ...]] = (
    WORKLOADSPREAD,
    UNITEDDEPLOYMENT,
    PODUNAVAILABLEBUDGET,
    WORKLOADREBALANCER,
)


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


def features(plugins: Sequence[str] = ()) -> tuple[Feature[Any], ...]:
    """The built-in features and the plugins, in that order; names must be unique."""
    chosen = [*BUILTIN, *(load_plugin(entry) for entry in plugins)]
    names = [f.name for f in chosen]
    if duplicate := next((n for n in names if names.count(n) > 1), None):
        raise PluginError(f"feature {duplicate!r} registered twice")
    return tuple(chosen)


def watched_resources(chosen: Sequence[Feature[Any]]) -> tuple[str, ...]:
    """Every resource the features watch, each once, in registry order."""
    return tuple(dict.fromkeys(r for f in chosen for r in f.watches))


def bus_accesses(chosen: Sequence[Feature[Any]]) -> tuple[Mapping[str, BusAccess], ...]:
    """What each feature does on NATS, by service, in registry order."""
    return tuple(f.bus for f in chosen)


def plan_grants(chosen: Sequence[Feature[Any]]) -> tuple[PlanGrant, ...]:
    """Every kind of plan the features' rules may emit, in registry order."""
    return tuple(g for f in chosen for g in f.plan_grants)


class FeatureServiceSettings(ServiceSettings):
    """Settings of a service that runs features: loaded with the fields of those it uses."""

    service: ClassVar[str] = ""
    """The name features' settings use for this service (``UsedBy``)."""

    @classmethod
    def with_plugins(cls, plugins: Sequence[str]) -> type[Self]:
        return cast("type[Self]", _composed(cls, tuple(plugins)))

    @field_validator("feature_plugins")
    @classmethod
    def _plugins_usable(cls, plugins: tuple[str, ...]) -> tuple[str, ...]:
        try:
            compose(_declared(cls), cls.service, features(plugins))
        except (PluginError, SettingsClash) as exc:
            raise PydanticCustomError("feature_plugins", "{problem}",
                                      {"problem": str(exc)}) from exc
        return plugins

    def features(self) -> tuple[Feature[Any], ...]:
        """The features this service runs, built-in ones first."""
        return features(self.feature_plugins)

    def settings_of(self, feature: Feature[Any]) -> FeatureSettings:
        """A feature's own settings, from what this service loaded."""
        return settings_for(feature, self)


def _declared(cls: type[FeatureServiceSettings]) -> type[FeatureServiceSettings]:
    """The service's own class, under the one composed from it (which declares no ``service``)."""
    return next(c for c in cls.__mro__
                if "service" in vars(c) and issubclass(c, FeatureServiceSettings))


@functools.cache
def _composed(cls: type[FeatureServiceSettings],
              plugins: tuple[str, ...]) -> type[FeatureServiceSettings]:
    """One class per service and plugins, so that two loads compare equal."""
    try:
        return compose(cls, cls.service, features(plugins))
    except (PluginError, SettingsClash):
        # Loaded with the built-in features; the feature_plugins field reports the problem.
        return compose(cls, cls.service, BUILTIN)
