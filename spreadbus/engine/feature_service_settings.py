"""The settings of a service that runs features: its own fields plus those of its features.

The fields are composed when the settings are loaded (:func:`spreadbus.engine.feature_settings.
compose`), since the plugins are only known then. A service names itself (``service``, the name
features' :class:`~spreadbus.engine.feature_settings.UsedBy` uses) and the features it is built
with (``builtin``, the registry's list).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, ClassVar, Self, cast

from pydantic import field_validator
from pydantic_core import PydanticCustomError

from spreadbus.engine.feature import Feature
from spreadbus.engine.feature_plugins import PluginError, with_plugins
from spreadbus.engine.feature_settings import FeatureSettings, SettingsClash, compose, settings_for
from spreadbus.runtime.settings import ServiceSettings


class FeatureServiceSettings(ServiceSettings):
    """Settings of a service that runs features: loaded with the fields of those it uses."""

    service: ClassVar[str] = ""
    """The name features' settings use for this service (``UsedBy``)."""
    builtin: ClassVar[tuple[Feature[Any], ...]] = ()
    """The features the service runs before any plugin."""

    @classmethod
    def with_plugins(cls, plugins: Sequence[str]) -> type[Self]:
        return cast("type[Self]", _composed(cls, tuple(plugins)))

    @field_validator("feature_plugins")
    @classmethod
    def _plugins_usable(cls, plugins: tuple[str, ...]) -> tuple[str, ...]:
        try:
            compose(_declared(cls), cls.service, with_plugins(cls.builtin, plugins))
        except (PluginError, SettingsClash) as exc:
            raise PydanticCustomError("feature_plugins", "{problem}",
                                      {"problem": str(exc)}) from exc
        return plugins

    def features(self) -> tuple[Feature[Any], ...]:
        """The features this service runs, built-in ones first."""
        return with_plugins(self.builtin, self.feature_plugins)

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
        return compose(cls, cls.service, with_plugins(cls.builtin, plugins))
    except (PluginError, SettingsClash):
        # Loaded with the built-in features; the feature_plugins field reports the problem.
        return compose(cls, cls.service, cls.builtin)
