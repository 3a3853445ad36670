"""Server-side printing: ``meta.k8s.io/v1`` ``Table`` responses for ``kubectl get``.

Built-in kinds get the columns kubectl users know (``READY``, ``STATUS``, ``RESTARTS`` for
pods, ``UP-TO-DATE``/``AVAILABLE`` for deployments, ...); custom resources get their CRD's
``additionalPrinterColumns`` after ``NAME``, and ``AGE`` when they declare no columns, as upstream
does. JSONPath support is the simple dotted form CRDs use (``.spec.replicas``,
``.status.conditions[?(@.type=="Ready")].status``, ``.metadata.labels.app``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubesim import horizontalpodautoscaler
from kubesim.registry import PrinterColumn, ResourceType

JsonObject = dict[str, Any]


def age(created: str | None, now: datetime) -> str:
    """Upstream's ``duration.HumanDuration`` of the time since ``created``."""
    if not created:
        return "<unknown>"
    try:
        t = datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<invalid>"
    secs = int((now - t).total_seconds())
    if secs < 0:
        return "<invalid>"
    if secs < 120:
        return f"{secs}s"
    mins = secs // 60
    if mins < 10:
        s = secs % 60
        return f"{mins}m{s}s" if s else f"{mins}m"
    if mins < 180:
        return f"{mins}m"
    hours = secs // 3600
    if hours < 8:
        m = mins % 60
        return f"{hours}h{m}m" if m else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        h = hours % 24
        return f"{days}d{h}h" if h else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    years = days // 365
    if days < 365 * 8:
        d = days % 365
        return f"{years}y{d}d" if d else f"{years}y"
    return f"{years}y"


_FILTER = re.compile(r"^\[\?\(@\.([\w.-]+)\s*==\s*[\"']([^\"']*)[\"']\)\]$")


