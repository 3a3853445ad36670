"""The audit fold: one ``HISTORY`` message in, the database rows it adds out. Pure.

Each message becomes rows keyed by its stream sequence (or by what names it uniquely: a plan's
id, an outcome's plan, a pod's uid), so applying the rows of a stream prefix in sequence order
gives one database whatever else happened (:mod:`spreadbus.audit.store` skips any sequence it
already holds, which makes redelivery harmless). Two kinds of row:

- ``insert``: a fact of one message; a second row with the same key is ignored;
- ``fill``: one pod's summary, whose columns are filled by the first message that knows them
  (``created``, ``bound``, ``deleted`` ...) and never overwritten, so a restarted watcher's
  repeated ``created`` changes nothing.

What a feature adds (a pod's placement from its annotations, the subsets of its status) comes
from its part of the schema (:mod:`spreadbus.audit.schema`).

A message this code cannot decode (a newer type, a malformed body) becomes an
``unknown_messages`` row holding it raw; the store counts it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, NamedTuple

import msgspec

from events.codec import Undecodable, decode
from events.messages import (
    Admission,
    Event,
    Outcome,
    Plan,
    PodLifecycle,
    StatusChange,
)
from spreadbus.audit.hook import SubsetCount
from spreadbus.audit.schema import AuditSchema

DELETION_COST_ANNOTATION: Final = "controller.kubernetes.io/pod-deletion-cost"

_JSON: Final = msgspec.json.Encoder(order="sorted")


class Row(NamedTuple):
    table: str
    values: dict[str, Any]
    mode: Literal["insert", "fill"] = "insert"


def as_json(value: Any) -> str:
    """A JSON column's text: keys sorted, so equal values are equal text."""
    return _JSON.encode(value).decode()


def fold(seq: int, subject: str, data: bytes, schema: AuditSchema) -> list[Row]:
    """The rows one message at stream sequence ``seq`` adds."""
    event = decode(data)
    if isinstance(event, Undecodable):
        return [Row("unknown_messages", {
            "seq": seq, "subject": subject, "type": event.type, "kind": event.kind,
            "error": event.error, "data": bytes(data).decode("utf-8", "replace"),
        })]
    return fold_event(seq, event, schema)


def fold_event(seq: int, event: Event, schema: AuditSchema) -> list[Row]:
    if isinstance(event, Admission):
        return _admission(seq, event)
    if isinstance(event, PodLifecycle):
        return _pod(seq, event, schema)
    if isinstance(event, Plan):
        return [_plan(seq, event)]
    if isinstance(event, Outcome):
        return [_outcome(seq, event)]
    if isinstance(event, StatusChange):
        return _status(seq, event, schema)
    return []  # observations and sync markers belong to KUBE, not to the audit log


def _admission(seq: int, a: Admission) -> list[Row]:
    rows = [Row("admissions", {
        "seq": seq, "ts": a.ts, "cluster": a.cluster, "namespace": a.namespace,
        "pod_key": a.pod_name, "generate_name": a.generate_name, "request_uid": a.request_uid,
        "workload": a.workload, "target": a.target, "subset": a.subset or None,
        "reason": a.reason, "replicas": a.replicas, "version": a.version,
        "replica": a.replica, "ledger_revision": a.ledger_revision,
        "subsets": as_json([msgspec.to_builtins(s) for s in a.subsets]),
    })]
    rows += [
        Row("admission_subsets", {
            "admission_seq": seq, "position": i, "name": s.name, "occupancy": s.occupancy,
            "subset_limit": s.limit, "minimum": s.minimum, "schedulable": int(s.schedulable),
            "chosen": int(s.name == a.subset),
        })
        for i, s in enumerate(a.subsets)
    ]
    return rows


