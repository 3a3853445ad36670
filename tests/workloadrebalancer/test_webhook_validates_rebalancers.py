"""The ``/validate-workloadrebalancer`` handler refuses what validation refuses, 422 with causes."""

from __future__ import annotations

import asyncio
from typing import Any

from spreadbus.engine.review import AdmissionRequest
from spreadbus.features.workloadrebalancer.admission.handlers import validate


def request(obj: dict[str, Any] | None, operation: str = "CREATE",
            sub_resource: str = "") -> AdmissionRequest:
    return AdmissionRequest(uid="u", api_version="admission.k8s.io/v1", operation=operation,
                            group="apps.karmada.io", version="v1alpha1",
                            resource="workloadrebalancers", sub_resource=sub_resource,
                            namespace="", name="demo", dry_run=False, object=obj,
                            old_object=None)


def rebalancer(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
            "metadata": {"name": "demo"}, "spec": spec}


GOOD = {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                       "namespace": "default"}]}


def test_a_valid_rebalancer_is_allowed() -> None:
    assert asyncio.run(validate(request(rebalancer(GOOD)))).allowed


def test_an_invalid_one_is_refused_naming_each_field() -> None:
    verdict = asyncio.run(validate(request(rebalancer({"workloads": [{"kind": "Deployment"}],
                                                       "ttlSecondsAfterFinished": "x"}),
                                           operation="UPDATE")))
    assert not verdict.allowed
    assert verdict.code == 422
    assert verdict.message.startswith('WorkloadRebalancer.apps.karmada.io "demo" is invalid: ')
    assert [(c["field"], c["reason"]) for c in verdict.causes] == [
        ("spec.workloads[0].apiVersion", "FieldRequired"),
        ("spec.workloads[0].name", "FieldRequired"),
        ("spec.ttlSecondsAfterFinished", "FieldInvalid"),
    ]


def test_status_writes_and_deletes_are_not_judged() -> None:
    bad = rebalancer({})
    assert asyncio.run(validate(request(bad, sub_resource="status"))).allowed
    assert asyncio.run(validate(request(bad, operation="DELETE"))).allowed
