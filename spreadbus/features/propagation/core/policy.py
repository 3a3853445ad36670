"""A (Cluster)PropagationPolicy's placement as Karmada stores it, and when it changed.

Defaulting is what Karmada's CRD defaults and mutating webhooks add
(``pkg/webhook/propagationpolicy/mutating.go``, ``pkg/util/helper/policy.go``): a
``replicaScheduling`` without a type is ``Divided``, Divided without a preference is
``Weighted``; a spread constraint with neither field nor label spreads by ``cluster`` and
``minGroups`` 0 becomes 1; a PropagationPolicy's resource selectors get its namespace; an
application failover purged ``Gracefully`` waits 600 s by default and tolerates 300 s.

Whether the placement changed is Karmada's ``placementChanged`` (``pkg/scheduler/helper.go``):
against the placement the scheduler last applied (the ``policy.karmada.io/applied-placement``
annotation), where among ``clusterAffinities`` only the term the scheduler observes counts.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, Final

from kubesemantics.lenient_json import as_map, as_str

JSON = dict[str, Any]

APPLIED_PLACEMENT: Final = "policy.karmada.io/applied-placement"
DEFAULT_GRACE_SECONDS: Final = 600
DEFAULT_TOLERATION_SECONDS: Final = 300


def defaulted_spec(spec: Mapping[str, Any], namespace: str) -> JSON:
    """The policy's spec after Karmada's defaulting; ``namespace`` is a PropagationPolicy's
    (empty for a ClusterPropagationPolicy)."""
    out: JSON = copy.deepcopy(dict(spec))
    selectors = out.get("resourceSelectors")
    if namespace and isinstance(selectors, list):
        for selector in selectors:
            if isinstance(selector, dict) and not selector.get("namespace"):
                selector["namespace"] = namespace
    placement = out.get("placement")
    if isinstance(placement, dict):
        out["placement"] = defaulted_placement(placement)
    failover = out.get("failover")
    application = failover.get("application") if isinstance(failover, dict) else None
    if isinstance(application, dict):
        application.setdefault("purgeMode", "Gracefully")
        if application.get("purgeMode") == "Gracefully":
            application.setdefault("gracePeriodSeconds", DEFAULT_GRACE_SECONDS)
        conditions = application.setdefault("decisionConditions", {})
        if isinstance(conditions, dict):
            conditions.setdefault("tolerationSeconds", DEFAULT_TOLERATION_SECONDS)
    cluster = failover.get("cluster") if isinstance(failover, dict) else None
    if isinstance(cluster, dict):
        cluster.setdefault("purgeMode", "Gracefully")
    return out


def defaulted_placement(placement: Mapping[str, Any]) -> JSON:
    out: JSON = copy.deepcopy(dict(placement))
    scheduling = out.get("replicaScheduling")
    if isinstance(scheduling, dict):
        scheduling.setdefault("replicaSchedulingType", "Divided")
        if (scheduling.get("replicaSchedulingType") == "Divided"
                and not scheduling.get("replicaDivisionPreference")):
            scheduling["replicaDivisionPreference"] = "Weighted"
    constraints = out.get("spreadConstraints")
    if isinstance(constraints, list):
        for constraint in constraints:
            if not isinstance(constraint, dict):
                continue
            if not constraint.get("spreadByField") and not constraint.get("spreadByLabel"):
                constraint["spreadByField"] = "cluster"
            if not constraint.get("minGroups"):
                constraint["minGroups"] = 1
    return out


def canonical(value: Any) -> Any:
    """The value as Go's ``omitempty`` marshalling leaves it: empty strings, lists, maps,
    zeros, false and nulls dropped from objects, so two spellings of one placement compare
    equal."""
    if isinstance(value, Mapping):
        out = {k: canonical(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", 0, False, [], {})}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value


def applied_placement(annotations: Mapping[str, Any]) -> JSON | None:
    """The placement the scheduler last applied; None when it never did or it is unreadable."""
    text = annotations.get(APPLIED_PLACEMENT)
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _term(placement: Mapping[str, Any], name: str) -> Any:
    terms = placement.get("clusterAffinities")
    for term in terms if isinstance(terms, list) else ():
        if as_str(as_map(term).get("affinityName")) == name:
            return canonical(term)
    return None


def placement_changed(placement: Mapping[str, Any], annotations: Mapping[str, Any],
                      observed_affinity: str) -> bool:
    text = annotations.get(APPLIED_PLACEMENT)
    if not isinstance(text, str) or not text:
        return True
    try:
        applied = json.loads(text)
    except ValueError:
        return False  # Karmada logs the unreadable annotation and schedules nothing
    if not isinstance(applied, dict):
        return False
    now = canonical(defaulted_placement(placement))
    then = canonical(defaulted_placement(applied))
    if now == then:
        return False
    for key in ("clusterAffinity", "clusterTolerations", "spreadConstraints",
                "replicaScheduling"):
        if now.get(key) != then.get(key):
            return True
    if not observed_affinity:
        return True
    mine = _term(now, observed_affinity)
    theirs = _term(then, observed_affinity)
    return mine is None or theirs is None or mine != theirs


def placement_text(placement: Mapping[str, Any]) -> str:
    """The annotation the scheduler writes: the placement as compact JSON."""
    return json.dumps(canonical(placement), separators=(",", ":"))
