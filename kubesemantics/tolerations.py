"""Taints and tolerations with upstream semantics, over plain JSON-shaped dicts.

A toleration with an empty effect matches every effect, an empty key with ``Exists`` matches every
taint, and ``Equal`` (the default operator) compares values exactly. ``Gt``/``Lt`` tolerations
tolerate nothing: upstream compares them numerically only behind the alpha feature gate
``TaintTolerationComparisonOperators``, off by default, and this package follows the default.
How long a pod stays on a node with NoExecute taints follows the taint manager: the first
tolerating toleration of each taint counts, and the shortest ``tolerationSeconds`` among those.

The WorkloadSpread engine and the simulated scheduler share these functions so that "which subset
does this pod belong to" and "would this pod schedule here" never disagree.
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


def matching_tolerations(
    taints: Iterable[Taint], tolerations: Iterable[Toleration] | None
) -> list[Toleration] | None:
    """For each taint, the first toleration (in the pod's order) that tolerates it; None as soon
    as one taint is tolerated by none. This is the taint manager's choice of tolerations used,
    so a later toleration with a shorter ``tolerationSeconds`` does not shorten the stay."""
    tols = list(tolerations or ())
    used: list[Toleration] = []
    for taint in taints:
        first = next((t for t in tols if _tolerates_one(t, taint)), None)
        if first is None:
            return None
        used.append(first)
    return used


def min_toleration_seconds(used: Iterable[Toleration]) -> float | None:
    """The shortest stay the used tolerations allow: None for ever (no ``tolerationSeconds``
    among them), 0 when there are none or one is zero or negative."""
    limit: float | None = None
    used = list(used)
    if not used:
        return 0
    for toleration in used:
        seconds = toleration.get("tolerationSeconds")
        if seconds is None:
            continue
        if float(seconds) <= 0:
            return 0
        limit = float(seconds) if limit is None else min(limit, float(seconds))
    return limit


def toleration_seconds(
    taints: Iterable[Taint], tolerations: Iterable[Toleration] | None
) -> float | None:
    """How long a pod may stay on a node with these taints (only NoExecute ones count).

    None means for ever (no NoExecute taint, or every one tolerated without a time limit); 0
    means evict now (some taint is not tolerated); otherwise the smallest ``tolerationSeconds``
    among the tolerations used, one per taint as :func:`matching_tolerations` picks them.
    """
    no_execute = [t for t in taints if t.get("effect") == NO_EXECUTE]
    if not no_execute:
        return None
    used = matching_tolerations(no_execute, tolerations)
    if used is None:
        return 0
    return min_toleration_seconds(used)