def _pod(seq: int, p: PodLifecycle, schema: AuditSchema) -> list[Row]:
    summary: dict[str, Any] = {
        "uid": p.uid, "cluster": p.cluster, "namespace": p.namespace, "name": p.name,
        "owner": p.owner or None, f"{p.point}_seq": seq, f"{p.point}_ts": p.ts,
    }
    if p.point == "bound":
        summary["node"] = p.node
    if p.point in ("deleting", "deleted") and p.reason:
        summary["end_reason"] = p.reason
    if p.point == "created":
        for hook in schema.hooks:
            if hook.pod_created is not None:
                summary.update(hook.pod_created(p))
        summary.update(created_deletion_cost=p.annotations.get(DELETION_COST_ANNOTATION),
                       annotations=as_json(p.annotations))
    return [
        Row("pod_events", {
            "seq": seq, "ts": p.ts, "cluster": p.cluster, "namespace": p.namespace,
            "name": p.name, "uid": p.uid, "point": p.point, "node": p.node or None,
            "owner": p.owner or None, "reason": p.reason, "resource_version": p.resource_version,
        }),
        Row("pods", summary, "fill"),
    ]


def _deletion_cost(plan: Plan) -> str | None:
    if plan.target.resource != "pods" or not isinstance(plan.patch, dict):
        return None
    annotations = (plan.patch.get("metadata") or {}).get("annotations") or {}
    if not isinstance(annotations, dict) or DELETION_COST_ANNOTATION not in annotations:
        return None
    value = annotations[DELETION_COST_ANNOTATION]
    return None if value is None else str(value)


def _plan(seq: int, p: Plan) -> Row:
    t = p.target
    return Row("plans", {
        "id": p.id, "seq": seq, "ts": p.ts, "cluster": p.cluster, "verb": p.verb,
        "api_group": t.group, "resource": t.resource, "namespace": t.namespace, "name": t.name,
        "uid": t.uid or None, "rule": p.rule, "reason": p.reason,
        "patch": None if p.patch is None else as_json(p.patch),
        "causes": as_json(p.causes), "deletion_cost": _deletion_cost(p),
    })


def _outcome(seq: int, o: Outcome) -> Row:
    error = o.error
    return Row("outcomes", {
        "plan_id": o.plan_id, "seq": seq, "ts": o.ts, "result": o.result,
        "error_status": error.status if error else None,
        "error_reason": error.reason if error else None,
        "error_message": error.message if error else None,
        "attempts": o.attempts, "resource_version": o.resource_version,
    })


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def subset_counts(status: Mapping[str, Any]) -> list[SubsetCount]:
    """Each subset's counts in a status that lists them as Kruise's placement kinds do
    (``subsetStatuses`` entries, and ``subsetReplicas`` by name for the subsets not in them), in
    the order the status lists them: a feature whose status does names this function as its
    ``FeatureAudit.subset_counts``."""
    counts: dict[str, SubsetCount] = {}
    for entry in status.get("subsetStatuses") or ():
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            name = entry["name"]
            counts[name] = SubsetCount(name, _int(entry.get("replicas")),
                                       _int(entry.get("missingReplicas")),
                                       _int(entry.get("readyReplicas")))
    replicas_by_subset = status.get("subsetReplicas")
    if isinstance(replicas_by_subset, dict):
        for name, replicas in replicas_by_subset.items():
            if isinstance(name, str) and name not in counts and _int(replicas) is not None:
                counts[name] = SubsetCount(name, _int(replicas), None, None)
    return list(counts.values())


def _status(seq: int, s: StatusChange, schema: AuditSchema) -> list[Row]:
    if s.deleted:
        return [Row("deletions", {
            "seq": seq, "ts": s.ts, "cluster": s.cluster, "api_group": s.group,
            "resource": s.resource, "namespace": s.namespace, "name": s.name, "uid": s.uid,
            "resource_version": s.resource_version,
        })]
    rows = [Row("status_changes", {
        "seq": seq, "ts": s.ts, "cluster": s.cluster, "api_group": s.group,
        "resource": s.resource, "namespace": s.namespace, "name": s.name, "uid": s.uid,
        "generation": s.generation, "resource_version": s.resource_version,
        "status": as_json(s.status),
    })]
    hook = schema.by_status.get((s.group, s.resource))
    if hook is not None and hook.subset_counts is not None:
        rows += [
            Row("subset_counts", {"status_seq": seq, "position": i, **count._asdict()})
            for i, count in enumerate(hook.subset_counts(s.status))
        ]
    return rows
