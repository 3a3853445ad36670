"""``spreadbus why``: the story of a pod, or a governing object's subsets, from the audit database.

The queries read the tables :mod:`spreadbus.audit.store` describes and return plain dicts (the
``-o json`` answer); :func:`render_pod` and :func:`render_counts` turn those into text, with no
I/O. An object deleted by the time asked about says so, and when, first. Every step names its
time and its ``HISTORY`` stream sequence, so it can be looked up (``nats stream get HISTORY
<seq>``).

What a feature tells of its own (the object that placed a pod, the kinds ``why`` explains) comes
from its part of the schema (:mod:`spreadbus.audit.schema`), the built-in features' by default.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any, Final

from spreadbus.audit.registered import or_registered
from spreadbus.audit.schema import AuditSchema
from spreadbus.audit.times import show_time

Story = dict[str, Any]

_FOREVER: Final = float("inf")


def governing_kinds(schema: AuditSchema | None = None) -> tuple[str, ...]:
    """The kinds ``why`` explains besides pods."""
    return tuple(or_registered(schema).governing)


def _rows(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
    cursor = conn.execute(sql, args)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _has_table(conn: sqlite3.Connection, table: str) -> bool:
    """Whether the database has ``table`` (one folded by an older release may not)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                         (table,)).fetchone()
    return found is not None


def pod_story(conn: sqlite3.Connection, namespace: str, name: str,
              at: float | None = None, schema: AuditSchema | None = None) -> Story | None:
    """Everything the log holds about the pod ``namespace/name`` (the one alive at ``at``, or
    the latest of that name); None when the log has no such pod."""
    limit = _FOREVER if at is None else at
    pods = _rows(conn, "SELECT * FROM pods WHERE namespace = ? AND name = ? "
                       "AND COALESCE(created_ts, bound_ts, deleted_ts, 0) <= ? "
                       "ORDER BY COALESCE(created_seq, bound_seq, deleted_seq) DESC LIMIT 1",
                 (namespace, name, limit))
    if not pods:
        return None
    pod = pods[0]
    pod.pop("annotations", None)
    deleted = None
    if pod.get("deleted_ts") is not None and pod["deleted_ts"] <= limit:
        deleted = {"seq": pod["deleted_seq"], "ts": pod["deleted_ts"]}
    story: Story = {"pod": pod, "deleted": deleted, "admission": None, "events": [],
                    "plans": []}
    admission = _admission_of(conn, pod, limit, or_registered(schema))
    if admission is not None:
        admission["subsets"] = _rows(
            conn, "SELECT name, occupancy, subset_limit, minimum, schedulable, chosen "
                  "FROM admission_subsets WHERE admission_seq = ? ORDER BY position",
            (admission["seq"],))
        story["admission"] = admission
    story["events"] = _rows(conn, "SELECT seq, ts, point, node, reason FROM pod_events "
                                  "WHERE uid = ? AND ts <= ? ORDER BY seq", (pod["uid"], limit))
    story["plans"] = _rows(
        conn,
        "SELECT p.seq, p.ts, p.id, p.verb, p.rule, p.reason, p.deletion_cost, "
        "o.seq AS outcome_seq, o.ts AS outcome_ts, o.result, o.error_reason, o.error_message "
        "FROM plans p LEFT JOIN outcomes o ON o.plan_id = p.id "
        "WHERE p.resource = 'pods' AND p.api_group = '' AND p.cluster = ? AND p.namespace = ? "
        "AND p.name = ? AND (p.uid IS NULL OR p.uid = ?) AND p.ts <= ? ORDER BY p.seq",
        (pod["cluster"], namespace, name, pod["uid"], limit))
    return story


def _admitted_by(pod: Mapping[str, Any], schema: AuditSchema) -> tuple[str, str | None] | None:
    return next((by for hook in schema.hooks if hook.admitted_by is not None
                 if (by := hook.admitted_by(pod)) is not None), None)


def _admission_of(conn: sqlite3.Connection, pod: Mapping[str, Any],
                  limit: float, schema: AuditSchema) -> dict[str, Any] | None:
    """The admission that placed the pod: by the reservation key its annotation names, else
    (a pod admitted into an unlimited subset carries no key) the latest admission into the
    same subset of the same workload for its ``generateName`` at or before the pod's
    creation."""
    if not pod.get("admission_key"):
        return None
    found = _rows(conn, "SELECT * FROM admissions WHERE cluster = ? AND namespace = ? "
                        "AND pod_key = ? AND ts <= ? ORDER BY seq DESC LIMIT 1",
                  (pod["cluster"], pod["namespace"], pod["admission_key"], limit))
    if found:
        return {**found[0], "matched_by": "key"}
    by = _admitted_by(pod, schema)
    if by is None:
        return None
    found = _rows(conn, "SELECT * FROM admissions WHERE cluster = ? AND namespace = ? "
                        "AND workload = ? AND subset = ? AND generate_name != '' "
                        "AND substr(?, 1, length(generate_name)) = generate_name "
                        "AND ts <= ? ORDER BY seq DESC LIMIT 1",
                  (pod["cluster"], pod["namespace"], by[0], by[1], pod["name"],
                   min(limit, pod.get("created_ts") or limit)))
    return {**found[0], "matched_by": "time"} if found else None


def _count(limit: int | None, occupancy: int) -> str:
    return f"{occupancy}/{'unlimited' if limit is None else limit}"


def _at(row: Mapping[str, Any], seq_key: str = "seq", ts_key: str = "ts") -> str:
    return f"{show_time(row[ts_key])} (seq {row[seq_key]})"


