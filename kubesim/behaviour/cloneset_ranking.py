"""Which pods a CloneSet removes first when it scales in (OpenKruise's ``ActivePodsWithRanks``).

Most deletable first, each rule deciding only when every earlier rule ties:

1. not assigned to a node before assigned;
2. ``Pending`` before ``Unknown`` before ``Running``;
3. not available (ready for ``minReadySeconds``) before available, not ready before ready;
4. lower ``controller.kubernetes.io/pod-deletion-cost`` before higher;
5. higher spread rank before lower;
6. both ready: ready for no recorded time, then for less time, then for more;
7. more container restarts before fewer;
8. no creation time, then newer, then older.

Rules 1-4 and 7 are the ReplicaSet's (:mod:`kubesim.behaviour.pod_ranking` holds the shared
readings of a pod); unlike the ReplicaSet, Kruise compares times exactly, with no logarithmic
buckets and no uid tie-break, and its rank comes from the template's topology spread.

The spread rank: with no ``topologySpreadConstraints`` in the template, pods sharing a node rank
by how crowded the node is (every pod on a node but its most valuable one gets a rank, the most
deletable the highest). With constraints, for each constraint's ``topologyKey`` the pods are
grouped by their node's value of that label; inside a domain of n pods, sorted by rules 1-8
(with the same-node rank, except for the hostname key), the i-th gets ``(n - i)`` times
``ln(domains + 2)``, summed over the constraints. A crowded domain's pods thus outrank a sparse
domain's, and scale-in takes from the crowded domain first. Pods on nodes without the label (or
not on a known node) get no rank from that constraint.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from kubesim.behaviour.pod_ranking import (
    PHASE_ORDER,
    deletion_cost,
    is_ready,
    ready_time,
    restart_count,
)
from kubesim.behaviour.timestamps import parse_time

JsonObject = dict[str, Any]
Availability = Callable[[Mapping[str, Any]], bool]
HOSTNAME_KEY = "kubernetes.io/hostname"


def pod_key(pod: Mapping[str, Any]) -> str:
    """What ranks are keyed by: the uid, or the name of a pod not yet stored."""
    meta = pod.get("metadata") or {}
    return str(meta.get("uid") or meta.get("name") or "")


def _node(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _zero_first(a: datetime | None, b: datetime | None) -> int:
    """Upstream ``afterOrZero`` as an ordering: no time first, then the later time."""
    if a is None or b is None:
        return -1 if a is None else 1
    return -1 if a > b else 1


def compare(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    rank_a: float = 0.0,
    rank_b: float = 0.0,
    available: Availability | None = None,
    *,
    by_cost: bool = True,
) -> int:
    """Negative when ``a`` should be deleted before ``b``, positive after, 0 when all tie.

    Without ``by_cost`` (and ranks) this is upstream's plain ``ActivePods`` order, the one
    Kruise updates pods in.
    """
    node_a, node_b = _node(a), _node(b)
    if node_a != node_b and not (node_a and node_b):
        return -1 if not node_a else 1
    phase_a = PHASE_ORDER.get((a.get("status") or {}).get("phase", ""), 0)
    phase_b = PHASE_ORDER.get((b.get("status") or {}).get("phase", ""), 0)
    if phase_a != phase_b:
        return -1 if phase_a < phase_b else 1
    if available is not None and available(a) != available(b):
        return -1 if not available(a) else 1
    ready_a, ready_b = is_ready(a), is_ready(b)
    if ready_a != ready_b:
        return -1 if not ready_a else 1
    cost_a, cost_b = (deletion_cost(a), deletion_cost(b)) if by_cost else (0, 0)
    if cost_a != cost_b:
        return -1 if cost_a < cost_b else 1
    if rank_a != rank_b:
        return -1 if rank_a > rank_b else 1
    if ready_a and ready_b:
        since_a, since_b = ready_time(a), ready_time(b)
        if since_a != since_b:
            return _zero_first(since_a, since_b)
    restarts_a, restarts_b = restart_count(a), restart_count(b)
    if restarts_a != restarts_b:
        return -1 if restarts_a > restarts_b else 1
    created_a = parse_time((a.get("metadata") or {}).get("creationTimestamp"))
    created_b = parse_time((b.get("metadata") or {}).get("creationTimestamp"))
    if created_a != created_b:
        return _zero_first(created_a, created_b)
    return 0


def _sorted(
    pods: Sequence[JsonObject],
    ranks: Mapping[str, float] | None = None,
    available: Availability | None = None,
) -> list[JsonObject]:
    def order(x: JsonObject, y: JsonObject) -> int:
        if ranks is None:
            return compare(x, y, available=available)
        return compare(
            x, y, ranks.get(pod_key(x), 0.0), ranks.get(pod_key(y), 0.0), available=available
        )

    return sorted(pods, key=functools.cmp_to_key(order))


def same_node_ranks(pods: Sequence[JsonObject]) -> dict[str, float]:
    """Kruise's same-node rank: on a node with k pods, all but the most valuable are ranked
    k-1, k-2, ..., 1, most deletable highest; a pod alone on its node has none."""
    by_node: dict[str, list[JsonObject]] = {}
    for pod in pods:
        if _node(pod):
            by_node.setdefault(_node(pod), []).append(pod)
    ranks: dict[str, float] = {}
    for together in by_node.values():
        if len(together) <= 1:
            continue
        ranked = _sorted(together)[:-1]
        for i, pod in enumerate(ranked):
            ranks[pod_key(pod)] = float(len(ranked) - i)
    return ranks


def spread_ranks(
    pods: Sequence[JsonObject],
    topology_keys: Sequence[str],
    node_labels: Mapping[str, Mapping[str, str]],
) -> dict[str, float]:
    """Kruise's spread-constraints rank (see the module docstring); ``node_labels`` maps the
    name of every known node to its labels."""
    on_node: dict[str, list[JsonObject]] = {}
    for pod in pods:
        if _node(pod) in node_labels:
            on_node.setdefault(_node(pod), []).append(pod)
    same_node = same_node_ranks(pods)
    ranks: dict[str, float] = {}
    for key in topology_keys:
        domains: dict[str, list[JsonObject]] = {}
        for node, here in on_node.items():
            value = node_labels[node].get(key)
            if value is not None:
                domains.setdefault(value, []).extend(here)
        weight = math.log(len(domains) + 2)
        inner = None if key == HOSTNAME_KEY else same_node
        for members in domains.values():
            ordered = _sorted(members, inner)
            for i, pod in enumerate(ordered):
                ranks[pod_key(pod)] = ranks.get(pod_key(pod), 0.0) + (len(ordered) - i) * weight
    return ranks


def rank_for_scale_in(
    pods: Sequence[JsonObject],
    *,
    topology_keys: Sequence[str] = (),
    node_labels: Mapping[str, Mapping[str, str]] | None = None,
    available: Availability | None = None,
) -> list[JsonObject]:
    """``pods`` sorted most deletable first, ranked by spread (or by shared nodes)."""
    if topology_keys:
        ranks = spread_ranks(pods, topology_keys, node_labels or {})
    else:
        ranks = same_node_ranks(pods)
    return _sorted(pods, ranks, available)


def choose_pods_to_delete(
    total: int,
    old_revision: int,
    not_updated: Sequence[JsonObject],
    updated: Sequence[JsonObject],
    rank: Callable[[Sequence[JsonObject]], list[JsonObject]],
) -> list[JsonObject]:
    """The ``total`` pods a scale-in removes, ``old_revision`` of them (at most) from pods not
    at the update revision, the rest from updated pods, each group ranked by ``rank``."""

    def choose(group: Sequence[JsonObject], count: int) -> list[JsonObject]:
        if count >= len(group):
            return list(group)
        return rank(group)[:count]

    if old_revision >= total:
        return choose(not_updated, total)
    if old_revision > 0:
        return choose(not_updated, old_revision) + choose(updated, total - old_revision)
    return choose(updated, total)
