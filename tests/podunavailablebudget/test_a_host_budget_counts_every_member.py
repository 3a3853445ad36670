"""A budget in the host of member clusters over a propagated Deployment: its status counts the
pods of the template's copies in every member against the template's replicas, whether it
names the template (targetRef) or selects its pods (selector); the members' pods are not
patched from the host; and it is computed again while nothing of the host changes."""

from __future__ import annotations

from typing import Any

from events import codec, subjects
from events.messages import Observation
from spreadbus.features.podunavailablebudget.planning.rule import (
    MEMBER_RECHECK_SECONDS,
    BudgetRule,
)
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import Desired
from tests.podunavailablebudget.builders import NS, budget, owner_ref, pod, replicaset, workload

T0 = 1_800_000_000.0
RESOURCES = {"Pod": ("", "pods"), "PodUnavailableBudget": ("policy.kruise.io",
                                                           "podunavailablebudgets"),
             "Deployment": ("apps", "deployments"), "ReplicaSet": ("apps", "replicasets"),
             "ResourceBinding": ("work.karmada.io", "resourcebindings")}


class Clusters:
    def __init__(self) -> None:
        self.view = KubeProjection()
        self.rule = BudgetRule("host", min_interval_seconds=0)
        self.seq = 0

    def put(self, cluster: str, obj: dict[str, Any]) -> None:
        self.seq += 1
        group, resource = RESOURCES[obj["kind"]]
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.seq)
        message = Observation(cluster=cluster, group=group, version="v1", resource=resource,
                              event="MODIFIED", object=obj)  # type: ignore[arg-type]
        self.view.apply(self.seq, subjects.observation(cluster, group, resource, NS,
                                                       meta["name"]), codec.encode(message))

    def decide(self, now: float) -> list[Desired]:
        changed = self.view.take_changed() | self.rule.due(now)
        return self.rule.desired(self.view, changed, now)


def propagated(world: Clusters, shares: dict[str, list[bool]]) -> dict[str, Any]:
    """The template ``web-server`` (4 replicas) bound in the host, and in each member a copy
    whose ReplicaSet runs one pod per entry of its list (ready or not)."""
    template = workload(replicas=4, uid="template-uid")
    world.put("host", template)
    world.put("host", {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                       "metadata": {"name": "web-server-deployment", "namespace": NS},
                       "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment",
                                             "namespace": NS, "name": "web-server",
                                             "uid": "template-uid"}}})
    for member, pods in shares.items():
        copy = workload(replicas=len(pods), uid=f"copy-{member}")
        copy["metadata"]["annotations"] = {
            "resourcebinding.karmada.io/name": "web-server-deployment",
            "resourcebinding.karmada.io/namespace": NS}
        world.put(member, copy)
        rs = replicaset(copy, template_hash="7d9f", replicas=len(pods))
        rs["metadata"]["uid"] = f"rs-{member}"
        world.put(member, rs)
        for i, ready in enumerate(pods):
            world.put(member, pod(f"web-server-7d9f-{member}{i}", owner=rs, ready=ready,
                                  related=None))
        # A pod of the namespace no copy owns: not the budget's.
        world.put(member, pod(f"stray-{member}", related=None))
    return template


def status_of(wants: list[Desired]) -> dict[str, Any]:
    (want,) = [w for w in wants if w.verb == "patch_status"]
    status: dict[str, Any] = want.patch["status"]
    return status


def test_a_targetref_budget_counts_the_pods_of_every_copy() -> None:
    world = Clusters()
    propagated(world, {"member1": [True, True], "member2": [True, False]})
    world.put("host", budget(max_unavailable=1))
    wants = world.decide(T0)
    status = status_of(wants)
    assert (status["totalReplicas"], status["desiredAvailable"], status["currentAvailable"],
            status["unavailableAllowed"]) == (4, 3, 3, 0)
    # The members' pods are linked in their members, never patched from the host.
    assert [w for w in wants if w.verb == "patch"] == []


def test_a_selector_budget_counts_them_against_the_template_s_replicas() -> None:
    world = Clusters()
    propagated(world, {"member1": [True, True], "member2": [True, True, True]})
    world.put("host", budget(target=None, selector={"matchLabels": {"app": "web"}},
                             max_unavailable=1))
    status = status_of(world.decide(T0))
    # Five pods run while a copy is held above its share; the template asks for four.
    assert (status["totalReplicas"], status["desiredAvailable"], status["currentAvailable"],
            status["unavailableAllowed"]) == (4, 3, 5, 2)


def test_a_member_s_change_is_counted_on_the_next_look() -> None:
    world = Clusters()
    propagated(world, {"member1": [True, True], "member2": [True, False]})
    world.put("host", budget(max_unavailable=1))
    world.put("host", {**budget(max_unavailable=1), "status": status_of(world.decide(T0))})
    assert world.decide(T0) == [], "the status written holds"
    rs = world.view.get("member2", "apps", "replicasets", NS, "web-server-7d9f")
    assert rs is not None
    world.put("member2", pod("web-server-7d9f-member21", owner=rs, related=None))
    # The member's pod is another cluster's key: nothing until the rule looks again.
    assert world.rule.desired(world.view, set(), T0 + 0.1) == []
    assert world.rule.next_wake() == T0 + MEMBER_RECHECK_SECONDS
    assert status_of(world.decide(T0 + MEMBER_RECHECK_SECONDS))["currentAvailable"] == 4


def test_without_a_binding_a_host_budget_counts_the_host_s_pods_alone() -> None:
    world = Clusters()
    template = workload(replicas=4, uid="template-uid")
    world.put("host", template)
    world.put("member1", pod("web-server-x", owner=template, related=None))
    world.put("host", budget(max_unavailable=1))
    status = status_of(world.decide(T0))
    assert status["currentAvailable"] == 0
    assert world.rule.next_wake() is None
    assert owner_ref(template)["uid"] == "template-uid"
