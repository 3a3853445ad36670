"""A refused plan is logged with its target and reason cut short: a forged name of a megabyte
(the bus carries that much) costs the log one line, not a megabyte per delivery."""

from __future__ import annotations

import asyncio
import logging

import pytest
from kubernetes import client

from events.messages import ObjectRef, Plan, Precondition
from services.actuator.application import Applier
from spreadbus.engine.feature_set import plan_grants
from spreadbus.engine.plan_grants import PlanAuthority
from spreadbus.features.registry import BUILTIN
from spreadbus.runtime.kube_client import KubeClient
from spreadbus.runtime.rate_limit import TokenBucket


def test_a_megabyte_name_is_refused_and_logged_short(caplog: pytest.LogCaptureFixture) -> None:
    huge = "a" * 1_000_000
    ref = ObjectRef(group="apps.karmada.io", version="v1alpha1",
                    resource="workloadrebalancers", name=huge, uid="u1")
    plan = Plan(id="p", cluster="c1", verb="delete", rule="workloadrebalancer", target=ref,
                governor=ref, precondition=Precondition(uid="u1"))
    applier = Applier(KubeClient(client.ApiClient()), limiter=TokenBucket(10, 10),
                      authority=PlanAuthority(plan_grants(BUILTIN)))
    with caplog.at_level(logging.WARNING, logger="services.actuator.application"):
        result = asyncio.run(applier.apply(plan))
    assert result.result == "failed"
    assert result.error is not None
    assert result.error.reason == "Forbidden"
    assert result.error.message.startswith("target.name: Invalid value:")
    [record] = [r for r in caplog.records if r.getMessage() == "plan refused: not granted"]
    assert record.target.startswith("workloadrebalancers.apps.karmada.io//aaaa")
    assert len(record.target) <= 323
    assert len(record.why) <= 515
