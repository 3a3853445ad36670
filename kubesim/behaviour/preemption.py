"""kube-scheduler's DefaultPreemption in the simple case, as pure functions over the cache.

Read from upstream's ``pkg/scheduler/framework/preemption/preemption.go`` and
``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go``:

- a pod may preempt unless its ``preemptionPolicy`` is ``Never``, or it is already nominated to
  a node where a lower-priority pod is still terminating (it waits for that room instead);
- candidates are the nodes whose filter failure preemption could resolve (too little room, not
  a taint or a node selector); on each, every pod of strictly lower priority is taken off; if
  the pod still does not fit there is no candidate; otherwise the removed pods are put back one
  by one, most important first (higher priority, then the earlier started), and each that
  leaves the pod fitting stays: the rest are the victims;
- among candidates the node chosen has the lowest highest victim priority, then the lowest
  sum of victim priorities (each shifted by 2^31 as upstream does), then the fewest victims,
  then the latest start among its highest-priority victims, then the first by name; a node
  that needs no victim at all is taken at once;
- pods nominated to a node with a priority at least the incoming pod's count as placed there
  when the pod is filtered (``RunFilterPluginsWithNominatedPods``), so the room a preemption
  freed goes to the pod it was freed for.

Not simulated: PodDisruptionBudgets among the victims' ranking, and the spread and inter-pod
affinity states are not recomputed for the victims' removal (a node refused for those reasons
is not a candidate).
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubesim.behaviour.scheduling import NodeInfo, Rejection, filter_node

JsonObject = dict[str, Any]

NEVER: Final = "Never"
_SHIFT: Final = 2**31  # upstream adds MaxInt32 + 1 to each priority before summing


@dataclass(frozen=True)
class Preemption:
    """Where the pod is nominated and which pods go to make room for it."""

    node: str
    victims: tuple[JsonObject, ...]


def priority(pod: Mapping[str, Any]) -> int:
    value = (pod.get("spec") or {}).get("priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _start(pod: Mapping[str, Any]) -> str:
    """The pod's start time as RFC 3339 text, which sorts as time does; a pod not started yet
    counts as started now, after every started one (upstream takes the current time)."""
    return str((pod.get("status") or {}).get("startTime") or "~")


def copy_info(info: NodeInfo) -> NodeInfo:
    """An independent copy of a node's cache entry, to add and take off pods in."""
    return NodeInfo(
        node=info.node,
        requested=defaultdict(int, info.requested),
        nonzero_cpu=info.nonzero_cpu,
        nonzero_memory=info.nonzero_memory,
        pods=dict(info.pods),
        anti_affinity_pods=dict(info.anti_affinity_pods),
    )


def with_nominated(pod: Mapping[str, Any], infos: Iterable[NodeInfo],
                   nominated: Mapping[str, Sequence[JsonObject]]) -> list[NodeInfo]:
    """The nodes as ``pod`` is filtered against them: each with the pods nominated to it whose
    priority is at least ``pod``'s (``pod`` itself aside) counted as placed there."""
    own = _key(pod)
    mine = priority(pod)
    out = []
    for info in infos:
        extra = [p for p in nominated.get(info.name, ()) if _key(p) != own and priority(p) >= mine]
        if not extra:
            out.append(info)
            continue
        added = copy_info(info)
        for other in extra:
            added.add_pod(copy.copy(other))
        out.append(added)
    return out


def may_preempt(pod: Mapping[str, Any], infos: Iterable[NodeInfo]) -> bool:
    """``PodEligibleToPreemptOthers``."""
    spec = pod.get("spec") or {}
    if spec.get("preemptionPolicy") == NEVER:
        return False
    nominated = (pod.get("status") or {}).get("nominatedNodeName")
    if not nominated:
        return True
    mine = priority(pod)
    for info in infos:
        if info.name != nominated:
            continue
        for other in info.pods.values():
            if (other.get("metadata") or {}).get("deletionTimestamp") and priority(other) < mine:
                return False
    return True


def _important_first(pods: Iterable[JsonObject]) -> list[JsonObject]:
    """``MoreImportantPod``: higher priority first, then the earlier started."""
    return sorted(pods, key=lambda p: (-priority(p), _start(p), _key(p)))


def victims_on(pod: Mapping[str, Any], info: NodeInfo) -> list[JsonObject] | None:
    """``SelectVictimsOnNode``: the fewest, least important pods whose going makes ``pod`` fit
    on ``info``, most important first; None when even all lower-priority pods going would not
    be enough."""
    mine = priority(pod)
    lower = [p for p in info.pods.values() if priority(p) < mine]
    trial = copy_info(info)
    for victim in lower:
        trial.remove_pod(_key(victim))
    if filter_node(pod, trial) is not None:
        return None
    victims: list[JsonObject] = []
    for candidate in _important_first(lower):
        trial.add_pod(candidate)
        if filter_node(pod, trial) is not None:
            trial.remove_pod(_key(candidate))
            victims.append(candidate)
    return victims


def _rank(victims: Sequence[JsonObject]) -> tuple[int, int, int]:
    """Smaller is better, criterion by criterion as ``pickOneNodeForPreemption``."""
    highest = priority(victims[0])
    return highest, sum(priority(v) + _SHIFT for v in victims), len(victims)


def _earliest_start(victims: Sequence[JsonObject]) -> str:
    """The earliest start among the highest-priority victims (later is better)."""
    highest = priority(victims[0])
    return min(_start(v) for v in victims if priority(v) == highest)


def preempt(pod: Mapping[str, Any], infos: Sequence[NodeInfo],
            rejected: Mapping[str, Rejection]) -> Preemption | None:
    """The node to nominate ``pod`` to and its victims; None when no preemption helps.

    ``infos`` are the nodes as the pod was filtered (nominated pods counted), ``rejected`` why
    each node refused it."""
    if not may_preempt(pod, infos):
        return None
    candidates: list[tuple[str, list[JsonObject]]] = []
    for info in sorted(infos, key=lambda n: n.name):
        rejection = rejected.get(info.name)
        if rejection is None or not rejection.resolvable:
            continue
        victims = victims_on(pod, info)
        if victims is None:
            continue
        if not victims:
            return Preemption(info.name, ())
        candidates.append((info.name, victims))
    if not candidates:
        return None
    lowest = min(_rank(v) for _, v in candidates)
    tied = [(n, v) for n, v in candidates if _rank(v) == lowest]
    latest = max(_earliest_start(v) for _, v in tied)
    name, victims = next((n, v) for n, v in tied if _earliest_start(v) == latest)
    return Preemption(name, tuple(victims))


__all__ = ["Preemption", "copy_info", "may_preempt", "preempt", "priority", "victims_on",
           "with_nominated"]
