"""Service settings from command-line flags and ``SPREADBUS_*`` environment variables.

A service declares its settings as one frozen pydantic-settings model (subclassing
:class:`ServiceSettings` for the shared NATS, HTTP, logging and Kubernetes fields; every field
has a docstring, which is its ``--help``). From it:

- :func:`add_settings_arguments` adds one ``--flag-name`` per field to an ``argparse`` parser;
- :func:`load_settings` builds the model: a flag given on the command line wins, then
  ``SPREADBUS_FLAG_NAME`` from the environment (pydantic-settings' environment source), then the
  field's default. List fields (:data:`CommaList`) read a comma-separated string; numbers and
  booleans are converted by pydantic.

A service's settings class may grow at load time: :meth:`ServiceSettings.with_plugins` returns
the class to load for the feature plugins asked for, which the services override to add the
fields of the features they run (:mod:`spreadbus.engine.feature_service_settings`). The plugins
are therefore read first, from the flag or the variable, and the rest is loaded into the class
they give.

Loading never raises on bad input: it returns every problem with the flag or variable that
caused it and pydantic's message, so a service can print all of them at once and exit 2.

Signatures::

    add_settings_arguments(parser: argparse.ArgumentParser, cls: type[ServiceSettings],
                           argv: Sequence[str] | None = None,
                           env: Mapping[str, str] | None = None) -> None
    load_settings(cls: type[S], args: argparse.Namespace | None = None,
                  env: Mapping[str, str] | None = None) -> S | list[SettingError]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Collection, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, Self, TypeVar

from pydantic import BeforeValidator, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

ENV_PREFIX = "SPREADBUS_"


def split_commas(value: object) -> object:
    """A comma-separated text as its non-empty parts; anything else is left to pydantic."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


class CommaSeparated:
    """Marks a list setting read from one comma-separated flag or variable (for ``--help``)."""


CommaList = Annotated[tuple[str, ...], NoDecode, BeforeValidator(split_commas), CommaSeparated()]
"""A list setting: ``a,b`` on the command line or in the environment, a tuple in Python."""

_ENVIRON: ContextVar[Mapping[str, str] | None] = ContextVar("spreadbus_settings_environ",
                                                            default=None)
"""The environment :func:`load_settings` was handed, read by the environment source."""


class ServiceSettings(BaseSettings):
    """Settings every service shares."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, frozen=True, extra="forbid", use_attribute_docstrings=True
    )

    nats_url: CommaList = ("nats://127.0.0.1:4222",)
    """NATS server URLs; the client tries each and reconnects forever."""
    nats_creds: str = ""
    """Path of a NATS credentials (JWT + nkey seed) file."""
    nats_nkey_seed: str = ""
    """Path of an nkey seed file."""
    nats_tls_ca: str = ""
    """Path of the CA bundle that signed the NATS servers' certificates."""
    nats_tls_cert: str = ""
    """Path of this client's certificate, for servers that verify clients."""
    nats_tls_key: str = ""
    """Path of the key of ``--nats-tls-cert``."""
    nats_name: str = ""
    """Client name shown by the server; defaults to the service name."""
    nats_user: str = ""
    """The bus user this service connects as, whose inbox its replies arrive on; defaults to
    the service name (a member cluster's services are ``<member>-<service>``)."""
    http_host: str = "0.0.0.0"
    """Address of /healthz, /readyz and /metrics."""
    http_port: int = 8080
    """Port of /healthz, /readyz and /metrics; 0 picks a free one."""
    log_level: str = "INFO"
    """Lowest level of the JSON log lines written to standard error."""
    cluster: str = "local"
    """Name of the Kubernetes cluster this service watches or acts on."""
    kubeconfig: str = ""
    """Path of a kubeconfig; empty means in-cluster configuration, else ~/.kube/config."""
    kube_context: str = ""
    """Context of the kubeconfig to use; empty: its current context."""
    feature_plugins: CommaList = ()
    """More features to run beside the built-in ones, each ``module:attribute`` naming a
    Feature (see spreadbus.engine.feature_plugins)."""

    @classmethod
    def with_plugins(cls, plugins: Sequence[str]) -> type[Self]:
        """The class to load when these feature plugins are asked for.

        Shared settings run no feature, so they are loaded as they are; a service that runs
        features returns a subclass with their fields. Never raises: a plugin that cannot be
        used is reported by the ``feature_plugins`` field's validation.
        """
        return cls

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Flags (handed in as keyword arguments), then the environment; no files."""
        environ = _ENVIRON.get()
        if environ is not None and isinstance(env_settings, EnvSettingsSource):
            # The source matches names case-insensitively, on lower-cased keys.
            env_settings.env_vars = {key.lower(): value for key, value in environ.items()}
        return init_settings, env_settings


S = TypeVar("S", bound=ServiceSettings)


@dataclass(frozen=True)
class SettingError:
    """One bad setting: which field, where its value came from, and why it is wrong."""

    field: str
    source: str
    """The flag or variable as the user wrote it, or ``default``."""
    message: str

    def __str__(self) -> str:
        return f"{self.field} (from {self.source}): {self.message}"


def flag_name(field: str) -> str:
    return "--" + field.replace("_", "-")


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()


def _is_comma_list(info: FieldInfo) -> bool:
    return any(isinstance(m, CommaSeparated) for m in info.metadata)


def requested_plugins(argv: Sequence[str], env: Mapping[str, str]) -> tuple[str, ...]:
    """The feature plugins a command line (else the environment) asks for, read ahead of the
    full parse so that the parser can offer the plugins' own flags."""
    flag = flag_name("feature_plugins")
    text: str | None = None
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            text = argv[i + 1]
        elif arg.startswith(flag + "="):
            text = arg[len(flag) + 1:]
    return _plugins(text if text is not None else _lookup(env, env_name("feature_plugins")))


