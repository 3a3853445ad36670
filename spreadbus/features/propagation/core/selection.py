"""Which clusters a binding may use, in Karmada's order, and which of them it uses.

Read from Karmada's ``pkg/util/selector.go`` (``ClusterMatches``), the filter and score plugins
of ``pkg/scheduler/framework/plugins`` and ``pkg/scheduler/core/spreadconstraint``:

- an affinity matches a cluster unless ``exclude`` names it; then its label selector, its field
  selector (``provider`` and ``region`` as labels, ``zone`` against every zone of the cluster)
  and its ``clusterNames`` must all match, an empty part matching everything;
- filters, in the order of Karmada's plugin registry (the first failing one is the reason): a
  deleting cluster is never a candidate; a cluster that does not serve the template's API; an
  untolerated NoSchedule or NoExecute taint; the placement's affinity (with
  ``clusterAffinities``, the observed term and, for a workload, its overflow affinities); a
  cluster without the field a spread constraint spreads by; a cluster with a pending graceful
  eviction of this binding. A cluster already in ``spec.clusters`` passes the API and taint
  filters (the taint manager, not the scheduler, moves a binding off it);
- score: 100 for a cluster already in ``spec.clusters`` (locality), 0 otherwise;
- order: overflow tier, then score descending, then available replicas (allocatable plus what
  the binding holds there) descending, then name;
- spread constraints (ignored for static weights): by ``cluster``, the first ``maxGroups``, with
  the last slots swapped for larger clusters until the replicas fit; Duplicated ignores
  capacity there. By ``region`` (``spreadconstraint/select_clusters_by_region.go``,
  ``select_groups.go``): each region scored by how much of its share its best clusters can
  hold, a depth-first search for the region sets within the region bounds that hold at least
  the cluster ``minGroups`` clusters, the best by score, then cluster count, then discovery
  order (a strict prefix of it preferred), then each chosen region's first cluster and the best
  of the rest up to the cluster ``maxGroups``. Zone and provider constraints alone are refused,
  as Karmada refuses them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from kubesemantics.label_selector import SelectorError, from_label_selector
from kubesemantics.lenient_json import as_int, as_map, as_str
from kubesemantics.node_affinity import requirements_as_selector
from kubesemantics.tolerations import NO_EXECUTE, NO_SCHEDULE, untolerated_taint
from spreadbus.features.propagation.core.cluster import Cluster
from spreadbus.features.propagation.core.division import Strategy

LOCALITY_SCORE: Final = 100
OUTSIDE_TIERS: Final = 1000
MAX_INT32: Final = 2**31 - 1


class SelectionError(Exception):
    """No cluster fits (``no_fit``: Karmada's FitError, which clears ``spec.clusters``), or the
    spread constraints cannot be met (which leaves it)."""

    def __init__(self, message: str, *, no_fit: bool = False) -> None:
        super().__init__(message)
        self.no_fit = no_fit


class Detail(msgspec.Struct, frozen=True):
    name: str
    score: int
    tier: int
    allocatable: int
    available: int
    region: str = ""


def _zones_match(expression: Mapping[str, Any], zones: Sequence[str]) -> bool:
    operator = as_str(expression.get("operator"))
    values = [v for v in expression.get("values") or () if isinstance(v, str)]
    if operator == "In":
        return any(z in values for z in zones)
    if operator == "NotIn":
        return not any(z in values for z in zones)
    if operator == "Exists":
        return bool(zones)
    if operator == "DoesNotExist":
        return not zones
    return False


def cluster_matches(cluster: Cluster, affinity: Mapping[str, Any]) -> bool:
    """Karmada's ``ClusterMatches``: an unreadable selector matches nothing."""
    exclude = affinity.get("exclude")
    if isinstance(exclude, list) and cluster.name in exclude:
        return False
    label_selector = affinity.get("labelSelector")
    if label_selector is not None:
        try:
            if not isinstance(label_selector, Mapping) or not from_label_selector(
                    label_selector).matches(cluster.labels):
                return False
        except SelectorError:
            return False
    field_selector = affinity.get("fieldSelector")
    if field_selector is not None:
        expressions = as_map(field_selector).get("matchExpressions")
        others = []
        for expression in expressions if isinstance(expressions, list) else ():
            expression_map = as_map(expression)
            if as_str(expression_map.get("key")) == "zone":
                if not _zones_match(expression_map, cluster.zones):
                    return False
            else:
                others.append(expression_map)
        if others:
            fields = {k: v for k, v in (("provider", cluster.provider),
                                        ("region", cluster.region)) if v}
            try:
                if not requirements_as_selector(others).matches(fields):
                    return False
            except SelectorError:
                return False
    names = affinity.get("clusterNames")
    if isinstance(names, list) and names:
        return cluster.name in names
    return True


def observed_term(placement: Mapping[str, Any], affinity_name: str) -> Mapping[str, Any] | None:
    """The ``clusterAffinities`` term named ``affinity_name``."""
    terms = placement.get("clusterAffinities")
    for term in terms if isinstance(terms, list) else ():
        if as_str(as_map(term).get("affinityName")) == affinity_name:
            return as_map(term)
    return None


def _affinities(placement: Mapping[str, Any], affinity_name: str,
                workload: bool) -> list[Mapping[str, Any]] | None:
    """The affinities a cluster must match one of; None: every cluster matches."""
    if placement.get("clusterAffinity") is not None:
        return [as_map(placement.get("clusterAffinity"))]
    term = observed_term(placement, affinity_name)
    if term is None:
        return None
    found = [term]
    overflow = term.get("overflowAffinities")
    if workload and isinstance(overflow, list):
        found.extend(as_map(o) for o in overflow)
    return found


def overflow_tier(cluster: Cluster, placement: Mapping[str, Any], affinity_name: str) -> int:
    if placement.get("clusterAffinity") is not None:
        return 0
    term = observed_term(placement, affinity_name)
    if term is None:
        return 0 if not placement.get("clusterAffinities") else OUTSIDE_TIERS
    if cluster_matches(cluster, term):
        return 0
    overflow = term.get("overflowAffinities")
    for index, affinity in enumerate(overflow if isinstance(overflow, list) else ()):
        if cluster_matches(cluster, as_map(affinity)):
            return index + 1
    return OUTSIDE_TIERS


def _spread_fields(placement: Mapping[str, Any]) -> list[str]:
    constraints = placement.get("spreadConstraints")
    return [as_str(as_map(c).get("spreadByField")) or (
        "" if as_str(as_map(c).get("spreadByLabel")) else "cluster")
        for c in (constraints if isinstance(constraints, list) else ())]


def fits(cluster: Cluster, placement: Mapping[str, Any], *, affinity_name: str,
         api_version: str, kind: str, targets: Sequence[str], evicting: Sequence[str],
         workload: bool) -> str | None:
    """Why ``cluster`` is filtered out for the binding, or None when it passes."""
    if cluster.deleting:
        return "cluster is deleting"
    held = cluster.name in targets
    if not held and not cluster.serves(api_version, kind):
        return "cluster(s) did not have the API resource"
    if not held:
        tolerations = placement.get("clusterTolerations")
        taint = untolerated_taint(cluster.taints,
                                  [as_map(t) for t in tolerations]
                                  if isinstance(tolerations, list) else [],
                                  (NO_SCHEDULE, NO_EXECUTE))
        if taint is not None:
            return f"cluster(s) had untolerated taint {{{_taint_text(taint)}}}"
    affinities = _affinities(placement, affinity_name, workload)
    if affinities is not None and not any(cluster_matches(cluster, a) for a in affinities):
        return "cluster(s) did not match the placement cluster affinity constraint"
    for field in _spread_fields(placement):
        if field == "provider" and not cluster.provider:
            return "cluster(s) did not have provider property"
        if field == "region" and not cluster.region:
            return "cluster(s) did not have region property"
        if field == "zone" and not cluster.zones:
            return "cluster(s) did not have zones property"
    if cluster.name in evicting:
        return "cluster(s) is in the process of eviction"
    return None


def _taint_text(taint: Mapping[str, Any]) -> str:
    key = as_str(taint.get("key"))
    value = as_str(taint.get("value"))
    effect = as_str(taint.get("effect"))
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def details(clusters: Sequence[Cluster], placement: Mapping[str, Any], *, affinity_name: str,
            previous: Mapping[str, int], allocatable: Mapping[str, int]) -> list[Detail]:
    """The feasible clusters with their score, tier and capacity, in Karmada's order."""
    found = [Detail(name=c.name,
                    score=LOCALITY_SCORE if c.name in previous else 0,
                    tier=overflow_tier(c, placement, affinity_name),
                    allocatable=allocatable.get(c.name, 0),
                    available=allocatable.get(c.name, 0) + previous.get(c.name, 0),
                    region=c.region)
             for c in clusters]
    return sorted(found, key=lambda d: (d.tier, -d.score, -d.available, d.name))


def _ignores_spread(replica_scheduling: Mapping[str, Any] | None) -> bool:
    if replica_scheduling is None:
        return False
    if (as_str(replica_scheduling.get("replicaSchedulingType")) != "Divided"
            or as_str(replica_scheduling.get("replicaDivisionPreference")) != "Weighted"):
        return False
    preference = replica_scheduling.get("weightPreference")
    if preference is None:
        return True
    preference_map = as_map(preference)
    weights = preference_map.get("staticWeightList")
    return bool(isinstance(weights, list) and weights
                and not as_str(preference_map.get("dynamicWeight")))


def select(found: Sequence[Detail], placement: Mapping[str, Any], strategy: Strategy,
           replicas: int) -> list[Detail]:
    """The clusters the spread constraints keep."""
    constraints = placement.get("spreadConstraints")
    replica_scheduling = placement.get("replicaScheduling")
    if (not isinstance(constraints, list) or not constraints
            or _ignores_spread(as_map(replica_scheduling)
                               if replica_scheduling is not None else None)):
        return list(found)
    by_field = {f: as_map(c) for f, c in zip(_spread_fields(placement), constraints,
                                             strict=True)}
    if "region" in by_field:
        return _by_region(found, by_field, strategy, replicas)
    if "cluster" not in by_field:
        raise SelectionError("just support cluster and region spread constraint")
    constraint = by_field["cluster"]
    if len(found) < (as_int(constraint.get("minGroups")) or 0):
        raise SelectionError(
            "the number of feasible clusters is less than spreadConstraint.MinGroups")
    count = min(len(found), as_int(constraint.get("maxGroups")) or 0)
    if strategy is Strategy.DUPLICATED:
        return list(found[:count])
    chosen = list(found[:count])
    rest = list(found[count:])
    slot = len(chosen) - 1
    while sum(d.available for d in chosen) < replicas and slot >= 0:
        best = -1
        most = chosen[slot].available
        for i, other in enumerate(rest):
            if other.available > most:
                best, most = i, other.available
        if best >= 0:
            chosen[slot], rest[best] = rest[best], chosen[slot]
        slot -= 1
    if sum(d.available for d in chosen) < replicas:
        raise SelectionError(f"no enough resource when selecting {count} clusters")
    return chosen


_WEIGHT_UNIT: Final = 1000


def _group_score(members: Sequence[Detail], strategy: Strategy, replicas: int,
                 region_min: int, cluster_min: int) -> int:
    """``calcGroupScore``: how much of its share a region's best clusters hold, then their
    mean score."""
    if strategy is Strategy.DUPLICATED:
        valid = [d for d in members if d.available >= replicas]
        if not valid:
            return 0
        return len(valid) * _WEIGHT_UNIT + sum(d.score for d in valid) // len(valid)
    target = math.ceil(replicas / max(region_min, 1))
    need = max(cluster_min, region_min)
    total = score = count = 0
    for detail in members:
        total += detail.available
        score += detail.score
        count += 1
        if count >= need and total >= target:
            break
    if total < target:
        return total * _WEIGHT_UNIT + score // len(members)
    return target * _WEIGHT_UNIT + score // count


class Group(msgspec.Struct, frozen=True):
    name: str
    value: int
    weight: int


def select_groups(groups: list[Group], low: int, high: int, target: int) -> list[Group]:
    """``selectGroups``: every group set found depth first (smaller groups first) within the
    bounds whose values reach ``target``; the heaviest, then largest, then first found, and a
    strict prefix of the winner found later wins over it."""
    order = sorted(groups, key=lambda g: (g.value, -g.weight, g.name))
    paths: list[tuple[int, list[Group]]] = []
    path: list[Group] = []

    def visit(total: int, begin: int) -> None:
        if total >= target and low <= len(path) <= high:
            found = sorted(path, key=lambda g: (-g.weight, g.name))
            paths.append((len(paths) + 1, found))
            return
        if len(path) >= high:
            return
        for i in range(begin, len(order)):
            total += order[i].value
            path.append(order[i])
            visit(total, i + 1)
            if len(order) == low:
                break  # Karmada stops here without undoing the step
            total -= order[i].value
            path.pop()

    visit(0, 0)
    if not paths:
        return []
    ranked = sorted(paths, key=lambda p: (-sum(g.weight for g in p[1]),
                                          -sum(g.value for g in p[1]), p[0]))
    best = ranked[0][1]
    for _, other in ranked[1:]:
        if len(other) < len(best) and [g.name for g in best[:len(other)]] == [
                g.name for g in other]:
            best = other
    return best


def _by_region(found: Sequence[Detail], by_field: Mapping[str, Mapping[str, Any]],
               strategy: Strategy, replicas: int) -> list[Detail]:
    region = by_field["region"]
    cluster = by_field.get("cluster", {})
    region_min = as_int(region.get("minGroups")) or 0
    cluster_min = as_int(cluster.get("minGroups")) or 0
    members: dict[str, list[Detail]] = {}
    for detail in found:
        if detail.region:
            members.setdefault(detail.region, []).append(detail)
    if len(members) < region_min:
        raise SelectionError(
            "the number of feasible region is less than spreadConstraint.MinGroups")
    groups = [Group(name, len(ds), _group_score(ds, strategy, replicas, region_min,
                                                 cluster_min))
              for name, ds in members.items()]
    chosen = select_groups(groups, region_min, as_int(region.get("maxGroups")) or 0,
                            cluster_min)
    if not chosen:
        raise SelectionError(
            "the number of clusters is less than the cluster spreadConstraint.MinGroups")
    selected = [members[g.name][0] for g in chosen]
    rest = [d for g in chosen for d in members[g.name][1:]]
    wanted = min(len(rest) + len(selected), as_int(cluster.get("maxGroups")) or 0)
    if wanted > len(selected):
        rest.sort(key=lambda d: (d.tier, -d.score, -d.available, d.name))
        selected.extend(rest[:wanted - len(selected)])
    return selected
