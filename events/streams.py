"""The JetStream streams of the bus, as plain data; services create or update them at start-up.

Discard policy is chosen per stream, because losing an old message means different things:

- ``KUBE`` (observations, sync markers): ``discard=old``. Dropping the oldest observation never
  blocks the watcher. The dedup window absorbs publish retries (``Nats-Msg-Id`` =
  ``uid:resourceVersion:type``). Known limit: nothing re-publishes an object that has not
  changed, so once its last observation ages out (7 days, or 4 GiB of newer traffic) a consumer
  replaying from the start (a planner without a snapshot, a new webhook) does not see it until
  it changes or the watcher relists. The intended remedy is per-subject last-value retention
  (one subject per object, ``max_msgs_per_subject=1``, no age limit, tombstones expiring by
  per-message TTL); until then, keep snapshots younger than the window.
- ``PLANS``: ``discard=new``. A full stream makes the planner's publish fail loudly; a plan is never
  dropped silently. ``Nats-Msg-Id`` is the plan id, so a re-emitted equal plan is a duplicate.
- ``OUTCOMES``: ``discard=new`` with a long dedup window (``Nats-Msg-Id`` = ``outcome:<plan id>``),
  so an actuator that dies between publishing an outcome and acking its plan cannot record a
  second outcome for the same plan when the plan is redelivered.
- ``ADMISSIONS``: ``discard=old``; reservations are short-lived hints.

Stream names stay stable; their limits may change between releases and are updated in place.
"""

from __future__ import annotations

from typing import Final, Literal

import msgspec

from events import subjects


class StreamSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What a stream must look like; ``max_*`` of ``-1`` means unlimited."""

    name: str
    subjects: tuple[str, ...]
    discard: Literal["old", "new"]
    max_age_seconds: float
    max_bytes: int = -1
    max_msgs: int = -1
    duplicate_window_seconds: float = 120.0
    description: str = ""


KUBE: Final = StreamSpec(
    name="KUBE",
    subjects=(f"{subjects.OBSERVATIONS}.>", f"{subjects.SYNC}.>"),
    discard="old",
    max_age_seconds=7 * 24 * 3600,
    max_bytes=4 << 30,
    description="Kubernetes observations and sync markers from the watchers",
)

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

ALL: Final = (KUBE, PLANS, OUTCOMES, ADMISSIONS)