def jsonpath(obj: Any, path: str) -> Any:
    """Evaluate the subset of JSONPath printer columns use; None when absent."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    tokens = re.findall(r"\[[^\]]*\]|[^.\[\]]+", path.lstrip("$"))
    cur = obj
    for tok in tokens:
        if cur is None:
            return None
        if tok.startswith("["):
            m = _FILTER.match(tok)
            if m and isinstance(cur, list):
                key, want = m.group(1), m.group(2)
                cur = next(
                    (i for i in cur if isinstance(i, dict) and str(_dig(i, key)) == want), None
                )
            elif tok[1:-1].lstrip("-").isdigit() and isinstance(cur, list):
                idx = int(tok[1:-1])
                cur = cur[idx] if -len(cur) <= idx < len(cur) else None
            elif tok[1:-1] == "*" and isinstance(cur, list):
                continue
            elif tok[1:-1].strip("'\"") and isinstance(cur, dict):
                cur = cur.get(tok[1:-1].strip("'\""))
            else:
                return None
        elif isinstance(cur, dict):
            cur = cur.get(tok)
        elif isinstance(cur, list):
            cur = [c.get(tok) for c in cur if isinstance(c, dict)]
        else:
            return None
    return cur


def _dig(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def _cell(value: Any, column: PrinterColumn, now: datetime) -> Any:
    if value is None:
        return None
    if column.type == "date" and isinstance(value, str):
        return age(value, now)
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, dict):
        return str(value)
    if column.type == "integer" and isinstance(value, int | float):
        return int(value)
    return value


def _col(
    name: str, type_: str = "string", desc: str = "", priority: int = 0, fmt: str = ""
) -> JsonObject:
    return {"name": name, "type": type_, "format": fmt, "description": desc, "priority": priority}


def _pod_row(p: JsonObject, now: datetime) -> list[Any]:
    spec, status = p.get("spec") or {}, p.get("status") or {}
    containers = spec.get("containers") or []
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for s in statuses if s.get("ready"))
    restarts = sum(int(s.get("restartCount") or 0) for s in statuses)
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for s in statuses:
        waiting = (s.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
    if p["metadata"].get("deletionTimestamp"):
        reason = "Terminating"
    ips = status.get("podIP") or "<none>"
    return [
        p["metadata"]["name"],
        f"{ready}/{len(containers)}",
        reason,
        restarts,
        age(p["metadata"].get("creationTimestamp"), now),
        ips,
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        _readiness_gates(spec, status),
    ]


def _readiness_gates(spec: JsonObject, status: JsonObject) -> str:
    """``true/total`` over the pod's readiness gates, as upstream's pod printer shows them."""
    gates = [
        g.get("conditionType") for g in spec.get("readinessGates") or [] if isinstance(g, dict)
    ]
    if not gates:
        return "<none>"
    true = {
        c.get("type")
        for c in status.get("conditions") or []
        if isinstance(c, dict) and c.get("status") == "True"
    }
    return f"{sum(1 for g in gates if g in true)}/{len(gates)}"


def _deploy_row(d: JsonObject, now: datetime) -> list[Any]:
    spec, status = d.get("spec") or {}, d.get("status") or {}
    return [
        d["metadata"]["name"],
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}",
        status.get("updatedReplicas", 0),
        status.get("availableReplicas", 0),
        age(d["metadata"].get("creationTimestamp"), now),
    ]


def _rs_row(d: JsonObject, now: datetime) -> list[Any]:
    spec, status = d.get("spec") or {}, d.get("status") or {}
    return [
        d["metadata"]["name"],
        spec.get("replicas", 0),
        status.get("replicas", 0),
        status.get("readyReplicas", 0),
        age(d["metadata"].get("creationTimestamp"), now),
    ]


def _sts_row(d: JsonObject, now: datetime) -> list[Any]:
    spec, status = d.get("spec") or {}, d.get("status") or {}
    return [
        d["metadata"]["name"],
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}",
        age(d["metadata"].get("creationTimestamp"), now),
    ]


def _node_row(n: JsonObject, now: datetime) -> list[Any]:
    conds = (n.get("status") or {}).get("conditions") or []
    ready = next((c for c in conds if c.get("type") == "Ready"), None)
    status = (
        "Ready" if ready and ready.get("status") == "True" else "NotReady" if ready else "Unknown"
    )
    if (n.get("spec") or {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    labels = n["metadata"].get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))
    info = (n.get("status") or {}).get("nodeInfo") or {}
    return [
        n["metadata"]["name"],
        status,
        ",".join(roles) or "<none>",
        age(n["metadata"].get("creationTimestamp"), now),
        info.get("kubeletVersion", ""),
        _node_address(n, "InternalIP"),
        _node_address(n, "ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _node_address(n: JsonObject, kind: str) -> str:
    for address in (n.get("status") or {}).get("addresses") or []:
        if isinstance(address, dict) and address.get("type") == kind:
            return str(address.get("address") or "<none>")
    return "<none>"


def _ns_row(n: JsonObject, now: datetime) -> list[Any]:
    return [
        n["metadata"]["name"],
        (n.get("status") or {}).get("phase", ""),
        age(n["metadata"].get("creationTimestamp"), now),
    ]


def _pdb_row(p: JsonObject, now: datetime) -> list[Any]:
    spec, status = p.get("spec") or {}, p.get("status") or {}
    return [
        p["metadata"]["name"],
        str(spec.get("minAvailable", "N/A")),
        str(spec.get("maxUnavailable", "N/A")),
        status.get("disruptionsAllowed", 0),
        age(p["metadata"].get("creationTimestamp"), now),
    ]


def _priority_class_row(p: JsonObject, now: datetime) -> list[Any]:
    return [
        p["metadata"]["name"],
        p.get("value", 0),
        bool(p.get("globalDefault")),
        age(p["metadata"].get("creationTimestamp"), now),
        p.get("preemptionPolicy") or "",
    ]


def _cm_row(c: JsonObject, now: datetime) -> list[Any]:
    return [
        c["metadata"]["name"],
        len(c.get("data") or {}) + len(c.get("binaryData") or {}),
        age(c["metadata"].get("creationTimestamp"), now),
    ]


def _crd_row(c: JsonObject, now: datetime) -> list[Any]:
    return [c["metadata"]["name"], c["metadata"].get("creationTimestamp", "")]


def _secret_row(o: JsonObject, now: datetime) -> list[Any]:
    return [o["metadata"]["name"], o.get("type", "Opaque"), len(o.get("data") or {}), _age(o, now)]


def _event_row(e: JsonObject, now: datetime) -> list[Any]:
    inv = e.get("involvedObject") or {}
    last = e.get("lastTimestamp") or e.get("eventTime") or e["metadata"].get("creationTimestamp")
    return [
        age(last, now),
        e.get("type", ""),
        e.get("reason", ""),
        f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}",
        e.get("message", ""),
    ]


def _service_row(o: JsonObject, now: datetime) -> list[Any]:
    spec = o.get("spec") or {}
    ports = ",".join(
        f"{p.get('port')}/{p.get('protocol', 'TCP')}"
        for p in spec.get("ports") or ()
        if isinstance(p, dict)
    )
    return [
        o["metadata"]["name"],
        spec.get("type", "ClusterIP"),
        spec.get("clusterIP") or "<none>",
        spec.get("externalName") or "<none>",
        ports or "<none>",
        _age(o, now),
    ]


def _lease_row(o: JsonObject, now: datetime) -> list[Any]:
    return [o["metadata"]["name"], (o.get("spec") or {}).get("holderIdentity") or "", _age(o, now)]


def _revision_row(o: JsonObject, now: datetime) -> list[Any]:
    owner = next(
        (r for r in o["metadata"].get("ownerReferences") or () if r.get("controller")), None
    )
    ctrl = "<none>"
    if owner:
        group = str(owner.get("apiVersion", "")).split("/")[0]
        ctrl = f"{str(owner.get('kind', '')).lower()}.{group}/{owner.get('name')}"
    return [o["metadata"]["name"], ctrl, o.get("revision", 0), _age(o, now)]


def _webhooks_row(o: JsonObject, now: datetime) -> list[Any]:
    return [o["metadata"]["name"], len(o.get("webhooks") or ()), _age(o, now)]


def _binding_row(o: JsonObject, now: datetime) -> list[Any]:
    ref = o.get("roleRef") or {}
    return [o["metadata"]["name"], f"{ref.get('kind', '')}/{ref.get('name', '')}", _age(o, now)]


def _created_row(o: JsonObject, now: datetime) -> list[Any]:
    return [o["metadata"]["name"], o["metadata"].get("creationTimestamp", "")]


def _hpa_row(o: JsonObject, now: datetime) -> list[Any]:
    """Upstream's printer, which prints every version from the same (v2-shaped) object."""
    o = horizontalpodautoscaler.convert(o, horizontalpodautoscaler.V2)
    spec, status = o.get("spec") or {}, o.get("status") or {}
    ref = spec.get("scaleTargetRef") or {}
    minimum = spec.get("minReplicas")
    return [
        o["metadata"]["name"],
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        horizontalpodautoscaler.format_targets(
            spec.get("metrics") or [], status.get("currentMetrics") or []
        ),
        "<unset>" if minimum is None else str(minimum),
        spec.get("maxReplicas", 0),
        status.get("currentReplicas", 0),
        _age(o, now),
    ]


