"""The replicas a binding holds member copies at while its schedule is reached in steps.

When a budget covers a propagated workload (:mod:`.covering_budget`), a copy whose share shrinks
gives up its replicas in steps (:mod:`.replica_steps`). The host's binding records, in the
annotation :data:`STEPPED_REPLICAS`, the replicas each such copy is held at for now (a JSON
object, cluster -> replicas, only the clusters held above their share); the planner patches a
copy to a held count only once the binding records it, and a member's actuator accepts a copy
whose replicas are its cluster's share in ``spec.clusters`` or the count the binding records
for its cluster (:func:`~.member_copy.follows`). Without a budget the annotation is absent and
every copy takes its share at once, as Karmada's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from kubesemantics.lenient_json import as_map

STEPPED_REPLICAS: Final = "propagation.spreadbus.io/stepped-replicas"


def recorded(binding: Mapping[str, Any]) -> dict[str, int]:
    """The held replicas ``binding`` records (none when the annotation is absent or not an
    object of non-negative counts)."""
    text = as_map(as_map(binding.get("metadata")).get("annotations")).get(STEPPED_REPLICAS)
    if not isinstance(text, str) or len(text) > 65536:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    out: dict[str, int] = {}
    for cluster, replicas in value.items():
        if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas >= 0:
            out[str(cluster)] = replicas
    return out


def text_of(held: Mapping[str, int]) -> str | None:
    """The annotation's value for ``held`` (None: nothing held, the annotation goes)."""
    return json.dumps(dict(sorted(held.items())), separators=(",", ":")) if held else None


def held_above(steps: Mapping[str, int], shares: Mapping[str, int]) -> dict[str, int]:
    """The clusters a step holds above their share."""
    return {c: r for c, r in sorted(steps.items()) if r > shares.get(c, 0)}
