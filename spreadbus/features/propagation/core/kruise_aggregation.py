"""A member's CloneSet or UnitedDeployment read back into the host, as Karmada's third-party
interpreter does.

Read from Karmada's ``pkg/resourceinterpreter/default/thirdparty/resourcecustomizations/
apps.kruise.io/v1alpha1/{CloneSet,UnitedDeployment}/customizations.yaml`` (``statusReflection``,
``healthInterpretation``, ``statusAggregation``):

- a CloneSet copy reflects its replica counts, revisions, ``observedGeneration`` and
  ``labelSelector``; the template's status is their sum, and it takes the revisions, the label
  selector and the ``observedGeneration`` of the last copy that reports one (the member's
  generation, not the template's: Karmada's customization does so), the template's generation
  when none does;
- a UnitedDeployment copy reflects its replica counts, ``observedGeneration``, conditions, its
  own generation and the template generation it was made from; the template's status is the
  sum, its ``observedGeneration`` the template's generation once every copy is current (else it
  stays), and its conditions the copies' merged by type, the last copy's winning (listed by type:
  Karmada's order is a Lua table's, unspecified);
- either is healthy once its controller observed its generation, every replica it asks for
  (when it says) is updated, and every updated replica is available; ``Unknown`` where
  Karmada's script fails on a count the copy does not report (a CloneSet without a status).

A field the copy does not report is left out of what it reflects, as the Lua scripts leave it
nil; a count it does not report counts as 0 in the sum.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubesemantics.lenient_json import as_int, as_map, as_str

JSON = dict[str, Any]

GROUP: Final = "apps.kruise.io"
CLONESET: Final = (GROUP, "CloneSet")
UNITED_DEPLOYMENT: Final = (GROUP, "UnitedDeployment")
KINDS: Final = frozenset({CLONESET, UNITED_DEPLOYMENT})

_CLONESET_COUNTS: Final = ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                           "updatedReadyReplicas", "expectedUpdatedReplicas")
_CLONESET_LAST: Final = ("updateRevision", "currentRevision", "labelSelector")
_UD_COUNTS: Final = ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                     "unavailableReplicas")


def reflected(group_kind: tuple[str, str], obj: Mapping[str, Any],
              template_generation: int | None) -> JSON:
    """What the binding keeps of one copy's status; ``template_generation``: the one the copy
    says it was made from (None: it does not say)."""
    status = obj.get("status")
    if not isinstance(status, Mapping):
        return {}
    if group_kind == CLONESET:
        keys: tuple[str, ...] = (*_CLONESET_COUNTS, *_CLONESET_LAST, "observedGeneration")
        return {k: copy.deepcopy(status[k]) for k in keys if status.get(k) is not None}
    out = {k: copy.deepcopy(status[k]) for k in (*_UD_COUNTS, "observedGeneration", "conditions")
           if status.get(k) is not None}
    metadata = obj.get("metadata")
    if isinstance(metadata, Mapping):
        if metadata.get("generation") is not None:
            out["generation"] = metadata["generation"]
        if template_generation is not None:
            out["resourceTemplateGeneration"] = template_generation
    return out


def healthy(group_kind: tuple[str, str], obj: Mapping[str, Any]) -> bool | None:
    """None where Karmada's script fails (a count it compares is missing), which Karmada
    reports as health ``Unknown``."""
    status, spec, metadata = obj.get("status"), obj.get("spec"), obj.get("metadata")
    if group_kind == UNITED_DEPLOYMENT and not (isinstance(status, Mapping)
                                                and isinstance(spec, Mapping)
                                                and isinstance(metadata, Mapping)):
        return False
    if not isinstance(status, Mapping):
        return None
    if as_int(status.get("observedGeneration")) != as_int(as_map(metadata).get("generation")):
        return False
    if not isinstance(spec, Mapping):
        return None
    updated = as_int(status.get("updatedReplicas"))
    wanted = as_int(spec.get("replicas"))
    if wanted is not None:
        if updated is None:
            return None
        if updated < wanted:
            return False
    available = as_int(status.get("availableReplicas"))
    if available is None or updated is None:
        return None
    return available >= updated


def aggregated(group_kind: tuple[str, str], template: Mapping[str, Any],
               items: Sequence[Mapping[str, Any]]) -> JSON:
    """The template's status fields the copies' reflected statuses set."""
    generation = as_int(as_map(template.get("metadata")).get("generation")) or 0
    statuses = [as_map(entry.get("status")) for entry in items]
    if group_kind == CLONESET:
        out: JSON = {k: sum(as_int(s.get(k)) or 0 for s in statuses) for k in _CLONESET_COUNTS}
        observed: Any = generation
        last: dict[str, Any] = dict.fromkeys(_CLONESET_LAST, "")
        for status in statuses:
            for key in _CLONESET_LAST:
                if as_str(status.get(key)):
                    last[key] = status[key]
            if status.get("observedGeneration") not in (None, ""):
                observed = status["observedGeneration"]
        return {"observedGeneration": observed, **out, **last}
    out = {k: sum(as_int(s.get(k)) or 0 for s in statuses) for k in _UD_COUNTS}
    current = sum(1 for s in statuses
                  if (as_int(s.get("resourceTemplateGeneration")) or 0) == generation
                  and (as_int(s.get("generation")) or 0) == (as_int(s.get("observedGeneration"))
                                                            or 0))
    old = as_int(as_map(template.get("status")).get("observedGeneration")) or 0
    out["observedGeneration"] = generation if current == len(statuses) else old
    conditions: dict[str, Any] = {}
    for status in statuses:
        listed = status.get("conditions")
        for condition in listed if isinstance(listed, list) else []:
            if isinstance(condition, Mapping):
                conditions[as_str(condition.get("type"))] = copy.deepcopy(dict(condition))
    if conditions:
        out["conditions"] = [conditions[t] for t in sorted(conditions)]
    return out