def _plugins(text: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (text or "").split(",") if part.strip())


def _env_key(env: Mapping[str, str], name: str) -> str | None:
    """The variable's name as the environment spells it (the source reads it in any case)."""
    if name in env:
        return name
    return next((key for key in env if key.upper() == name), None)


def _lookup(env: Mapping[str, str], name: str) -> str | None:
    key = _env_key(env, name)
    return None if key is None else env[key]


def add_settings_arguments(
    parser: argparse.ArgumentParser,
    cls: type[ServiceSettings],
    argv: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    only: Collection[str] | None = None,
) -> None:
    """One flag per field, with its variable, default and docstring as help.

    Defaults stay ``None`` so that an unset flag falls back to the environment. The fields are
    those of the class loaded for the plugins ``argv`` (default: this process's) asks for; with
    ``only``, just those fields (a tool that is no service uses a few of them, and the others
    keep their variables and defaults).
    """
    plugins = requested_plugins(sys.argv[1:] if argv is None else argv,
                                os.environ if env is None else env)
    for name, info in cls.with_plugins(plugins).model_fields.items():
        if only is not None and name not in only:
            continue
        default = None if info.default is PydanticUndefined else info.default
        if _is_comma_list(info) and isinstance(default, tuple):
            default = ",".join(default)
        doc = " ".join((info.description or "").split())
        help_text = f"{doc} (env {env_name(name)}; default {default!r})".strip()
        if _is_comma_list(info):
            help_text = "Comma-separated. " + help_text
        parser.add_argument(flag_name(name), dest=name, default=None,
                            help=help_text.replace("%", "%%"))


def load_settings(
    cls: type[S],
    args: argparse.Namespace | None = None,
    env: Mapping[str, str] | None = None,
) -> S | list[SettingError]:
    """Flags beat environment beats defaults; returns every error instead of raising."""
    environ: Mapping[str, str] = os.environ if env is None else env
    plugin_flag: str | None = getattr(args, "feature_plugins", None)
    loaded_cls = cls.with_plugins(_plugins(
        plugin_flag if plugin_flag is not None else _lookup(environ, env_name("feature_plugins"))
    ))
    flags: dict[str, Any] = {}
    for name in loaded_cls.model_fields:
        value = getattr(args, name, None) if args is not None else None
        if value is not None:
            flags[name] = value
    token = _ENVIRON.set(environ)
    try:
        return loaded_cls(**flags)
    except ValidationError as exc:
        return [_setting_error(error["loc"], error["msg"], flags, environ)
                for error in exc.errors()]
    finally:
        _ENVIRON.reset(token)


def _setting_error(loc: tuple[int | str, ...], message: str, flags: Mapping[str, Any],
                   environ: Mapping[str, str]) -> SettingError:
    """Name a problem after where its value came from: the flag, the variable or the default."""
    if not loc:  # a problem of several settings together
        return SettingError("settings", "combined", message)
    field = str(loc[0])
    if field in flags:
        source = flag_name(field)
    elif (key := _env_key(environ, env_name(field))) is not None:
        source = key
    else:
        source = "default"
    return SettingError(field, source, message)
