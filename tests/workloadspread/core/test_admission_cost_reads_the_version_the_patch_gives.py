"""A subset's patch may rewrite the labels a pod's version is read from; the deletion cost the
admission writes is then the one for the version the patched pod has, as the planner reads it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from spreadbus.features.workloadspread.core.admission import admit_create_for, cost_version
from spreadbus.features.workloadspread.core.deletion_cost import admission_cost
from spreadbus.features.workloadspread.core.model import DELETION_COST_ANNOTATION, from_object
from spreadbus.features.workloadspread.core.target import lookup_in
from tests.workloadspread.core.builders import deployment, replicaset, subset, workloadspread

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("patch", "is_latest"),
    [
        (None, True),
        ({"metadata": {"labels": {"app": "web", "tier": "front"}}}, True),
        ({"metadata": {"labels": {"pod-template-hash": "older"}}}, False),
    ],
)
def test_the_cost_is_for_the_version_of_the_pod_after_its_patch(
    patch: dict[str, object] | None, is_latest: bool
) -> None:
    deploy = deployment(replicas=6)
    new_rs = replicaset(deploy, "new")
    extra = {"patch": patch} if patch is not None else {}
    ws = from_object(workloadspread(subset("a", 3, **extra), subset("b")))
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "web-new-",
            "namespace": "default",
            "labels": {"app": "web", "pod-template-hash": "new"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": new_rs["metadata"]["name"],
                                 "uid": new_rs["metadata"]["uid"], "controller": True}],
        },
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    latest = cost_version(ws, deploy, pod, lookup=lookup_in([deploy, new_rs]))
    assert latest == "new"
    decision = admit_create_for(
        ws, pod, replicas=6, loads={}, now=NOW, generated_uid="u-1", latest=latest
    )
    assert decision.subset == "a"
    expected = admission_cost(ws, "a", replicas=6, latest=is_latest)
    assert expected != admission_cost(ws, "a", replicas=6, latest=not is_latest)
    assert decision.pod["metadata"]["annotations"][DELETION_COST_ANNOTATION] == str(expected)
    # a caller that has read the pod's version for its loads hands it over: the same decision
    told = admit_create_for(
        ws, pod, replicas=6, loads={}, now=NOW, generated_uid="u-1", latest=latest, version="new"
    )
    assert told == decision
