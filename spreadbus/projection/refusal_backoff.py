"""When an eviction or a deletion a disruption budget refused is decided again.

A budget (a PodDisruptionBudget, a PodUnavailableBudget) refuses a disruption only for now: it
allows it again once the workload's pods are available. ``kubectl drain`` retries such a refusal
until it passes; the planner does the same for its own evictions and deletions. A refusal is a
429 TooManyRequests (how the Eviction API and a PodUnavailableBudget refuse an eviction, and how
the API server says "later" in general) or a 403 from an admission webhook that names a budget
(how a PodUnavailableBudget refuses a DELETE). Any other failure is final for the object's
version, as before: a precondition that no longer holds, a plan beyond its grants, a bad request
would fail the same way again.

The backoff is a pure function of the refused plan: its id and how many refusals in a row its
object's slot has had. Before jitter it doubles from :data:`FIRST_SECONDS` and stops at
:data:`MAX_SECONDS`; the jitter keeps between half and all of that ("equal jitter"), drawn from a
hash of the plan id, so many pods refused at the same moment spread their retries, and a replay
of the log decides every retry at the same time. It is counted from the plan's ``ts`` (the
planner's own clock when it decided): no other host's clock is involved.
"""

from __future__ import annotations

import hashlib
from typing import Final

FIRST_SECONDS: Final = 1.0
"""The backoff before the first retry, before jitter."""
MAX_SECONDS: Final = 32.0
"""The longest backoff, before jitter: a budget with room is tried at least this often."""
_VERBS: Final = frozenset({"evict", "delete"})
_BUDGET_WORDS: Final = ("podunavailablebudget", "disruption budget", "poddisruptionbudget")


def refused_by_budget(verb: str, status: int, message: str) -> bool:
    """Did a budget (or the API server's "later") refuse this eviction or deletion for now?"""
    if verb not in _VERBS:
        return False
    if status == 429:
        return True
    lowered = message.lower()
    return (status == 403 and "denied the request" in lowered
            and any(word in lowered for word in _BUDGET_WORDS))


def backoff_seconds(plan_id: str, refusals: int) -> float:
    """How long after a plan refused ``refusals`` times in a row it is decided again."""
    ceiling = min(MAX_SECONDS, FIRST_SECONDS * 2.0 ** min(max(refusals, 1) - 1, 32))
    digest = hashlib.sha256(f"{plan_id}\x1f{refusals}".encode()).digest()
    share = int.from_bytes(digest[:8], "big") / 2.0**64  # in [0, 1)
    return ceiling / 2 + share * ceiling / 2


def retry_at(plan_id: str, decided_at: float, refusals: int) -> float:
    """When the refused plan ``plan_id``, decided at ``decided_at``, is decided again."""
    return decided_at + backoff_seconds(plan_id, refusals)
