"""Taints and tolerations with upstream semantics, over plain JSON-shaped dicts.

A toleration with an empty effect matches every effect, an empty key with ``Exists`` matches every
taint, and ``Equal`` (the default operator) compares values exactly. The WorkloadSpread engine and
the simulated scheduler share these functions so that "which subset does this pod belong to" and
"would this pod schedule here" never disagree.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

Taint = Mapping[str, Any]
Toleration = Mapping[str, Any]

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
SCHEDULING_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})


def tolerates(tolerations: Iterable[Toleration] | Toleration, taint: Taint) -> bool:
    """Whether one toleration, or any of several, tolerates ``taint``."""
    if isinstance(tolerations, Mapping):
        return _tolerates_one(tolerations, taint)
    return any(_tolerates_one(t, taint) for t in tolerations)


def _tolerates_one(toleration: Toleration, taint: Taint) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def untolerated_taint(
    taints: Iterable[Taint] | None,
    tolerations: Iterable[Toleration] | None,
    effects: Collection[str] = SCHEDULING_EFFECTS,
) -> Taint | None:
    """The first taint with one of ``effects`` that no toleration tolerates, else None."""
    tols = list(tolerations or ())
    for taint in taints or ():
        if taint.get("effect") in effects and not tolerates(tols, taint):
            return taint
    return None


def untolerated_count(
    taints: Iterable[Taint] | None,
    tolerations: Iterable[Toleration] | None,
    effect: str = PREFER_NO_SCHEDULE,
) -> int:
    """How many ``effect`` taints go untolerated (the scheduler's PreferNoSchedule score)."""
    tols = [t for t in tolerations or () if (t.get("effect") or "") in ("", effect)]
    return sum(
        1 for taint in taints or () if taint.get("effect") == effect and not tolerates(tols, taint)
    )


def toleration_seconds(
    taints: Iterable[Taint], tolerations: Iterable[Toleration] | None
) -> float | None:
    """How long a pod may stay on a node with these NoExecute taints.

    None means forever (every taint tolerated without a time limit); 0 means evict now (some taint
    is not tolerated); otherwise the smallest ``tolerationSeconds`` among the tolerations used.
    """
    tols = list(tolerations or ())
    limit: float | None = None
    for taint in taints:
        if taint.get("effect") != NO_EXECUTE:
            continue
        used = [t for t in tols if _tolerates_one(t, taint)]
        if not used:
            return 0
        for toleration in used:
            seconds = toleration.get("tolerationSeconds")
            if seconds is None:
                continue
            seconds = max(float(seconds), 0.0)
            limit = seconds if limit is None else min(limit, seconds)
    return limit
