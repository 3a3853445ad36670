"""Karmada's two WorkloadRebalancer examples of seed 004 live, on one ``spreadbus up --members
member1,member2``, each from its file in ``examples/propagation/``:

- ``batch.yaml``: a Deployment, a ConfigMap and a ClusterRole that one ClusterPropagationPolicy
  propagates to both members (the ClusterRole through a ClusterResourceBinding, created in each
  member by the member's actuator); one rebalancer names all three, and its status is the
  seed's: each ``Successful``, in Karmada's order (apiVersion, kind, namespace, name), with
  ``finishTime`` and ``observedGeneration`` 1;
- ``edited-rebalancer.yaml``: the rebalancer first names demo-deploy-1 (propagated) and
  demo-deploy-2 (no such Deployment, so no binding); edited to demo-deploy-3 alone, its status is
  the seed's at generation 2: demo-deploy-1 kept (it had succeeded), demo-deploy-2 dropped (it
  had failed), demo-deploy-3 added, with a new ``finishTime``.

Between the two, the batch's ClusterPropagationPolicy is deleted: its claim leaves the three
bindings, whose schedules and copies stay, as Karmada leaves them.

Both run in one test, one after the other, so that the stack starts once whichever test
worker takes it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from spreadbus.features.propagation.core.claim import CPP_NAME
from tests.examples.manifests import EXAMPLES, objects
from tests.propagation.members_stack import Stack, members_stack, ready

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
MEMBERS = ("member1", "member2")
BATCH = objects(EXAMPLES / "propagation" / "batch.yaml")
EDITED = objects(EXAMPLES / "propagation" / "edited-rebalancer.yaml")
RBAC = "rbac.authorization.k8s.io/v1"
BINDINGS = (("rb", "demo-deploy-deployment"), ("rb", "demo-config-configmap"),
            ("clusterresourcebinding", "demo-role-clusterrole"))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with members_stack(tmp_path_factory.mktemp("rebalancers"), MEMBERS) as running:
        yield running


def applied(stack: Stack, docs: list[dict[str, Any]]) -> None:
    stack.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))


def rebalancer(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The file's rebalancer as a user writes one: what the API server keeps is its own."""
    (found,) = [copy.deepcopy(d) for d in docs if d["kind"] == "WorkloadRebalancer"]
    found["metadata"] = {"name": found["metadata"]["name"]}
    found.pop("status", None)
    return found


def status_of(stack: Stack, name: str = "demo") -> dict[str, Any]:
    status: dict[str, Any] = (stack.get("workloadrebalancer", name) or {}).get("status", {})
    return status


def finished_at(stack: Stack, generation: int) -> Callable[[], dict[str, Any] | None]:
    """Every entry of ``generation`` decided. (While one is retried, Karmada keeps the
    ``finishTime`` of an earlier generation, so that alone does not say it finished.)"""
    def check() -> dict[str, Any] | None:
        status = status_of(stack)
        done = (status.get("observedGeneration") == generation and "finishTime" in status
                and all("result" in e for e in status.get("observedWorkloads", [])))
        return status if done else None
    return check


def entry(workload: dict[str, str], result: str, reason: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"result": result, "workload": workload}
    if reason:
        out["reason"] = reason
    return out


def test_the_batch_rebalancer_then_the_edited_rebalancer(stack: Stack) -> None:
    batch_rebalancer(stack)
    edited_rebalancer(stack)


