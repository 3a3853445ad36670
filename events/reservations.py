"""The reservation ledger's wire contract: bucket, key layout and entry schema.

The admission webhook reserves subset slots in the JetStream key-value bucket ``BUCKET``
(stream ``STREAM``), one entry per WorkloadSpread, changed only by compare-and-set. The planner
folds the bucket's stream into WorkloadSpread status; any subscriber may read it the same way,
so its shape is part of the bus contract like the messages in :mod:`events.messages`.

Keys. ``<cluster>.<namespace>.<name>``, each token escaped with :func:`events.subjects.escape`
and then ``%`` written as ``=``: KV keys forbid ``%`` while ``=`` never appears in an escaped
token, so :func:`key_tokens` recovers the escaped tokens exactly. A watcher of the bucket sees
subjects ``$KV.<BUCKET>.<key>`` (:func:`subject_prefix`).

Entries. JSON of :class:`LedgerEntry`: the reservations in flight by pod key (``creating``,
the pod's name or the uid generated for a pod admitted before it had a name) and by pod name
(``deleting``), and ``floor``, the observation-stream sequence a reader's view must have reached
before it may trust the entry (the writer pruned reservations its view already reflected). A
deleted or purged key reads as an empty body, which means an empty ledger.

``LedgerEntry`` is generic over the reservation type so that a reader decodes straight into its
own equivalent struct (the placement core's ``Reservation`` has exactly :class:`ReservedSlot`'s
fields); :class:`ReservedSlot` is the schema published for everyone else.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, Generic, Literal, TypeVar

import msgspec

from events.subjects import escape

BUCKET: Final = "spreadbus-reservations"
STREAM: Final = f"KV_{BUCKET}"
DESCRIPTION: Final = "WorkloadSpread subset slots reserved by the admission webhook"
HISTORY: Final = 1
"""One revision per key is all compare-and-set needs."""
TTL_SECONDS: Final = 24 * 3600
"""An entry untouched for a day holds only expired reservations."""

R = TypeVar("R")


class ReservedSlot(msgspec.Struct, frozen=True):
    """A slot taken (``creating``) or freed (``deleting``) in one subset of one version."""

    workloadspread: str
    """``namespace/name`` of the WorkloadSpread."""
    version: str
    subset: str
    pod: str
    """Pod name, or the uid generated for a pod admitted before it had a name."""
    kind: Literal["creating", "deleting"]
    at: datetime
    """When the webhook admitted the change (RFC 3339)."""


class LedgerEntry(msgspec.Struct, Generic[R], frozen=True, kw_only=True, omit_defaults=True):
    """One WorkloadSpread's reservations in flight; unknown fields are ignored on decode."""

    creating: dict[str, R] = {}
    deleting: dict[str, R] = {}
    floor: int = 0


def kv_token(value: str) -> str:
    """One KV key token for any string (see the module docstring)."""
    return escape(value).replace("%", "=")


def ledger_key(cluster: str, namespace: str, name: str) -> str:
    """The key of one WorkloadSpread's ledger."""
    return ".".join(kv_token(t) for t in (cluster, namespace, name))


def subject_prefix(cluster: str) -> str:
    """Subjects of one cluster's ledger entries in the bucket's stream start with this."""
    return f"$KV.{BUCKET}.{kv_token(cluster)}."


def key_tokens(rest: str) -> str:
    """What follows :func:`subject_prefix`, with each token back in subject escape form."""
    return rest.replace("=", "%")
