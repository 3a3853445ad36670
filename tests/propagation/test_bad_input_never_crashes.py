"""Any shape of Karmada object gets an answer from ``spreadbus validate`` and ``spreadbus
plan``, never a traceback: the scheduler reads stored objects leniently and validation names
the fields."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spreadbus.cli import main

KEYS = ["spec", "status", "metadata", "resourceSelectors", "placement", "clusterAffinity",
        "clusterAffinities", "clusterNames", "exclude", "labelSelector", "fieldSelector",
        "matchExpressions", "replicaScheduling", "replicaSchedulingType", "weightPreference",
        "staticWeightList", "dynamicWeight", "spreadConstraints", "clusterTolerations",
        "taints", "resourceSummary", "allocatable", "pods", "cpu", "apiEnablements", "clusters",
        "replicas", "name", "kind", "apiVersion", "namespace", "rescheduleTriggeredAt",
        "gracefulEvictionTasks", "lastScheduledTime", "priority", "failover", "conditions"]
SCALARS = (st.none() | st.booleans() | st.integers(-5, 50) | st.sampled_from(
    ["", "member1", "apps/v1", "Deployment", "Divided", "Aggregated", "Weighted", "10m", "x:y",
     "AvailableReplicas", "2024-05-22T11:36:10Z", "NoExecute", "In", "cluster", "region"]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(KEYS), inner, max_size=5), max_leaves=25)
KINDS = [("policy.karmada.io/v1alpha1", "PropagationPolicy"),
         ("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy"),
         ("work.karmada.io/v1alpha2", "ResourceBinding"),
         ("work.karmada.io/v1alpha2", "ClusterResourceBinding"),
         ("cluster.karmada.io/v1alpha1", "Cluster")]
TEMPLATE = {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "member1", "namespace": "default"}, "spec": {"replicas": 3}}
POLICY = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
          "metadata": {"name": "all"},
          "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]}}


def _object(kind: tuple[str, str], spec: Any, status: Any, name: Any) -> dict[str, Any]:
    return {"apiVersion": kind[0], "kind": kind[1],
            "metadata": {"name": name, "namespace": "default"}, "spec": spec, "status": status}


@settings(max_examples=200, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(objects=st.lists(st.tuples(st.sampled_from(KINDS), VALUES, VALUES, SCALARS),
                        min_size=1, max_size=4))
def test_any_karmada_objects_get_an_answer(objects: list[tuple[tuple[str, str], Any, Any, Any]],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    docs = [_object(*o) for o in objects]
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "in.json"
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                    "items": [TEMPLATE, POLICY, *docs]}))
        plan = main(["plan", "-f", str(path), "--now", "2024-05-22T11:40:00Z", "-o", "json"])
        planned = capsys.readouterr()
        valid = main(["validate", "-f", str(path), "-o", "json"])
        validated = capsys.readouterr()
    # The scheduler reads stored objects leniently: any shape is planned.
    assert plan == 0, planned.err
    assert "default/member1-deployment" in json.loads(planned.out)["resourceBindings"]
    assert valid in (0, 1, 2)
    if valid in (0, 1):
        answer = json.loads(validated.out)
        results = answer.get("results", [answer])
        assert all(e["field"] is not None and e["message"] for r in results
                   for e in r["errors"])