def _age(o: JsonObject, now: datetime) -> str:
    return age(o["metadata"].get("creationTimestamp"), now)


def _default_row(o: JsonObject, now: datetime) -> list[Any]:
    return [o["metadata"]["name"], age(o["metadata"].get("creationTimestamp"), now)]


_NAME = _col("Name", desc="Name must be unique within a namespace.", fmt="name")
_AGE = _col(
    "Age",
    desc="CreationTimestamp is a timestamp representing the server time when this object "
    "was created.",
)

Row = Callable[[JsonObject, datetime], list[Any]]
_BUILTIN: dict[str, tuple[list[JsonObject], Row]] = {
    "Pod": (
        [
            _NAME,
            _col("Ready"),
            _col("Status"),
            _col("Restarts", "string"),
            _AGE,
            _col("IP", priority=1),
            _col("Node", priority=1),
            _col("Nominated Node", priority=1),
            _col("Readiness Gates", priority=1),
        ],
        _pod_row,
    ),
    "Deployment": (
        [_NAME, _col("Ready"), _col("Up-to-date", "integer"), _col("Available", "integer"), _AGE],
        _deploy_row,
    ),
    "ReplicaSet": (
        [
            _NAME,
            _col("Desired", "integer"),
            _col("Current", "integer"),
            _col("Ready", "integer"),
            _AGE,
        ],
        _rs_row,
    ),
    "StatefulSet": ([_NAME, _col("Ready"), _AGE], _sts_row),
    "Node": (
        [
            _NAME,
            _col("Status"),
            _col("Roles"),
            _AGE,
            _col("Version"),
            _col("Internal-IP", priority=1),
            _col("External-IP", priority=1),
            _col("OS-Image", priority=1),
            _col("Kernel-Version", priority=1),
            _col("Container-Runtime", priority=1),
        ],
        _node_row,
    ),
    "Namespace": ([_NAME, _col("Status"), _AGE], _ns_row),
    "PodDisruptionBudget": (
        [
            _NAME,
            _col("Min Available"),
            _col("Max Unavailable"),
            _col("Allowed Disruptions", "integer"),
            _AGE,
        ],
        _pdb_row,
    ),
    "PriorityClass": (
        [
            _NAME,
            _col("Value", "integer"),
            _col("Global-Default", "boolean"),
            _AGE,
            _col("PreemptionPolicy"),
        ],
        _priority_class_row,
    ),
    "ConfigMap": ([_NAME, _col("Data", "integer"), _AGE], _cm_row),
    "CustomResourceDefinition": ([_NAME, _col("Created At", "date")], _crd_row),
    "Secret": ([_NAME, _col("Type"), _col("Data", "integer"), _AGE], _secret_row),
    "Event": (
        [_col("Last Seen"), _col("Type"), _col("Reason"), _col("Object"), _col("Message")],
        _event_row,
    ),
    "Service": (
        [_NAME, _col("Type"), _col("Cluster-IP"), _col("External-IP"), _col("Port(s)"), _AGE],
        _service_row,
    ),
    "Lease": ([_NAME, _col("Holder"), _AGE], _lease_row),
    "ControllerRevision": (
        [_NAME, _col("Controller"), _col("Revision", "integer"), _AGE],
        _revision_row,
    ),
    "MutatingWebhookConfiguration": ([_NAME, _col("Webhooks", "integer"), _AGE], _webhooks_row),
    "ValidatingWebhookConfiguration": ([_NAME, _col("Webhooks", "integer"), _AGE], _webhooks_row),
    "ClusterRoleBinding": ([_NAME, _col("Role"), _AGE], _binding_row),
    "RoleBinding": ([_NAME, _col("Role"), _AGE], _binding_row),
    "ClusterRole": ([_NAME, _col("Created At", "date")], _created_row),
    "Role": ([_NAME, _col("Created At", "date")], _created_row),
    "HorizontalPodAutoscaler": (
        [
            _NAME,
            _col("Reference"),
            _col("Targets"),
            _col("MinPods"),
            _col("MaxPods", "integer"),
            _col("Replicas", "integer"),
            _AGE,
        ],
        _hpa_row,
    ),
}