def batch_rebalancer(stack: Stack) -> None:
    """A Deployment, a ConfigMap and a ClusterRole, and one rebalancer over all three."""
    stack.until(lambda: all(ready(stack, m) for m in MEMBERS), "both members Ready")
    applied(stack, [d for d in BATCH if d["kind"] != "WorkloadRebalancer"])
    role = next(d for d in BATCH if d["kind"] == "ClusterRole")

    def propagated() -> bool:
        crb = stack.get("clusterresourcebinding", "demo-role-clusterrole") or {}
        rb = stack.get("rb", "demo-deploy-deployment") or {}
        return (sorted(c["name"] for c in crb.get("spec", {}).get("clusters", [])) == [
                    *MEMBERS]
                and sum(c.get("replicas", 0) for c in rb.get("spec", {}).get("clusters", []))
                == 3
                and all((stack.get("--context", m, "clusterrole", "demo-role") or {}).get(
                    "rules") == role["rules"]
                        and (stack.get("--context", m, "configmap", "demo-config") or {}).get(
                    "data") == {"greeting": "hello"} for m in MEMBERS))

    stack.until(propagated, "the ClusterRole and the ConfigMap in both members, the "
                            "Deployment's 3 replicas scheduled")
    copied = stack.get("--context", "member1", "clusterrole", "demo-role")
    assert copied["metadata"]["annotations"]["resourcebinding.karmada.io/name"] == \
        "demo-role-clusterrole"

    applied(stack, [rebalancer(BATCH)])
    stack.until(finished_at(stack, 1), "the batch rebalancer finished")
    status = status_of(stack)
    assert set(status) == {"finishTime", "observedGeneration", "observedWorkloads"}, status
    assert status["observedWorkloads"] == [
        entry({"apiVersion": "apps/v1", "kind": "Deployment", "name": "demo-deploy",
               "namespace": "default"}, "Successful"),
        entry({"apiVersion": RBAC, "kind": "ClusterRole", "name": "demo-role"}, "Successful"),
        entry({"apiVersion": "v1", "kind": "ConfigMap", "name": "demo-config",
               "namespace": "default"}, "Successful"),
    ]
    # Each binding holds the rebalancer's trigger, its creation time.
    created = stack.get("workloadrebalancer", "demo")["metadata"]["creationTimestamp"]
    for kind, name in BINDINGS:
        assert stack.get(kind, name)["spec"]["rescheduleTriggeredAt"] == created, name

    # The policy deleted: as Karmada, its claim leaves the bindings, and nothing else changes
    # (the schedules and the members' copies stay).
    crb = stack.get("clusterresourcebinding", "demo-role-clusterrole")
    assert crb["metadata"]["annotations"][CPP_NAME] == "demo"
    scheduled = {n: stack.get(k, n)["spec"]["clusters"] for k, n in BINDINGS}
    stack.kubectl("delete", "clusterpropagationpolicy", "demo")
    stack.until(lambda: all(CPP_NAME not in stack.get(k, n)["metadata"].get("annotations", {})
                            for k, n in BINDINGS), "the deleted policy's claim removed")
    assert {n: stack.get(k, n)["spec"]["clusters"] for k, n in BINDINGS} == scheduled
    assert all(stack.get("--context", m, "clusterrole", "demo-role") for m in MEMBERS)


def edited_rebalancer(stack: Stack) -> None:
    """The rebalancer edited: the success kept, the failure dropped, the new one added."""
    stack.kubectl("delete", "workloadrebalancer", "demo")
    stack.until(lambda: stack.get("workloadrebalancer", "demo") is None,
                "no rebalancer named demo")
    applied(stack, [d for d in EDITED if d["kind"] != "WorkloadRebalancer"])
    stack.until(lambda: all(stack.get("rb", f"demo-deploy-{i}-deployment") for i in (1, 3)),
                "demo-deploy-1 and demo-deploy-3 bound")

    def deploy(i: int) -> dict[str, str]:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"demo-deploy-{i}",
                "namespace": "default"}

    # Generation 1, as the file's status records it: demo-deploy-1 and demo-deploy-2.
    first = rebalancer(EDITED)
    first["spec"]["workloads"] = [deploy(1), deploy(2)]
    applied(stack, [first])
    stack.until(finished_at(stack, 1), "the rebalancer finished at generation 1")
    before = status_of(stack)
    assert before["observedWorkloads"] == [
        entry(deploy(1), "Successful"),
        entry(deploy(2), "Failed", "ReferencedBindingNotFound"),
    ]
    # The file's rebalancer: its workloads edited to demo-deploy-3 alone.
    applied(stack, [rebalancer(EDITED)])
    stack.until(finished_at(stack, 2), "the rebalancer finished at generation 2")
    status = status_of(stack)
    assert stack.get("workloadrebalancer", "demo")["metadata"]["generation"] == 2
    assert set(status) == {"finishTime", "observedGeneration", "observedWorkloads"}, status
    assert status["observedWorkloads"] == [entry(deploy(1), "Successful"),
                                           entry(deploy(3), "Successful")]
    assert status["finishTime"] >= before["finishTime"]