def render_pod(story: Story, schema: AuditSchema | None = None) -> str:
    """The story as lines a person reads top to bottom, oldest first."""
    schema = or_registered(schema)
    pod = story["pod"]
    lines = [f"pod {pod['namespace']}/{pod['name']} (uid {pod['uid']}, cluster {pod['cluster']})"
             + (f", deleted at {_at(story['deleted'])}" if story.get("deleted") else "")]
    if pod.get("owner"):
        lines.append(f"  workload      {pod['owner']}")
    lines += [line for hook in schema.hooks if hook.pod_lines is not None
              for line in hook.pod_lines(pod)]
    admission = story.get("admission")
    if admission:
        where = admission["subset"] or "no subset"
        lines.append(f"  admitted      {_at(admission)} into {where}"
                     f" by webhook {admission['replica'] or '?'}"
                     + (f", ledger revision {admission['ledger_revision']}"
                        if admission["ledger_revision"] else ""))
        if admission["reason"]:
            lines.append(f"    why         {admission['reason']}")
        if admission.get("matched_by") == "time":
            lines.append("    (the latest admission into this subset before the pod was "
                         "created: a pod of an unlimited subset carries no admission key)")
        if admission["subsets"]:
            held = ", ".join(
                f"{s['name']} {_count(s['subset_limit'], s['occupancy'])}"
                + ("" if s["schedulable"] else " unschedulable")
                for s in admission["subsets"])
            lines.append(f"    subsets     {held} (before this pod)")
    elif _admitted_by(pod, schema) is not None:
        lines.append("  admitted      (no admission in the log's window)")
    steps: list[tuple[int, str]] = []
    for event in story["events"]:
        detail = ""
        if event["point"] == "bound":
            detail = f" to node {event['node']}"
        elif event["point"] == "created" and pod.get("created_deletion_cost") is not None:
            detail = f" with deletion cost {pod['created_deletion_cost']} from admission"
        elif event["reason"]:
            detail = f": {event['reason']}"
        steps.append((event["seq"], f"  {event['point']:<13} {_at(event)}{detail}"))
    for plan in story["plans"]:
        if plan["deletion_cost"] is not None:
            what = f"deletion cost {plan['deletion_cost']}"
        elif plan["verb"] == "evict":
            what = "evicted"
        else:
            what = plan["verb"]
        outcome = (f"{plan['result']} {_at(plan, 'outcome_seq', 'outcome_ts')}"
                   if plan["result"] else "no outcome yet")
        if plan["error_reason"]:
            outcome += f" ({plan['error_reason']}: {plan['error_message']})"
        steps.append((plan["seq"], f"  {what:<13} {_at(plan)} by plan {plan['id'][:12]} "
                                   f"(rule {plan['rule']}: {plan['reason']}), {outcome}"))
    lines += [text for _, text in sorted(steps)]
    return "\n".join(lines)


def subset_counts_at(conn: sqlite3.Connection, kind: str, namespace: str, name: str,
                     at: float | None = None, schema: AuditSchema | None = None) -> Story | None:
    """A governing object's subsets at ``at``: its status then, and the pods the log shows
    alive in each subset then (a kind that places pods); ``deleted`` when and where it was
    deleted, if it was gone by then (its status then is the last it had). None when the log
    knows nothing of it."""
    governing = or_registered(schema).governing[kind]
    resource = governing.resource
    limit = _FOREVER if at is None else at
    statuses = _rows(conn, "SELECT seq, ts, generation FROM status_changes WHERE resource = ? "
                           "AND namespace = ? AND name = ? AND ts <= ? ORDER BY seq DESC LIMIT 1",
                     (resource, namespace, name, limit))
    status = statuses[0] if statuses else None
    deletions = _rows(conn, "SELECT seq, ts FROM deletions WHERE resource = ? AND namespace = ? "
                            "AND name = ? AND ts <= ? ORDER BY seq DESC LIMIT 1",
                      (resource, namespace, name, limit)) if _has_table(conn, "deletions") else []
    # A deletion before the latest status is of an earlier object of that name.
    deleted = next((d for d in deletions if status is None or d["seq"] > status["seq"]), None)
    if status is not None:
        status["subsets"] = _rows(conn, "SELECT subset, replicas, missing_replicas, "
                                        "ready_replicas FROM subset_counts WHERE status_seq = ? "
                                        "ORDER BY position", (status["seq"],))
    alive = [] if governing.pods_column is None else _rows(
        conn, "SELECT subset, COUNT(*) AS pods FROM pods WHERE namespace = ? "
              f'AND "{governing.pods_column}" = ? AND created_ts <= ? '
              "AND (deleted_ts IS NULL OR deleted_ts > ?) GROUP BY subset "
              "ORDER BY subset", (namespace, name, limit, limit))
    if status is None and not alive and deleted is None:
        return None
    return {"kind": kind, "namespace": namespace, "name": name, "at": at, "deleted": deleted,
            "status": status, "pods": alive}


def render_counts(story: Story) -> str:
    when = "now" if story["at"] is None else show_time(story["at"])
    lines = [f"{story['kind']} {story['namespace']}/{story['name']} at {when}"]
    deleted = story.get("deleted")
    if deleted is not None:
        lines[0] += f": deleted at {_at(deleted)}"
    status = story["status"]
    if status is not None:
        lines.append(f"  {'last status' if deleted else 'status':<13} {_at(status)}, "
                     f"generation {status['generation']}")
        for s in status["subsets"]:
            extra = ""
            if s["missing_replicas"] is not None:
                extra = f", missing {s['missing_replicas']}"
            elif s["ready_replicas"] is not None:
                extra = f", ready {s['ready_replicas']}"
            lines.append(f"    {s['subset']:<12} replicas {s['replicas']}{extra}")
    if story["pods"]:
        lines.append("  pods alive by the log")
        lines += [f"    {p['subset'] or '(none)':<12} {p['pods']}" for p in story["pods"]]
    return "\n".join(lines)