def columns(rt: ResourceType) -> list[JsonObject]:
    if rt.custom or rt.printer_columns:
        cols = [_NAME]
        for c in rt.printer_columns:
            cols.append(_col(c.name, c.type, c.description, c.priority, c.format))
        if not rt.printer_columns:
            cols.append(_AGE)
        return cols
    return _BUILTIN.get(rt.kind, ([_NAME, _AGE], _default_row))[0]


def cells(rt: ResourceType, obj: JsonObject, now: datetime) -> list[Any]:
    if rt.custom or rt.printer_columns:
        row: list[Any] = [obj["metadata"]["name"]]
        for c in rt.printer_columns:
            row.append(_cell(jsonpath(obj, c.json_path), c, now))
        if not rt.printer_columns:
            row.append(age(obj["metadata"].get("creationTimestamp"), now))
        return row
    return _BUILTIN.get(rt.kind, ([], _default_row))[1](obj, now)


def partial_metadata(obj: JsonObject) -> JsonObject:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj["metadata"],
    }


def table(
    rt: ResourceType,
    objs: list[JsonObject],
    now: datetime,
    *,
    include_object: str = "Metadata",
    list_meta: JsonObject | None = None,
    headers: bool = True,
) -> JsonObject:
    rows = []
    for o in objs:
        row: JsonObject = {"cells": cells(rt, o, now)}
        if include_object == "Object":
            row["object"] = o
        elif include_object != "None":
            row["object"] = partial_metadata(o)
        rows.append(row)
    out: JsonObject = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta or {},
        "columnDefinitions": columns(rt) if headers else [],
        "rows": rows,
    }
    return out
