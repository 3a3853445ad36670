"""Moving a propagated workload's replicas between clusters within a PodUnavailableBudget, one
step at a time, as a pure function of the copies, the schedule and the budget.

Karmada applies a new schedule at once: every member copy takes its new share together, so a
rebalance or a failover scales the old copies down while the new ones are still starting, and the
workload's available replicas, summed over the clusters, drop for as long as the new pods take to
become available. When a PodUnavailableBudget in the host covers the workload, spreadbus moves the
replicas in steps instead (:func:`step`):

- a copy whose share grows (a new copy, a scale-up) gets its share at once;
- a copy whose share shrinks (a scale-down, a cluster left out of the schedule) gives up replicas
  only as far as the budget allows: each replica it gives up costs one available replica, except
  those it runs that are not available where its controller removes those first (a
  Deployment's ReplicaSet; a StatefulSet removes its highest ordinals, so each may cost one),
  and the summed available replicas may not go below the budget's minimum. So the old copies
  go as the new ones become available, never before.

The minimum is capped at the replicas the schedule asks for in all (a budget cannot hold more
than the workload runs), so every sequence of steps reaches the schedule once the new pods are
available. A copy in a cluster that is not Ready counts no available replica: its pods are not
known to serve, and taking them away costs the budget nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec


class Copy(msgspec.Struct, frozen=True):
    """One member cluster's copy of the workload as observed."""

    replicas: int
    """Its ``spec.replicas`` (0: no copy)."""
    available: int
    """Its available replicas, as the budget counts them (0 in a cluster that is not Ready)."""
    unavailable_first: bool = True
    """Its controller removes the replicas that are not available first (a ReplicaSet does);
    False: any may go (a StatefulSet removes its highest ordinals, whatever their state)."""

    @property
    def counted(self) -> int:
        """The available replicas that scaling it down can take: no more than it runs."""
        return max(0, min(self.available, self.replicas))


def spare(copies: Mapping[str, Copy], minimum: int) -> int:
    """The available replicas above the minimum, summed over the clusters (0 when none)."""
    return max(0, sum(c.counted for c in copies.values()) - minimum)


def cost(copy: Copy, replicas: int) -> int:
    """The available replicas that scaling ``copy`` down to ``replicas`` takes away."""
    removed = max(0, copy.replicas - replicas)
    if not copy.unavailable_first:
        return min(removed, copy.counted)
    return max(0, removed - (copy.replicas - copy.counted))


def step(copies: Mapping[str, Copy], targets: Mapping[str, int], minimum: int | None,
         allowed: int | None = None) -> dict[str, int]:
    """The replicas each cluster's copy holds in the next step, for every cluster of
    ``copies`` and ``targets`` (0: the copy goes).

    ``targets``: the schedule's share of each cluster (a cluster not named gets none);
    ``minimum``: the budget's minimum available replicas, None without a budget (the schedule
    applies at once); ``allowed``: the disruptions the budget's status allows (None: no
    status), which caps the spare further (unless the minimum is above the schedule).
    Scale-downs are given the spare replicas in cluster name order."""
    names = sorted(set(copies) | set(targets))
    wanted = {name: max(0, targets.get(name, 0)) for name in names}
    if minimum is None:
        return wanted
    floor = min(max(0, minimum), sum(wanted.values()))
    left = spare(copies, floor)
    if allowed is not None and floor == minimum:
        # A minimum above the schedule is not kept, nor then the status computed from it.
        left = min(left, max(0, allowed))
    out: dict[str, int] = {}
    for name in names:
        copy = copies.get(name, Copy(replicas=0, available=0))
        if wanted[name] >= copy.replicas:
            out[name] = wanted[name]
            continue
        # Scale down as far as the spare allows: the replicas not available go first, free;
        # where any may go, each costs one until every available one is paid for.
        free = copy.replicas - copy.counted
        wanted_down = copy.replicas - wanted[name]
        if copy.unavailable_first:
            down = min(wanted_down, free + left)
        else:
            down = wanted_down if copy.counted <= left else min(wanted_down, left)
        out[name] = copy.replicas - down
        left -= cost(copy, out[name])
    return out


def settled(copies: Mapping[str, Copy], targets: Mapping[str, int]) -> bool:
    """Whether every copy holds its share (no copy left where the schedule has none)."""
    names = set(copies) | set(targets)
    return all(copies.get(n, Copy(replicas=0, available=0)).replicas == max(0, targets.get(n, 0))
               for n in names)
