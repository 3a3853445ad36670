"""The JetStream streams of the bus, as plain data; services create or update them at start-up.

Retention and discard policy are chosen per stream, because losing a message means different
things:

- ``KUBE`` (observations, sync markers) keeps the **latest message of every subject** and
  nothing else (``max_msgs_per_subject=1``, no age limit). Observation subjects name one object
  each (``kube.obs.<cluster>.<group>.<resource>.<ns>.<name>``) and sync subjects one resource,
  so the stream holds each live object's latest observation for as long as the object lives,
  however long it stays unchanged: a consumer replaying from the start (a planner without a
  snapshot, a new webhook replica) always sees every live object and each resource's latest
  sync marker. What it does not see is history: earlier observations of an object are gone
  once a newer one is stored, so a stream sequence (a plan's ``causes``) can be read back only
  while it is still its object's latest observation.

  A ``DELETED`` observation is published with a per-message TTL (``Nats-TTL`` header,
  :data:`TOMBSTONE_TTL_SECONDS`, see :func:`observation_headers`; the stream allows it with
  ``allow_msg_ttl``). It replaces the object's last observation, so any consumer positioned
  before it learns of the deletion, then expires, so deleted objects do not accumulate. The
  price: a consumer that resumes from a position older than the TTL (a stale snapshot, a
  follower paused for that long) may miss a deletion whose tombstone already expired, and must
  replay from the start instead, which under this retention is always complete. The planner
  discards such snapshots.

  ``discard=new`` on ``max_bytes``: a full stream refuses a publish that would grow it (a new
  object) and the watcher's publish fails, which it reports and retries (its resource is
  listed again), instead of the server silently dropping the oldest message, which would now
  be the only record of an unchanged object. A publish replacing an object's message with one
  no larger still fits. Size ``max_bytes`` for the live objects plus one TTL of deletions.
  The dedup window absorbs publish retries (``Nats-Msg-Id`` = ``uid:resourceVersion:type``).
- ``PLANS``: ``discard=new``. A full stream makes the planner's publish fail loudly; a plan is never
  dropped silently. ``Nats-Msg-Id`` is the plan id, so a re-emitted equal plan is a duplicate.
- ``OUTCOMES``: ``discard=new`` with a long dedup window (``Nats-Msg-Id`` = ``outcome:<plan id>``),
  so an actuator that dies between publishing an outcome and acking its plan cannot record a
  second outcome for the same plan when the plan is redelivered.
- ``ADMISSIONS``: ``discard=old``; reservations are short-lived hints.
- ``HISTORY``: the audit log, ``discard=old`` over a window (:data:`HISTORY_MAX_AGE_SECONDS` and
  :data:`HISTORY_MAX_BYTES` by default, :func:`history` for others). It holds the watcher's pod
  lifecycle points and status changes (``history.>``) and *copies* of every admission, plan and
  outcome, which the server sources from ``ADMISSIONS``, ``PLANS`` and ``OUTCOMES``. Copies
  rather than references: one stream in one order is what makes a replay deterministic and
  resumable by a single position, and an admission outlives ``ADMISSIONS``' day. The price is
  the bytes of each plan twice, bounded by the window.

Stream names stay stable; their limits may change between releases and are updated in place
(:mod:`spreadbus.runtime.stream_setup`). An older ``KUBE`` (age window, ``discard=old``) is
converted in place: the server keeps the latest message of each subject and drops the rest.
"""

from __future__ import annotations

import math
from typing import Final, Literal

import msgspec

from events import subjects

TOMBSTONE_TTL_SECONDS: Final = 24 * 3600
"""How long a ``DELETED`` observation stays in ``KUBE``; longer than any snapshot is trusted."""

DEDUP_HEADER: Final = "Nats-Msg-Id"
TTL_HEADER: Final = "Nats-TTL"


class DomainSource(msgspec.Struct, frozen=True, kw_only=True):
    """A stream of another JetStream domain (across a leaf link) whose messages are copied in.

    The server reaches it through the domain's API prefix (``$JS.<domain>.API``); only the
    subjects matching one of ``filter_subjects`` are copied (all when none), whatever the
    source stream holds.
    """

    name: str
    domain: str
    filter_subjects: tuple[str, ...] = ()
    deliver: str = ""
    """The prefix of the subjects the copies cross the link on (the server's own when empty),
    so the link's permissions can carry one member's copies and no other's."""

    @property
    def api(self) -> str:
        return f"$JS.{self.domain}.API"


class StreamSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What a stream must look like; ``max_*`` of ``-1`` means unlimited, an age of 0 too."""

    name: str
    subjects: tuple[str, ...]
    discard: Literal["old", "new"]
    max_age_seconds: float
    max_bytes: int = -1
    max_msgs: int = -1
    max_msgs_per_subject: int = -1
    allow_msg_ttl: bool = False
    duplicate_window_seconds: float = 120.0
    description: str = ""
    sources: tuple[str, ...] = ()
    """Streams whose messages the server copies into this one, as they are stored."""
    source_transforms: tuple[tuple[str, str], ...] = ()
    """``(source filter, destination)`` subject transforms applied to what each source copies
    (:mod:`events.shards`); none copies every subject as it is."""
    domain_sources: tuple[DomainSource, ...] = ()
    """Streams of other JetStream domains copied in (a member cluster's, or the hub's)."""


KUBE: Final = StreamSpec(
    name="KUBE",
    subjects=(f"{subjects.OBSERVATIONS}.>", f"{subjects.SYNC}.>"),
    discard="new",
    max_age_seconds=0.0,
    max_bytes=4 << 30,
    max_msgs_per_subject=1,
    allow_msg_ttl=True,
    description="Latest observation of every Kubernetes object and sync marker of every resource",
)


def observation_headers(
    uid: str,
    resource_version: str,
    event: str,
    *,
    tombstone_ttl_seconds: float = TOMBSTONE_TTL_SECONDS,
) -> dict[str, str]:
    """Headers for publishing one observation to ``KUBE``: its dedup id, and a TTL if a deletion.

    The TTL travels in whole seconds (the server's unit, at least 1 s).
    """
    headers = {DEDUP_HEADER: f"{uid}:{resource_version}:{event}"}
    if event == "DELETED":
        if not tombstone_ttl_seconds >= 1:
            raise ValueError(f"tombstone TTL must be at least 1 s, not {tombstone_ttl_seconds}")
        headers[TTL_HEADER] = str(math.ceil(tombstone_ttl_seconds))
    return headers


def _never_dropped(
    name: str, prefix: str, *, duplicate_window_seconds: float, description: str
) -> StreamSpec:
    """A stream whose messages must not vanish: when full, publishing fails (``discard=new``)."""
    return StreamSpec(
        name=name,
        subjects=(f"{prefix}.>",),
        discard="new",
        max_age_seconds=30 * 24 * 3600,
        max_bytes=1 << 30,
        duplicate_window_seconds=duplicate_window_seconds,
        description=description,
    )


PLANS: Final = _never_dropped(
    "PLANS",
    subjects.PLANS,
    duplicate_window_seconds=600.0,
    description="Plans decided by the planner; never dropped silently",
)

OUTCOMES: Final = _never_dropped(
    "OUTCOMES",
    subjects.OUTCOMES,
    duplicate_window_seconds=3600.0,
    description="One final outcome per plan, from the actuators",
)

ADMISSIONS: Final = StreamSpec(
    name="ADMISSIONS",
    subjects=(f"{subjects.ADMISSIONS}.>",),
    discard="old",
    max_age_seconds=24 * 3600,
    max_bytes=256 << 20,
    description="Webhook reservations of subset slots",
)

HISTORY_MAX_AGE_SECONDS: Final = 7 * 24 * 3600.0
HISTORY_MAX_BYTES: Final = 8 << 30


def history(
    max_age_seconds: float = HISTORY_MAX_AGE_SECONDS, max_bytes: int = HISTORY_MAX_BYTES
) -> StreamSpec:
    """The audit log kept for ``max_age_seconds`` and at most ``max_bytes`` (oldest go first)."""
    if not max_age_seconds > 0:
        raise ValueError(f"history max age must be positive, not {max_age_seconds}")
    return StreamSpec(
        name="HISTORY",
        subjects=(f"{subjects.HISTORY}.>",),
        discard="old",
        max_age_seconds=max_age_seconds,
        max_bytes=max_bytes,
        duplicate_window_seconds=600.0,
        sources=(ADMISSIONS.name, PLANS.name, OUTCOMES.name),
        description="Audit log: pod lifecycle, status changes and copies of every decision",
    )


HISTORY: Final = history()

ALL: Final = (KUBE, PLANS, OUTCOMES, ADMISSIONS, HISTORY)


def with_history(max_age_seconds: float, max_bytes: int) -> tuple[StreamSpec, ...]:
    """:data:`ALL` with the audit log kept for another window."""
    return (KUBE, PLANS, OUTCOMES, ADMISSIONS, history(max_age_seconds, max_bytes))
