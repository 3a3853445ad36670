"""Service settings from command-line flags and ``SPREADBUS_*`` environment variables.

A service declares its settings as one frozen ``msgspec.Struct`` (subclassing
:class:`ServiceSettings` for the shared NATS, HTTP, logging and Kubernetes fields). From it:

- :func:`add_settings_arguments` adds one ``--flag-name`` per field to an ``argparse`` parser;
- :func:`load_settings` builds the struct: a flag given on the command line wins, then
  ``SPREADBUS_FLAG_NAME`` from the environment, then the field's default. List fields read a
  comma-separated string; numbers and booleans are converted from their text.

Loading never raises on bad input: it returns every problem with the flag and variable that
caused it, so a service can print all of them at once and exit 2.

Signatures::

    add_settings_arguments(parser: argparse.ArgumentParser, cls: type[S]) -> None
    load_settings(cls: type[S], args: argparse.Namespace | None = None,
                  env: Mapping[str, str] | None = None) -> S | list[SettingError]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any, TypeVar, get_origin

import msgspec

ENV_PREFIX = "SPREADBUS_"


class ServiceSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Settings every service shares."""

    nats_url: tuple[str, ...] = ("nats://127.0.0.1:4222",)
    """NATS server URLs; the client tries each and reconnects forever."""
    nats_creds: str = ""
    """Path of a NATS credentials (JWT + nkey seed) file."""
    nats_nkey_seed: str = ""
    """Path of an nkey seed file."""
    nats_tls_ca: str = ""
    nats_tls_cert: str = ""
    nats_tls_key: str = ""
    nats_name: str = ""
    """Client name shown by the server; defaults to the service name."""
    nats_replicas: int = 1
    """Replicas of the streams and buckets this service creates (3 on a 3-node cluster);
    an existing stream keeps the replica count it has."""
    http_host: str = "0.0.0.0"
    http_port: int = 8080
    """Port of /healthz, /readyz and /metrics; 0 picks a free one."""
    log_level: str = "INFO"
    cluster: str = "local"
    """Name of the Kubernetes cluster this service watches or acts on."""
    kubeconfig: str = ""
    """Path of a kubeconfig; empty means in-cluster configuration, else ~/.kube/config."""
    kube_context: str = ""
    feature_plugins: tuple[str, ...] = ()
    """More features to run beside the built-in ones, each ``module:attribute`` naming a
    :class:`spreadbus.engine.feature.Feature` (see :mod:`spreadbus.features.registry`)."""


S = TypeVar("S", bound=msgspec.Struct)


class SettingError(msgspec.Struct, frozen=True):
    """One bad setting: which field, where its value came from, and why it is wrong."""

    field: str
    source: str
    message: str

    def __str__(self) -> str:
        return f"{self.field} (from {self.source}): {self.message}"


def flag_name(field: str) -> str:
    return "--" + field.replace("_", "-")


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()


def add_settings_arguments(parser: argparse.ArgumentParser, cls: type[msgspec.Struct]) -> None:
    """One flag per field; defaults stay ``None`` so that an unset flag falls back to the env."""
    for field in msgspec.structs.fields(cls):
        is_list = get_origin(field.type) in (list, tuple)
        help_text = f"(env {env_name(field.name)}; default {field.default!r})"
        if is_list:
            help_text = "comma-separated, " + help_text
        parser.add_argument(flag_name(field.name), dest=field.name, default=None, help=help_text)


def _from_text(field_type: Any, text: str) -> Any:
    if get_origin(field_type) in (list, tuple):
        return [part.strip() for part in text.split(",") if part.strip()]
    if field_type is bool:
        lowered = text.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off", ""):
            return False
        return text  # left for msgspec to reject with a clear message
    return text


def load_settings(
    cls: type[S],
    args: argparse.Namespace | None = None,
    env: Mapping[str, str] | None = None,
) -> S | list[SettingError]:
    """Flags beat environment beats defaults; returns every error instead of raising."""
    environ = os.environ if env is None else env
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for field in msgspec.structs.fields(cls):
        flag_value = getattr(args, field.name, None) if args is not None else None
        if flag_value is not None:
            raw, source = flag_value, flag_name(field.name)
        elif env_name(field.name) in environ:
            raw, source = environ[env_name(field.name)], env_name(field.name)
        else:
            continue
        values[field.name] = _from_text(field.type, raw) if isinstance(raw, str) else raw
        sources[field.name] = source
    errors: list[SettingError] = []
    for name, value in values.items():
        field_type = next(f.type for f in msgspec.structs.fields(cls) if f.name == name)
        try:
            msgspec.convert(value, field_type, strict=False)
        except msgspec.ValidationError as exc:
            errors.append(SettingError(name, sources[name], _strip_path(str(exc))))
    if errors:
        return errors
    try:
        return msgspec.convert(values, cls, strict=False)
    except msgspec.ValidationError as exc:  # cross-field problems, if a subclass adds any
        return [SettingError("settings", "combined", str(exc))]


def _strip_path(message: str) -> str:
    return message.split(" - at ", 1)[0]

