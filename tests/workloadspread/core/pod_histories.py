"""Random pods and histories of pods, varying what the counting rule reads and what it does not.

Each version of a pod changes one field: its matched annotation, labels, owner, kind, phase or
deletion (what :func:`~spreadbus.features.workloadspread.core.occupancy.occupant` reads), or its
resource version, a condition or its node (what it does not), so that a change to any single
field is met on its own.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from events.messages import WatchEventType

MATCHED = "apps.kruise.io/matched-workloadspread"
NAMES = ("a", "b", "c")
SPREADS = ("ws", "other")
SUBSETS = ("zone-a", "zone-b")
FIELDS = ("annotations", "labels", "owner", "kind", "phase", "deletion", "resourceVersion",
          "condition", "node")

History = list[tuple[WatchEventType, dict[str, Any]]]


def matched_annotations(name: str) -> st.SearchStrategy[dict[str, str] | None]:
    """A pod's matched annotation, if any; a reservation uid is the pod's own, as in a cluster."""
    return st.one_of(
        st.sampled_from((None, {MATCHED: "not json"})),
        st.builds(
            lambda spread, subset, uid: {
                MATCHED: json.dumps(
                    {"name": spread, "subset": subset, **({"uid": uid} if uid else {})}
                )
            },
            st.sampled_from(SPREADS),
            st.sampled_from(SUBSETS),
            st.sampled_from(("", f"r-{name}")),
        ),
    )


owners = st.sampled_from((
    None,
    [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "controller": True}],
    [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-2", "controller": True}],
    [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "controller": True}],
    [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "controller": False}],
))


def field_values(name: str, field: str) -> st.SearchStrategy[Any]:
    """What one field of pod ``name`` may become (``None``: absent)."""
    if field == "annotations":
        return matched_annotations(name)
    return {
        "labels": st.sampled_from((None, {"pod-template-hash": "v1"}, {"pod-template-hash": "v2"},
                                   {"pod-template-hash": "v2", "app": "web"},
                                   {"controller-revision-hash": "db-7f"})),
        "owner": owners,
        "kind": st.sampled_from((None, "Pod")),
        "phase": st.sampled_from((None, "Pending", "Running", "Running", "Succeeded", "Failed")),
        "deletion": st.sampled_from((None, "2026-01-01T00:00:00Z")),
        "resourceVersion": st.integers(1, 99).map(str),
        "condition": st.sampled_from(("True", "False")),
        "node": st.sampled_from(("", "n1")),
    }[field]


def pod_fields(name: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({field: field_values(name, field) for field in FIELDS})


def pod_object(name: str, fields: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    for field, key in (("annotations", "annotations"), ("labels", "labels"),
                       ("owner", "ownerReferences"), ("deletion", "deletionTimestamp"),
                       ("resourceVersion", "resourceVersion")):
        if fields.get(field) is not None:
            metadata[key] = fields[field]
    status: dict[str, Any] = {"conditions": [{"type": "Ready",
                                              "status": fields.get("condition", "False")}]}
    if fields.get("phase") is not None:
        status["phase"] = fields["phase"]
    pod: dict[str, Any] = {"apiVersion": "v1", "metadata": metadata, "status": status,
                           "spec": {"nodeName": fields.get("node", "")}}
    if fields.get("kind") is not None:
        pod["kind"] = fields["kind"]
    return pod


@st.composite
def histories(draw: st.DrawFn) -> History:
    """Observations of a few pods, each version changing one field of the pod (or deleting it)."""
    pods: dict[str, dict[str, Any]] = {}
    history: History = []
    for _ in range(draw(st.integers(0, 30))):
        name = draw(st.sampled_from(NAMES))
        if name not in pods:
            pods[name] = draw(pod_fields(name))
            history.append(("ADDED", pod_object(name, pods[name])))
        elif draw(st.integers(0, 9)) == 0:
            history.append(("DELETED", pod_object(name, pods.pop(name))))
        else:
            field = draw(st.sampled_from(FIELDS))
            pods[name] = {**pods[name], field: draw(field_values(name, field))}
            history.append(("MODIFIED", pod_object(name, pods[name])))
    return history
