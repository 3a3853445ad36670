"""kube-scheduler's filters and scores as pure functions over node and pod dicts.

The filter plugins run in upstream order (NodeUnschedulable, NodeName, TaintToleration,
NodeAffinity, NodeResourcesFit, PodTopologySpread) and a node is rejected by the first plugin that
fails, so the "0/12 nodes are available: ..." histogram counts reasons exactly as kube-scheduler
does. Scores use the default plugin weights (TaintToleration 3, NodeAffinity 2,
PodTopologySpread 2, NodeResourcesFit least-allocated 1), each normalised to 0..100.
Upstream breaks ties between best nodes at random; we break them by node name so runs repeat.

:class:`NodeInfo` is the scheduler cache's view of one node: its requested resources are kept up to
date incrementally as pods are bound and removed, so scheduling one pod costs O(nodes), not
O(pods), unless the pod carries topology spread constraints.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubesemantics.node_affinity import (
    pod_matches_node,
    pod_node_affinity,
    preferred_score,
)
from kubesemantics.tolerations import (
    NO_EXECUTE,
    NO_SCHEDULE,
    tolerates,
    untolerated_count,
    untolerated_taint,
)
from kubesim.behaviour.label_match import selector_matches
from kubesim.behaviour.pod_affinity import (
    REASON_AFFINITY as REASON_POD_AFFINITY,
)
from kubesim.behaviour.pod_affinity import (
    AffinityState,
    PlacedPod,
    affinity_rejection,
    affinity_state,
    has_required_anti_affinity,
    preferred_affinity_scores,
    preferred_terms,
    required_terms,
)
from kubesim.behaviour.quantity import QuantityError, milli_value, value

JsonObject = dict[str, Any]
Resources = dict[str, int]

# Requests assumed for scoring when a container asks for nothing (upstream DefaultMilliCPURequest
# and DefaultMemoryRequest), so that empty pods still spread.
DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
MAX_SCORE = 100

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
# current upstream no longer names the taint (older releases said "{key: value}")
REASON_TAINT = "node(s) had untolerated taint(s)"
REASON_NODE_NAME = "node(s) didn't match the requested node name"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_SPREAD = "node(s) didn't match pod topology spread constraints"
REASON_SPREAD_LABEL = (
    "node(s) didn't match pod topology spread constraints (missing required label)"
)
REASON_TOO_MANY_PODS = "Too many pods"

UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": NO_SCHEDULE}


def _amount(resource: str, quantity: Any) -> int:
    return _parsed_amount(resource, quantity if isinstance(quantity, str) else str(quantity))


@functools.lru_cache(maxsize=4096)
def _parsed_amount(resource: str, quantity: str) -> int:
    # a cluster uses a handful of distinct quantities; parsing each once keeps scheduling cheap
    try:
        return milli_value(quantity) if resource == "cpu" else value(quantity)
    except QuantityError:
        return 0


def pod_requests(pod_spec: Mapping[str, Any]) -> Resources:
    """Effective requests: sum over containers, at least each init container, plus overhead.

    A container with a limit and no request requests its limit, as API defaulting would set.
    """

    def container_requests(container: Mapping[str, Any]) -> Resources:
        resources = container.get("resources") or {}
        merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        return {name: _amount(name, q) for name, q in merged.items()}

    total: Resources = defaultdict(int)
    for container in pod_spec.get("containers") or ():
        for name, amount in container_requests(container).items():
            total[name] += amount
    for container in pod_spec.get("initContainers") or ():
        for name, amount in container_requests(container).items():
            total[name] = max(total[name], amount)
    for name, q in (pod_spec.get("overhead") or {}).items():
        total[name] += _amount(name, q)
    return dict(total)


def nonzero_requests(requests: Mapping[str, int]) -> tuple[int, int]:
    """(milli cpu, memory) used for scoring, with upstream defaults for zero requests."""
    return (requests.get("cpu") or DEFAULT_MILLI_CPU, requests.get("memory") or DEFAULT_MEMORY)


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


@dataclass
class NodeInfo:
    """One node with the pods assigned to it and what they request."""

    node: JsonObject
    requested: Resources = field(default_factory=lambda: defaultdict(int))
    nonzero_cpu: int = 0
    nonzero_memory: int = 0
    pods: dict[str, JsonObject] = field(default_factory=dict)
    # the pods here with required anti-affinity, which every incoming pod must respect
    anti_affinity_pods: dict[str, JsonObject] = field(default_factory=dict)
    _allocatable: Resources = field(default_factory=dict, repr=False)
    _allocatable_of: object = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return str(self.node["metadata"]["name"])

    @property
    def labels(self) -> Mapping[str, str]:
        labels: Mapping[str, str] = self.node["metadata"].get("labels") or {}
        return labels

    @property
    def taints(self) -> list[JsonObject]:
        taints: list[JsonObject] = (self.node.get("spec") or {}).get("taints") or []
        return taints

    def allocatable(self) -> Resources:
        status = self.node.get("status") or {}
        alloc = status.get("allocatable") or status.get("capacity") or {}
        if self._allocatable_of is not alloc:
            self._allocatable = {name: _amount(name, q) for name, q in alloc.items()}
            self._allocatable_of = alloc
        return self._allocatable

    def add_pod(self, pod: JsonObject) -> None:
        key = _key(pod)
        if key in self.pods:
            self.remove_pod(key)
        self.pods[key] = pod
        if has_required_anti_affinity(pod):
            self.anti_affinity_pods[key] = pod
        requests = pod_requests(pod.get("spec") or {})
        for name, amount in requests.items():
            self.requested[name] += amount
        cpu, memory = nonzero_requests(requests)
        self.nonzero_cpu += cpu
        self.nonzero_memory += memory

    def remove_pod(self, key: str) -> None:
        pod = self.pods.pop(key, None)
        self.anti_affinity_pods.pop(key, None)
        if pod is None:
            return
        requests = pod_requests(pod.get("spec") or {})
        for name, amount in requests.items():
            self.requested[name] -= amount
        cpu, memory = nonzero_requests(requests)
        self.nonzero_cpu -= cpu
        self.nonzero_memory -= memory


@dataclass(frozen=True)
class Rejection:
    """Why one node was filtered out; ``resolvable`` says whether preemption could help."""

    reasons: tuple[str, ...]
    resolvable: bool


_UNSCHEDULABLE: Final = Rejection((REASON_UNSCHEDULABLE,), resolvable=False)
_NODE_NAME: Final = Rejection((REASON_NODE_NAME,), resolvable=False)
_TAINT: Final = Rejection((REASON_TAINT,), resolvable=False)
_AFFINITY: Final = Rejection((REASON_AFFINITY,), resolvable=False)
_SPREAD_LABEL: Final = Rejection((REASON_SPREAD_LABEL,), resolvable=False)
_SPREAD: Final = Rejection((REASON_SPREAD,), resolvable=True)
"""The rejections whose reasons are fixed, made once: a pod steered to one zone is refused by
every node of the others."""


def _spread_constraints(pod: Mapping[str, Any], mode: str) -> list[Mapping[str, Any]]:
    constraints = (pod.get("spec") or {}).get("topologySpreadConstraints") or ()
    return [c for c in constraints if c.get("whenUnsatisfiable", "DoNotSchedule") == mode]


def _constraint_selector(pod: Mapping[str, Any], constraint: Mapping[str, Any]) -> JsonObject:
    """The constraint's selector with ``matchLabelKeys`` folded in from the pod's labels."""
    selector: JsonObject = dict(constraint.get("labelSelector") or {})
    labels = (pod.get("metadata") or {}).get("labels") or {}
    keys = [k for k in constraint.get("matchLabelKeys") or () if k in labels]
    if keys:
        selector["matchExpressions"] = [
            *(selector.get("matchExpressions") or ()),
            *({"key": k, "operator": "In", "values": [labels[k]]} for k in keys),
        ]
    return selector


def _counts_match(
    pod: Mapping[str, Any], candidate: Mapping[str, Any], selector: Mapping[str, Any]
) -> bool:
    meta = candidate.get("metadata") or {}
    return (
        meta.get("namespace") == (pod.get("metadata") or {}).get("namespace")
        and not meta.get("deletionTimestamp")
        and selector_matches(selector, meta.get("labels"))
    )


@dataclass
class SpreadState:
    """Per-constraint matching pod counts by topology domain, computed once per pod."""

    counts: list[dict[str, int]]
    constraints: list[Mapping[str, Any]]
    self_match: list[int]
    minimums: list[int]


def spread_state(
    pod: Mapping[str, Any], nodes: Iterable[NodeInfo], mode: str
) -> SpreadState | None:
    constraints = _spread_constraints(pod, mode)
    if not constraints:
        return None
    spec = pod.get("spec") or {}
    eligible = [n for n in nodes if pod_matches_node(spec, n.node)]
    counts: list[dict[str, int]] = []
    self_match: list[int] = []
    minimums: list[int] = []
    pod_labels = (pod.get("metadata") or {}).get("labels") or {}
    for constraint in constraints:
        key = constraint.get("topologyKey") or ""
        selector = _constraint_selector(pod, constraint)
        by_domain: dict[str, int] = {}
        for info in eligible:
            domain = info.labels.get(key)
            if domain is None:
                continue
            matched = sum(1 for p in info.pods.values() if _counts_match(pod, p, selector))
            by_domain[domain] = by_domain.get(domain, 0) + matched
        counts.append(by_domain)
        self_match.append(1 if selector_matches(selector, pod_labels) else 0)
        minimum = min(by_domain.values()) if by_domain else 0
        min_domains = int(constraint.get("minDomains") or 1)
        if len(by_domain) < min_domains:
            minimum = 0
        minimums.append(minimum)
    return SpreadState(counts, constraints, self_match, minimums)


def filter_node(
    pod: Mapping[str, Any],
    info: NodeInfo,
    spread: SpreadState | None = None,
    requests: Mapping[str, int] | None = None,
    affinity: AffinityState | None = None,
    node_fit: Callable[[NodeInfo], bool] | None = None,
) -> Rejection | None:
    """None when ``pod`` fits ``info``; otherwise the first failing plugin's reasons.

    ``node_fit`` answers the NodeAffinity filter (see :func:`node_fit_for`) when given.
    """
    spec = pod.get("spec") or {}
    tolerations = spec.get("tolerations") or ()
    node_spec = info.node.get("spec") or {}
    if node_spec.get("unschedulable") and not tolerates(tolerations, UNSCHEDULABLE_TAINT):
        return _UNSCHEDULABLE
    wanted = spec.get("nodeName")
    if wanted and wanted != info.name:
        return _NODE_NAME
    if untolerated_taint(info.taints, tolerations, (NO_SCHEDULE, NO_EXECUTE)) is not None:
        return _TAINT
    if not (node_fit(info) if node_fit is not None else pod_matches_node(spec, info.node)):
        return _AFFINITY
    reasons = insufficient_resources(pod_requests(spec) if requests is None else requests, info)
    if reasons:
        return Rejection(tuple(reasons), resolvable=True)
    if spread is not None:
        for i, constraint in enumerate(spread.constraints):
            domain = info.labels.get(constraint.get("topologyKey") or "")
            if domain is None:
                return _SPREAD_LABEL
            matched = spread.counts[i].get(domain, 0) + spread.self_match[i]
            if matched - spread.minimums[i] > int(constraint.get("maxSkew") or 1):
                return _SPREAD
    if affinity is not None:
        refusal = affinity_rejection(affinity, info.labels)
        if refusal is not None:
            return Rejection((refusal,), resolvable=refusal != REASON_POD_AFFINITY)
    return None


def insufficient_resources(requests: Mapping[str, int], info: NodeInfo) -> list[str]:
    allocatable = info.allocatable()
    reasons: list[str] = []
    if len(info.pods) + 1 > allocatable.get("pods", 110):
        reasons.append(REASON_TOO_MANY_PODS)
    for name, amount in requests.items():
        if amount <= 0:
            continue
        if info.requested.get(name, 0) + amount > allocatable.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons


def fit_error_message(total_nodes: int, rejections: Iterable[Rejection]) -> str:
    """The upstream FitError text, reasons counted per node and sorted as kube-scheduler does."""
    histogram: dict[str, int] = defaultdict(int)
    resolvable = unresolvable = 0
    for rejection in rejections:
        for reason in rejection.reasons:
            histogram[reason] += 1
        if rejection.resolvable:
            resolvable += 1
        else:
            unresolvable += 1
    reasons = sorted(f"{count} {reason}" for reason, count in histogram.items())
    message = f"0/{total_nodes} nodes are available: {', '.join(reasons)}."
    preemption = sorted(
        [f"{resolvable} No preemption victims found for incoming pod"] * bool(resolvable)
        + [f"{unresolvable} Preemption is not helpful for scheduling"] * bool(unresolvable)
    )
    if preemption:
        message += f" preemption: 0/{total_nodes} nodes are available: {', '.join(preemption)}."
    return message


def _normalize(scores: dict[str, int], *, reverse: bool) -> dict[str, int]:
    """Upstream DefaultNormalizeScore: scale to 0..100, optionally flipped."""
    top = max(scores.values(), default=0)
    if top == 0:
        return {n: (MAX_SCORE if reverse else 0) for n in scores}
    return {
        n: (MAX_SCORE - s * MAX_SCORE // top) if reverse else s * MAX_SCORE // top
        for n, s in scores.items()
    }


def least_allocated(requests: Mapping[str, int], info: NodeInfo) -> int:
    cpu, memory = nonzero_requests(requests)
    allocatable = info.allocatable()
    total = 0
    for alloc, used in (
        (allocatable.get("cpu", 0), info.nonzero_cpu + cpu),
        (allocatable.get("memory", 0), info.nonzero_memory + memory),
    ):
        if alloc > 0 and used <= alloc:
            total += (alloc - used) * MAX_SCORE // alloc
    return total // 2


def _spread_scores(
    pod: Mapping[str, Any], feasible: list[NodeInfo], spread: SpreadState
) -> dict[str, int]:
    raw: dict[str, float] = {}
    for info in feasible:
        score = 0.0
        for i, constraint in enumerate(spread.constraints):
            domain = info.labels.get(constraint.get("topologyKey") or "")
            if domain is None:
                continue
            weight = math.log(len(spread.counts[i]) + 2)
            score += (spread.counts[i].get(domain, 0) + int(constraint.get("maxSkew") or 1) - 1) * (
                weight
            )
        raw[info.name] = round(score)
    top, low = max(raw.values(), default=0), min(raw.values(), default=0)
    if top == 0:
        return {n: MAX_SCORE for n in raw}
    return {n: int(MAX_SCORE * (top + low - s) / top) for n, s in raw.items()}


def _placed(nodes: Iterable[NodeInfo]) -> list[PlacedPod]:
    return [PlacedPod(p, n.labels) for n in nodes for p in n.pods.values()]


def _inter_pod_scores(
    pod: Mapping[str, Any], feasible: list[NodeInfo], everywhere: list[NodeInfo]
) -> dict[str, int]:
    # Only the incoming pod's preferred terms score; without any, listing every placed pod
    # (O(pods) per scheduled pod) buys nothing.
    if not (preferred_terms(pod, "podAffinity") or preferred_terms(pod, "podAntiAffinity")):
        return {}
    raw = preferred_affinity_scores(pod, _placed(everywhere), {n.name: n.labels for n in feasible})
    if not raw:
        return {}
    top, low = max(raw.values()), min(raw.values())
    if top == low:
        return {}
    return {n: (s - low) * MAX_SCORE // (top - low) for n, s in raw.items()}


def score_nodes(
    pod: Mapping[str, Any],
    feasible: list[NodeInfo],
    requests: Mapping[str, int] | None = None,
    everywhere: list[NodeInfo] | None = None,
) -> dict[str, int]:
    """Weighted sum of the default score plugins for each feasible node."""
    spec = pod.get("spec") or {}
    requests = pod_requests(spec) if requests is None else requests
    tolerations = spec.get("tolerations") or ()
    taint = _normalize(
        {n.name: untolerated_count(n.taints, tolerations) for n in feasible}, reverse=True
    )
    preferred = pod_node_affinity(spec).get("preferredDuringSchedulingIgnoredDuringExecution")
    affinity = _normalize(
        {n.name: preferred_score(n.node, preferred) for n in feasible}, reverse=False
    )
    soft = spread_state(pod, feasible, "ScheduleAnyway")
    spread = _spread_scores(pod, feasible, soft) if soft else {}
    inter_pod = _inter_pod_scores(pod, feasible, everywhere if everywhere is not None else feasible)
    return {
        n.name: 3 * taint[n.name]
        + 2 * affinity[n.name]
        + 2 * spread.get(n.name, 0)
        + 2 * inter_pod.get(n.name, 0)
        + least_allocated(requests, n)
        for n in feasible
    }


def _affinity_state(pod: Mapping[str, Any], infos: list[NodeInfo]) -> AffinityState | None:
    """Only pods that carry required terms, or clusters with anti-affine pods, pay for this."""
    with_anti = [PlacedPod(p, n.labels) for n in infos for p in n.anti_affinity_pods.values()]
    if not with_anti and not (
        required_terms(pod, "podAffinity") or required_terms(pod, "podAntiAffinity")
    ):
        return None
    return affinity_state(pod, _placed(infos), with_anti)


def node_fit_for(pod: Mapping[str, Any]) -> Callable[[NodeInfo], bool]:
    """The NodeAffinity filter for one pod, answered once per distinct value of the labels it reads.

    Nodes differ mostly in labels a pod's selector ignores (hostname), so a pod steered to a
    zone is checked once per zone instead of once per node. Terms with ``matchFields`` read
    the node name, which every node has its own of: those are checked per node.
    """
    spec = pod.get("spec") or {}
    required = pod_node_affinity(spec).get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = (required or {}).get("nodeSelectorTerms") or ()
    if any(isinstance(t, Mapping) and t.get("matchFields") for t in terms):
        return lambda info: pod_matches_node(spec, info.node)
    keys = sorted(
        {str(k) for k in (spec.get("nodeSelector") or {})}
        | {
            str(r.get("key") or "")
            for t in terms
            if isinstance(t, Mapping)
            for r in t.get("matchExpressions") or ()
            if isinstance(r, Mapping)
        }
    )
    # A label's value is a string, so None (absent) is told from every value, "" included.
    answers: dict[object, bool] = {}
    if len(keys) == 1:  # a zone: the one label read without building a tuple (18 vs 42 us/pod)
        (key,) = keys

        def fit_one(info: NodeInfo) -> bool:
            read = (info.node["metadata"].get("labels") or {}).get(key)
            answer = answers.get(read)
            if answer is None:
                answer = answers[read] = pod_matches_node(spec, info.node)
            return answer

        return fit_one

    def fit(info: NodeInfo) -> bool:
        read = tuple(map((info.node["metadata"].get("labels") or {}).get, keys))
        answer = answers.get(read)
        if answer is None:
            answer = answers[read] = pod_matches_node(spec, info.node)
        return answer

    return fit


@dataclass(frozen=True)
class Decision:
    """Where a pod goes, or why it cannot go anywhere."""

    node: str | None
    message: str = ""
    rejected: tuple[tuple[str, Rejection], ...] = ()
    """Each node that refused the pod, and why (for preemption)."""


def schedule(pod: Mapping[str, Any], nodes: Iterable[NodeInfo]) -> Decision:
    """Filter every node, score the survivors, pick the best (ties by node name)."""
    infos = sorted(nodes, key=lambda n: n.name)
    if not infos:
        return Decision(None, "no nodes available to schedule pods")
    hard = spread_state(pod, infos, "DoNotSchedule")
    requests = pod_requests(pod.get("spec") or {})
    affinity = _affinity_state(pod, infos)
    node_fit = node_fit_for(pod)
    feasible: list[NodeInfo] = []
    rejections: list[tuple[str, Rejection]] = []
    for info in infos:
        rejection = filter_node(pod, info, hard, requests, affinity, node_fit)
        if rejection is None:
            feasible.append(info)
        else:
            rejections.append((info.name, rejection))
    if not feasible:
        return Decision(None, fit_error_message(len(infos), (r for _, r in rejections)),
                        tuple(rejections))
    # A pod nominated by a preemption goes to its node when it fits there.
    nominated = (pod.get("status") or {}).get("nominatedNodeName")
    if nominated and any(n.name == nominated for n in feasible):
        return Decision(str(nominated))
    if len(feasible) == 1:
        return Decision(feasible[0].name)
    scores = score_nodes(pod, feasible, requests, infos)
    best = min(feasible, key=lambda n: (-scores[n.name], n.name))
    return Decision(best.name)


__all__ = [
    "Decision",
    "NodeInfo",
    "Rejection",
    "filter_node",
    "fit_error_message",
    "pod_requests",
    "schedule",
    "score_nodes",
]
