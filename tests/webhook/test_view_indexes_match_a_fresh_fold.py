"""A view that folded every version of its pods indexes them as one that saw only the last.

The view keeps a pod's index entries when a new version changes nothing they are computed from
(most pod changes are status updates), so this checks, over random histories, that what it
keeps is always what indexing the final versions from scratch gives: the subset counts per
spread, the reservation keys seen and the pods active. The histories vary what the indexes read
(annotation, labels, owner, kind, phase, deletion) and what they do not (resource version,
conditions, node), one field per version.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from events.codec import encode
from events.messages import Observation, WatchEventType
from spreadbus.features.workloadspread.admission.view import View

MATCHED = "apps.kruise.io/matched-workloadspread"
NAMES = ("a", "b", "c")
SPREADS = ("ws", "other")


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
            st.sampled_from(("zone-a", "zone-b")),
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


FIELDS = ("annotations", "labels", "owner", "kind", "phase", "deletion", "resourceVersion",
          "condition", "node")


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
def histories(draw: st.DrawFn) -> list[tuple[WatchEventType, dict[str, Any]]]:
    """Observations of a few pods, each version changing one field of the pod (or deleting it),
    so that a change to any single field the indexes read is met on its own."""
    pods: dict[str, dict[str, Any]] = {}
    history: list[tuple[WatchEventType, dict[str, Any]]] = []
    for _ in range(draw(st.integers(0, 30))):
        name = draw(st.sampled_from(NAMES))
        if name not in pods:
            pods[name] = {field: draw(field_values(name, field)) for field in FIELDS}
            history.append(("ADDED", pod_object(name, pods[name])))
        elif draw(st.integers(0, 9)) == 0:
            history.append(("DELETED", pod_object(name, pods.pop(name))))
        else:
            field = draw(st.sampled_from(FIELDS))
            pods[name] = {**pods[name], field: draw(field_values(name, field))}
            history.append(("MODIFIED", pod_object(name, pods[name])))
    return history


def fold(view: View, history: list[tuple[WatchEventType, dict[str, Any]]]) -> None:
    for event, obj in history:
        message = Observation(
            cluster="c1", group="", version="v1", resource="pods", event=event, object=obj
        )
        view.apply_message(view.seq + 1, "kube.obs.c1", encode(message))


def indexes(view: View) -> tuple[object, ...]:
    slots = {
        spread: {slot: sorted(names) for slot, names in view.slots_of("default", spread).items()
                 if names}
        for spread in SPREADS
    }
    keys = (*(f"r-{name}" for name in NAMES), *NAMES)
    return (
        slots,
        {key: view.seen("default", key) for key in keys},
        {name: view.active("default", name) for name in NAMES},
    )


@settings(max_examples=300, deadline=None)
@given(histories())
def test_folding_every_version_indexes_pods_as_folding_only_the_last_does(
    history: list[tuple[WatchEventType, dict[str, Any]]],
) -> None:
    followed = View(cluster="c1")
    fold(followed, history)
    fresh = View(cluster="c1")
    fold(fresh, [("ADDED", pod) for pod in followed.objects.get(("", "pods"), {}).values()])
    assert indexes(followed) == indexes(fresh)
