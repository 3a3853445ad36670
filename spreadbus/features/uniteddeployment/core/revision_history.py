"""The UD's ControllerRevisions: which is current, which is updated, what to create or remove.

The history is the namespace's ControllerRevisions whose controller owner reference is the UD,
oldest ``.revision`` first (ties by name). In Kruise's order:

1. History beyond ``revisionHistoryLimit`` (10 when absent; Kruise relies on the webhook's
   default) is cleaned first: the oldest entries go, except the revisions named by
   ``status.currentRevision`` and ``status.updateStatus.updatedRevision``; as in Kruise, a kept
   old entry still leaves the list the rest of the round reads.
2. The updated revision is the one for ``spec.template`` (:func:`.revision.ud_revision_name` with
   ``status.collisionCount``). If the newest entry holds the same data it is reused; if an older
   one does, it is brought forward (a rollback: its ``.revision`` becomes max + 1); otherwise it
   is created with ``.revision`` max + 1. A namespace revision of that name with other data is a
   hash collision: the collision count goes up and the name is computed again; the raised count
   is written to the status so the next rounds find the same name.
3. The current revision is the history entry named ``status.currentRevision``, else the updated
   one.

Revision labels are the template's metadata labels for every kind plus the hash label; Kruise
leaves CloneSet templates out and so never finds, cleans or resumes their history, which is not
copied here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubesemantics.lenient_json import as_int, as_map, as_str
from kubesemantics.timestamps import parse_time
from spreadbus.features.uniteddeployment.core.model import UnitedDeployment
from spreadbus.features.uniteddeployment.core.rendering import controller_reference
from spreadbus.features.uniteddeployment.core.revision import (
    HASH_LABEL,
    revision_data,
    revision_hash,
    revision_name,
)
from spreadbus.features.uniteddeployment.core.subset_workloads import (
    name_of,
    namespace_of,
    owned_by_ud,
    template_key,
)

JSON = dict[str, Any]
DEFAULT_REVISION_HISTORY_LIMIT = 10
_MAX_COLLISIONS = 1000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class RevisionPlan:
    current: str
    updated: str
    collision_count: int
    creates: list[JSON] = field(default_factory=list)
    updates: list[tuple[str, int]] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)


def _revision_number(revision: Mapping[str, Any]) -> int:
    return as_int(revision.get("revision")) or 0


def history(
    ud: UnitedDeployment, revisions: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The UD's own revisions, oldest first."""
    mine = [
        r
        for r in revisions
        if as_str(r.get("kind")) == "ControllerRevision"
        and namespace_of(r) == ud.namespace
        and owned_by_ud(r, ud)
    ]
    return sorted(
        mine,
        key=lambda r: (
            _revision_number(r),
            parse_time(as_map(r.get("metadata")).get("creationTimestamp")) or _EPOCH,
            name_of(r),
        ),
    )


def _same_data(revision: Mapping[str, Any], data: Any) -> bool:
    stored = revision.get("data")
    if isinstance(stored, str):
        try:
            stored = json.loads(stored)
        except ValueError:
            return False
    return bool(stored == data)


def _template_labels(ud: UnitedDeployment) -> dict[str, str]:
    key = template_key(ud)
    if key is None:
        return {}
    labels = as_map(as_map(as_map(ud.template.get(key)).get("metadata")).get("labels"))
    return {k: v for k, v in labels.items() if isinstance(v, str)}


def new_revision(ud: UnitedDeployment, *, number: int, collision_count: int) -> JSON:
    """The ControllerRevision recording ``spec.template``, named and numbered."""
    data = revision_data(ud.template)
    hash_ = revision_hash(data, collision_count)
    metadata: JSON = {
        "name": revision_name(ud.name, hash_),
        "namespace": ud.namespace,
        "labels": {**_template_labels(ud), HASH_LABEL: hash_},
        "ownerReferences": [controller_reference(ud)],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": metadata,
        "data": json.loads(data),
        "revision": number,
    }


def plan_revisions(
    ud: UnitedDeployment,
    revisions: Sequence[Mapping[str, Any]],
    *,
    updated_in_status: str = "",
) -> RevisionPlan:
    """Current and updated revision, and the ControllerRevision writes that make them so."""
    ordered = history(ud, revisions)
    limit = ud.revision_history_limit
    limit = DEFAULT_REVISION_HISTORY_LIMIT if limit is None else limit
    excess = len(ordered) - limit
    deletes: list[str] = []
    if excess > 0:
        live = {ud.status.current_revision, updated_in_status}
        for index, revision in enumerate(ordered):
            if index >= excess:
                break
            if name_of(revision) in live:
                continue
            deletes.append(name_of(revision))
        # Kruise drops the oldest entries from its list even when they were kept as live.
        ordered = ordered[excess:]

    next_number = max((_revision_number(r) for r in ordered), default=0) + 1
    data = json.loads(revision_data(ud.template))
    collision_count = ud.status.collision_count or 0
    creates: list[JSON] = []
    updates: list[tuple[str, int]] = []
    equal = [r for r in ordered if _same_data(r, data)]
    if equal and equal[-1] is ordered[-1]:
        updated = name_of(ordered[-1])
    elif equal:
        updated = name_of(equal[-1])
        updates.append((updated, next_number))
    else:
        by_name = {
            name_of(r): r
            for r in revisions
            if as_str(r.get("kind")) == "ControllerRevision" and namespace_of(r) == ud.namespace
        }
        for _ in range(_MAX_COLLISIONS):
            candidate = new_revision(ud, number=next_number, collision_count=collision_count)
            clash = by_name.get(name_of(candidate))
            if clash is None:
                creates.append(candidate)
                break
            if _same_data(clash, data):
                break
            collision_count += 1
        updated = name_of(candidate)

    names = {name_of(r) for r in ordered}
    current = ud.status.current_revision if ud.status.current_revision in names else updated
    return RevisionPlan(
        current=current,
        updated=updated,
        collision_count=collision_count,
        creates=creates,
        updates=updates,
        deletes=deletes,
    )
