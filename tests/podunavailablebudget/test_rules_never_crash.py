"""Whatever JSON a stored budget or pod holds, the rules answer rather than raise."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.podunavailablebudget.core.admission import (
    admit_update,
    budget_for_new_pod,
    decide,
)
from spreadbus.features.podunavailablebudget.core.budget import compute_status
from spreadbus.features.podunavailablebudget.core.model import from_object, status_to_json
from spreadbus.features.podunavailablebudget.core.validation import validate_budget
from spreadbus.features.podunavailablebudget.core.workloads import Workloads
from tests.podunavailablebudget.builders import budget, pod, replicaset, workload

NOW = datetime(2026, 1, 1, tzinfo=UTC)

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=6),
                    st.sampled_from(["50%", "DELETE", "In", "Exists", "app", "web"]))
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(
                                ["matchLabels", "matchExpressions", "key", "operator", "values",
                                 "app", "apiVersion", "kind", "name"]), inner, max_size=3)),
    max_leaves=10,
)
spec_fields = st.dictionaries(
    st.sampled_from(["selector", "targetRef", "maxUnavailable", "minAvailable"]), json_values,
    max_size=4,
)
annotation_values = st.dictionaries(
    st.sampled_from(["kruise.io/pub-protect-operations", "pub.kruise.io/protect-total-replicas",
                     "kruise.io/related-pub", "pub.kruise.io/no-protect",
                     "apps.kruise.io/inplace-update-state"]), json_values, max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(spec=spec_fields, annotations=annotation_values, status=json_values,
       old_spec=spec_fields)
def test_validation_and_status_answer_any_budget(
    spec: dict[str, Any], annotations: dict[str, Any], status: Any, old_spec: dict[str, Any]
) -> None:
    obj = {**budget(), "spec": spec, "status": status}
    obj["metadata"]["annotations"] = annotations
    old = {**budget(), "spec": old_spec}
    assert isinstance(validate_budget(obj, old=old, others=[old, budget("x")]), list)
    deployment = workload()
    rs = replicaset(deployment)
    result = compute_status(from_object(obj), workloads=[deployment, rs],
                            pods=[pod("a", owner=rs), pod("b")], now=NOW)
    assert status_to_json(result.status)["unavailableAllowed"] >= 0 or result.error


@settings(max_examples=200, deadline=None)
@given(meta=st.dictionaries(st.sampled_from(["labels", "annotations", "ownerReferences",
                                             "deletionTimestamp", "name"]), json_values,
                            max_size=4),
       pod_spec=json_values, pod_status=json_values, annotations=annotation_values)
def test_decisions_answer_any_pod(meta: dict[str, Any], pod_spec: Any, pod_status: Any,
                                  annotations: dict[str, Any]) -> None:
    odd = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "web", **meta},
           "spec": pod_spec, "status": pod_status}
    noted = {**odd, "metadata": {**odd["metadata"], "annotations": annotations}}
    pub = from_object(budget(status={"unavailableAllowed": 1, "desiredAvailable": 1}))
    for candidate in (odd, noted):
        assert decide(candidate, pub, operation="DELETE", now=NOW).allowed in (True, False)
        admit_update(candidate, pod("a"), lookup=lambda ns, n: pub, now=NOW)
        admit_update(pod("a"), candidate, lookup=lambda ns, n: pub, now=NOW)
        budget_for_new_pod(candidate, [pub], Workloads([candidate]))
