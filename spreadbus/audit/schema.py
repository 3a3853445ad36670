"""The audit database's tables, and the features' parts of it, as one value. Pure.

The shared tables are those :mod:`spreadbus.audit.store` describes; a feature adds columns to
``pods`` (after the pod's owner), fills them from a pod's ``created`` point, reads the subsets of
its objects' statuses, and names what ``why`` and ``audit serve`` show of it
(:class:`~spreadbus.audit.hook.FeatureAudit`). The schema is built from the features it is given
(:meth:`AuditSchema.of`), so the audit names none of them; which features those are is the
caller's (:mod:`spreadbus.audit.registered` for the built-in ones).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from spreadbus.audit.hook import FeatureAudit, Governing

POINTS: Final = ("created", "bound", "ready", "unready", "deleting", "deleted")


class Audited(Protocol):
    """What the audit reads of a feature (:class:`spreadbus.engine.feature.Feature`)."""

    @property
    def status_history(self) -> tuple[tuple[str, str], ...]: ...

    @property
    def audit(self) -> FeatureAudit | None: ...


def _tables(hooks: Sequence[FeatureAudit]) -> dict[str, dict[str, Any]]:
    pod_columns = [c for hook in hooks for c in hook.pod_columns]
    return {
        "admissions": {
            "columns": {
                "seq": int, "ts": float, "cluster": str, "namespace": str, "pod_key": str,
                "generate_name": str, "request_uid": str, "workload": str, "target": str,
                "subset": str, "reason": str, "replicas": int, "version": str, "replica": str,
                "ledger_revision": int, "subsets": str,
            },
            "pk": "seq",
            "indexes": [("cluster", "namespace", "pod_key"), ("workload", "ts"), ("subset",)],
            "fts": ["reason"],
        },
        "admission_subsets": {
            "columns": {"admission_seq": int, "position": int, "name": str, "occupancy": int,
                        "subset_limit": int, "minimum": int, "schedulable": int, "chosen": int},
            "pk": ("admission_seq", "position"),
            "foreign_keys": [("admission_seq", "admissions", "seq")],
            "indexes": [("name",)],
        },
        "pod_events": {
            "columns": {"seq": int, "ts": float, "cluster": str, "namespace": str, "name": str,
                        "uid": str, "point": str, "node": str, "owner": str, "reason": str,
                        "resource_version": str},
            "pk": "seq",
            "foreign_keys": [("uid", "pods", "uid")],
            "indexes": [("namespace", "name"), ("uid",), ("point", "ts")],
            "fts": ["reason"],
        },
        "pods": {
            "columns": {
                "uid": str, "cluster": str, "namespace": str, "name": str, "owner": str,
                **dict.fromkeys(pod_columns, str),
                "subset": str, "admission_key": str, "node": str,
                "annotations": str, "end_reason": str, "created_deletion_cost": str,
                **{f"{point}_{part}": kind
                   for point in POINTS for part, kind in (("seq", int), ("ts", float))},
            },
            "pk": "uid",
            "indexes": [("namespace", "name"), ("cluster", "namespace", "admission_key"),
                        *(index for hook in hooks for index in hook.pod_indexes)],
        },
        "plans": {
            "columns": {"id": str, "seq": int, "ts": float, "cluster": str, "verb": str,
                        "api_group": str, "resource": str, "namespace": str, "name": str,
                        "uid": str, "rule": str, "reason": str, "patch": str, "causes": str,
                        "deletion_cost": str},
            "pk": "id",
            "indexes": [("resource", "namespace", "name"), ("uid",), ("seq",), ("rule",)],
            "fts": ["rule", "reason"],
        },
        "outcomes": {
            "columns": {"plan_id": str, "seq": int, "ts": float, "result": str,
                        "error_status": int, "error_reason": str, "error_message": str,
                        "attempts": int, "resource_version": str},
            "pk": "plan_id",
            "foreign_keys": [("plan_id", "plans", "id")],
            "indexes": [("result",), ("seq",)],
        },
        "status_changes": {
            "columns": {"seq": int, "ts": float, "cluster": str, "api_group": str,
                        "resource": str, "namespace": str, "name": str, "uid": str,
                        "generation": int, "resource_version": str, "status": str},
            "pk": "seq",
            "indexes": [("resource", "namespace", "name", "ts")],
        },
        "subset_counts": {
            "columns": {"status_seq": int, "position": int, "subset": str, "replicas": int,
                        "missing_replicas": int, "ready_replicas": int},
            "pk": ("status_seq", "position"),
            "foreign_keys": [("status_seq", "status_changes", "seq")],
            "indexes": [("subset",)],
        },
        "deletions": {
            "columns": {"seq": int, "ts": float, "cluster": str, "api_group": str,
                        "resource": str, "namespace": str, "name": str, "uid": str,
                        "resource_version": str},
            "pk": "seq",
            "indexes": [("resource", "namespace", "name", "ts")],
        },
        "unknown_messages": {
            "columns": {"seq": int, "subject": str, "type": str, "kind": str, "error": str,
                        "data": str},
            "pk": "seq",
        },
        "replay_position": {
            "columns": {"stream": str, "last_seq": int, "messages": int, "unknown": int,
                        "since": float, "until": float},
            "pk": "stream",
        },
    }


ORDER: Final = ("admissions", "admission_subsets", "pods", "pod_events", "plans", "outcomes",
                "status_changes", "subset_counts", "deletions", "unknown_messages",
                "replay_position")
"""The order the tables are made in."""


@dataclass(frozen=True)
class AuditSchema:
    hooks: tuple[FeatureAudit, ...]
    by_status: Mapping[tuple[str, str], FeatureAudit]
    """(group, resource) of a status recorded in the history -> the audit of its feature."""
    tables: Mapping[str, Mapping[str, Any]]

    @classmethod
    def of(cls, features: Iterable[Audited]) -> AuditSchema:
        """The schema of these features, in their order; a column, a ``why`` kind or a page
        two of them claim is refused (``ValueError``)."""
        chosen = [f for f in features if f.audit is not None]
        hooks = tuple(f.audit for f in chosen if f.audit is not None)
        for what, names in (
            ("pods column", [c for h in hooks for c in h.pod_columns]),
            ("why kind", [k for h in hooks for k in h.governing]),
            ("query", [q for h in hooks for q in h.queries]),
            ("page", [p for h in hooks for p in h.pages]),
        ):
            if twice := next((n for n in names if names.count(n) > 1), None):
                raise ValueError(f"audit {what} {twice!r} added by two features")
        shared = _tables(())["pods"]["columns"]
        if clash := next((c for h in hooks for c in h.pod_columns if c in shared), None):
            raise ValueError(f"audit pods column {clash!r} is the audit's own")
        by_status = {resource: f.audit for f in chosen if f.audit is not None
                     for resource in f.status_history}
        return cls(hooks, by_status, _tables(hooks))

    @property
    def governing(self) -> Mapping[str, Governing]:
        """``why`` kind -> what it reads, in feature order."""
        return {kind: g for hook in self.hooks for kind, g in hook.governing.items()}

    @property
    def pod_columns(self) -> tuple[str, ...]:
        return tuple(c for hook in self.hooks for c in hook.pod_columns)
