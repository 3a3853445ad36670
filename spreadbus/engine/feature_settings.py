"""A feature's settings: one pydantic model per feature, spread over the services that use them.

A feature declares its settings as a :class:`FeatureSettings` model (``Feature.settings``);
each field carries :class:`UsedBy` naming the services that read it and a docstring, which
becomes its ``--help``. The settings are flags and ``SPREADBUS_*`` variables like the services'
own: :func:`compose` adds the fields a service uses to that service's settings class, so
``spreadbus planner --workload-whitelist`` and ``SPREADBUS_WORKLOAD_WHITELIST`` keep their names
whichever feature owns them. Field names are therefore one namespace: a name a service already
has, or that two of its features declare, is refused (:class:`SettingsClash`).

The feature's factories never see the service's settings: :func:`settings_for` builds the
feature's own model from them (a field the service does not use keeps its default), so a
feature reads typed fields of its own class.

A check of one value goes on the field's type (``Annotated[..., AfterValidator(...)]``), not on
the model: the field is moved onto service classes and takes its type along, the model's
validators stay behind.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, create_model
from pydantic.fields import FieldInfo

if TYPE_CHECKING:
    from spreadbus.engine.feature import Feature

M = TypeVar("M", bound=BaseModel)


class UsedBy:
    """Field metadata: the services (``watcher``, ``planner``, ``actuator``, ``webhook``) that
    read a feature setting, and so offer it as a flag."""

    __slots__ = ("services",)

    def __init__(self, *services: str) -> None:
        self.services = frozenset(services)

    def __repr__(self) -> str:
        return f"UsedBy({', '.join(sorted(self.services))})"


class FeatureSettings(BaseModel):
    """Base of every feature's settings; a feature without settings gets this, empty."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    def watches(self) -> tuple[str, ...]:
        """Resources the watcher must observe because of these settings, beyond the feature's
        ``watches`` (WorkloadSpread's whitelisted custom workloads)."""
        return ()


class SettingsClash(ValueError):
    """A feature setting whose name a service already has, or another of its features."""


def used_by(info: FieldInfo) -> frozenset[str]:
    return next((m.services for m in info.metadata if isinstance(m, UsedBy)), frozenset())


def service_fields(model: type[FeatureSettings], service: str) -> dict[str, FieldInfo]:
    """The fields of a feature's settings that ``service`` uses, in declaration order."""
    return {name: info for name, info in model.model_fields.items()
            if service in used_by(info)}


def compose(cls: type[M], service: str, chosen: Iterable[Feature[Any]]) -> type[M]:
    """``cls`` with the fields ``service`` uses of every chosen feature's settings.

    The result subclasses ``cls`` (same name, so error messages read the same); without such
    fields it is ``cls`` itself.
    """
    owner: dict[str, str] = {name: f"the {service}" for name in cls.model_fields}
    extra: dict[str, Any] = {}
    for feature in chosen:
        if feature.settings is None:
            continue
        for name, info in service_fields(feature.settings, service).items():
            if name in owner:
                raise SettingsClash(f"setting {name!r} of feature {feature.name!r} is already "
                                    f"a setting of {owner[name]}")
            owner[name] = f"feature {feature.name!r}"
            extra[name] = (info.annotation, info)
    if not extra:
        return cls
    composed = create_model(cls.__name__, __base__=cls, __module__=cls.__module__, **extra)
    composed.__doc__ = cls.__doc__
    return composed


def settings_for(feature: Feature[Any], settings: BaseModel) -> FeatureSettings:
    """The feature's own settings as a service loaded them; defaults for fields it does not use."""
    model = feature.settings or FeatureSettings
    offered = type(settings).model_fields
    return model.model_validate({name: getattr(settings, name) for name in model.model_fields
                                 if name in offered})
