"""A UnitedDeployment as a resource template, live on ``spreadbus up --members member1,member2``:
its subsets name no cluster, so the control-plane host admits it as a template and does not
place it; a PropagationPolicy divides its 6 replicas 3:3 as Karmada's third-party interpreter
reads ``spec.replicas``; each member's own UnitedDeployment splits its 3 over its subsets (1 in
zone-a as the subset asks, the rest in zone-b); the members' status is summed into the host's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.propagation.members_stack import Stack, evenly_over, members_stack, ready

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
MEMBERS = ("member1", "member2")


def subset(name: str, zone: str, replicas: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "nodeSelectorTerm": {"matchExpressions": [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}}
    if replicas is not None:
        out["replicas"] = replicas
    return out


POD = {"metadata": {"labels": {"app": "shop"}},
       "spec": {"containers": [{"name": "main", "image": "nginx:alpine"}]}}
TEMPLATE = {
    "apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
    "metadata": {"name": "shop", "namespace": "default"},
    "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "shop"}},
             "template": {"deploymentTemplate": {
                 "metadata": {"labels": {"app": "shop"}},
                 "spec": {"selector": {"matchLabels": {"app": "shop"}}, "template": POD}}},
             "topology": {"subsets": [subset("a", "zone-a", 1), subset("b", "zone-b")]}}}
POLICY = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
          "metadata": {"name": "shop", "namespace": "default"},
          "spec": {"resourceSelectors": [{"apiVersion": "apps.kruise.io/v1alpha1",
                                          "kind": "UnitedDeployment", "name": "shop"}],
                   "placement": evenly_over(MEMBERS)}}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with members_stack(tmp_path_factory.mktemp("kruise-template"), MEMBERS) as running:
        yield running


def split(stack: Stack, member: str) -> dict[str, int] | None:
    """The member's UnitedDeployment's subset replicas, once each subset's pods are ready."""
    ud = stack.get("--context", member, "uniteddeployment", "shop") or {}
    status = ud.get("status") or {}
    return dict(status.get("subsetReplicas") or {}) if status.get("readyReplicas") == 3 else None


def test_the_template_is_divided_over_members_and_each_member_splits_its_share(
        stack: Stack) -> None:
    stack.until(lambda: all(ready(stack, m) for m in MEMBERS), "both members Ready")
    stack.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([TEMPLATE, POLICY]))
    stack.until(lambda: all(split(stack, m) == {"a": 1, "b": 2} for m in MEMBERS),
                "each member's UnitedDeployment running 1 in zone-a and 2 in zone-b")
    binding = stack.get("rb", "shop-uniteddeployment")
    assert binding["spec"]["clusters"] == [{"name": m, "replicas": 3} for m in MEMBERS]
    # The host placed nothing itself: no workload of the template's in the host.
    assert (stack.get("deployments") or {}).get("items") == []

    def summed() -> bool:
        status = (stack.get("uniteddeployment", "shop") or {}).get("status") or {}
        return (status.get("replicas"), status.get("readyReplicas")) == (6, 6)

    stack.until(summed, "the members' status summed into the host's template")
