"""Settings of the audit commands (flags and ``SPREADBUS_*`` variables, as every service's).

Without NATS credentials, a command run next to a local stack (``spreadbus up``'s directory,
``.spreadbus/`` by default) uses that stack's read-only user, trusts its development CA and,
unless a URL is given, uses its NATS URL: :func:`with_local_stack`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from pydantic import field_validator
from pydantic_core import PydanticCustomError

from spreadbus.audit.registered import schema_with
from spreadbus.audit.schema import AuditSchema
from spreadbus.engine.feature_plugins import PluginError
from spreadbus.runtime.bus_permissions import READER
from spreadbus.runtime.bus_users import local_ca, local_seed
from spreadbus.runtime.settings import ServiceSettings


class AuditSettings(ServiceSettings):
    """Where the audit database is and which part of the history goes into it."""

    db: str = "audit.db"
    """Path of the SQLite audit database (created if missing)."""
    since: str = ""
    """Fold only messages stored from this time on (ISO 8601, Unix seconds, or e.g. 24h ago);
    used when the database is new."""
    until: str = ""
    """Stop before the first message stamped after this time."""
    data_dir: str = ".spreadbus"
    """A local stack's directory, whose reader credentials and NATS URL are used when none
    are given."""

    @field_validator("feature_plugins")
    @classmethod
    def _plugins_usable(cls, plugins: tuple[str, ...]) -> tuple[str, ...]:
        try:
            schema_with(plugins)
        except PluginError as exc:
            raise PydanticCustomError("feature_plugins", "{problem}",
                                      {"problem": str(exc)}) from exc
        return plugins

    def audit_schema(self) -> AuditSchema:
        """The audit schema of the built-in features and the feature plugins."""
        return schema_with(self.feature_plugins)


CONNECTION_FIELDS: Final = ("nats_url", "nats_creds", "nats_nkey_seed", "nats_tls_ca",
                             "nats_tls_cert", "nats_tls_key", "nats_name", "data_dir",
                             "feature_plugins")
"""The settings a command that only reads the history uses to reach it and to read it (the
feature plugins whose parts of the log it holds); its flags list these (and its own), not a
service's health port, stream replicas or Kubernetes access."""
REPLAY_FIELDS: Final = (*CONNECTION_FIELDS, "db", "since", "until")
WHY_FIELDS: Final = (*CONNECTION_FIELDS, "db")


def with_local_stack(settings: AuditSettings, *, user: str = READER) -> AuditSettings:
    """``settings`` with the local stack's credentials (and URL) when none are set."""
    base = Path(settings.data_dir)
    if settings.nats_creds or settings.nats_nkey_seed or not base.is_dir():
        return settings
    changes: dict[str, object] = {}
    seed = local_seed(base, user)
    if seed.is_file():
        changes["nats_nkey_seed"] = str(seed)
    ca = local_ca(base)  # the stack's NATS speaks TLS with a certificate of this CA
    if ca.is_file() and not settings.nats_tls_ca:
        changes["nats_tls_ca"] = str(ca)
    url_file = base / "nats-url"
    default_url = AuditSettings.model_fields["nats_url"].default
    if settings.nats_url == default_url and url_file.is_file():
        changes["nats_url"] = tuple(url_file.read_text().strip().split(","))
    return settings.model_copy(update=changes) if changes else settings
