"""What Kruise v1.9.0's mutating webhook does to a UnitedDeployment on CREATE and UPDATE.

- ``spec.replicas`` is NOT defaulted: absent means "the subsets' own replicas decide" (v1.9.0; a
  later Kruise defaults it to 1 again, which rejects "every subset fixed, no total").
- ``spec.revisionHistoryLimit`` becomes 10, ``spec.updateStrategy.type`` ``Manual``, and a
  Manual strategy without ``manualUpdate`` gets ``manualUpdate: {}``.
- The pod defaults (:mod:`kubesemantics.pod_defaults`, Kruise's ``Always`` pull policy for
  regular containers) go into ``statefulSetTemplate`` only, and its claim templates get a
  ``Pending`` status phase; on an UPDATE only when ``spec.template`` changed, so a template
  written before is not rewritten by an unrelated change. The other three templates are left
  as written (Kruise does the same).
- When some subset has ``minReplicas`` or ``maxReplicas`` and none has ``replicas``, every
  subset without ``minReplicas`` gets ``minReplicas: 0``.
- ``status`` is dropped: a client cannot set it through the main resource.

Values of the wrong JSON type are left as they are (validation reports them); nothing raises.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubesemantics import json_patch
from kubesemantics.pod_defaults import default_claim_template, default_pod_spec
from spreadbus.features.uniteddeployment.core.model import MANUAL

JSON = dict[str, Any]
DEFAULT_REVISION_HISTORY_LIMIT = 10


def _child(parent: JSON, key: str) -> JSON | None:
    """``parent[key]`` as an object, created when absent; ``None`` when it holds something else."""
    value = parent.get(key)
    if value is None:
        value = parent[key] = {}
    return value if isinstance(value, dict) else None


def _template_changed(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    if old is None:
        return True
    new_spec, old_spec = obj.get("spec"), old.get("spec")
    new_t = new_spec.get("template") if isinstance(new_spec, Mapping) else None
    old_t = old_spec.get("template") if isinstance(old_spec, Mapping) else None
    return bool(new_t != old_t)


def _default_statefulset_template(template: JSON) -> None:
    workload = template.get("statefulSetTemplate")
    if not isinstance(workload, dict):
        return
    spec = _child(workload, "spec")
    pod_template = _child(spec, "template") if spec is not None else None
    pod_spec = _child(pod_template, "spec") if pod_template is not None else None
    if pod_spec is not None:
        default_pod_spec(pod_spec, always_pull=True)
    claims = spec.get("volumeClaimTemplates") if spec is not None else None
    if isinstance(claims, list):
        for claim in claims:
            if isinstance(claim, dict):
                default_claim_template(claim)


def _default_min_replicas(topology: object) -> None:
    subsets = topology.get("subsets") if isinstance(topology, dict) else None
    if not isinstance(subsets, list):
        return
    entries = [s for s in subsets if isinstance(s, dict)]
    fixed = any(s.get("replicas") is not None for s in entries)
    elastic = any(
        s.get("minReplicas") is not None or s.get("maxReplicas") is not None for s in entries
    )
    if elastic and not fixed:
        for subset in entries:
            if subset.get("minReplicas") is None:
                subset["minReplicas"] = 0


def default_uniteddeployment(obj: Mapping[str, Any], *,
                             old: Mapping[str, Any] | None = None) -> JSON:
    """The object as the mutating webhook would admit it (a new dict; ``obj`` is untouched).

    ``old`` is the stored object on an UPDATE, ``None`` on a CREATE.
    """
    out: JSON = copy.deepcopy(dict(obj))
    out.pop("status", None)
    spec = _child(out, "spec")
    if spec is None:
        return out
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = DEFAULT_REVISION_HISTORY_LIMIT
    strategy = _child(spec, "updateStrategy")
    if strategy is not None:
        if not strategy.get("type"):
            strategy["type"] = MANUAL
        if strategy.get("type") == MANUAL and strategy.get("manualUpdate") is None:
            strategy["manualUpdate"] = {}
    template = spec.get("template")
    if isinstance(template, dict) and _template_changed(out, old):
        _default_statefulset_template(template)
    _default_min_replicas(spec.get("topology"))
    return out


def defaulting_patch(obj: Mapping[str, Any], *,
                     old: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The JSON Patch that turns ``obj`` into :func:`default_uniteddeployment`'s result."""
    return json_patch.diff(obj, default_uniteddeployment(obj, old=old))
