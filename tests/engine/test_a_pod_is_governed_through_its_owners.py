"""Whether a governor governs a pod is read from the pod's controller chain, not its annotations.

Pure: :func:`step` is asked once per object of the chain, as the actuator reads them.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from spreadbus.engine.feature_set import plan_grants
from spreadbus.engine.plan_scope import (
    MAX_HOPS,
    Reach,
    Read,
    chain_end,
    named,
    selected,
    step,
)
from spreadbus.features.registry import BUILTIN


def grant_of(rule: str, verb: str, resource: str) -> Any:
    return next(g for g in plan_grants(BUILTIN)
                if (g.rule, g.verb, g.resource) == (rule, verb, resource))


WS_EVICT = grant_of("workloadspread", "evict", "pods")
UD_LABEL = grant_of("uniteddeployment", "patch", "pods")
PUB_LINK = grant_of("podunavailablebudget", "patch", "pods")
WR_REQUEST = grant_of("workloadrebalancer", "patch", "workloadspreads")


def obj(kind: str, name: str, owner: tuple[str, str, str] | None = None, uid: str = "",
        labels: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "uid": uid or f"uid-{name}",
                                "labels": labels or {}}
    if owner is not None:
        metadata["ownerReferences"] = [{"apiVersion": owner[0], "kind": owner[1],
                                        "name": owner[2], "uid": f"uid-{owner[2]}",
                                        "controller": True}]
    return {"kind": kind, "metadata": metadata}


SPREAD = {"spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                 "name": "web"}}}


def walk(grant: Any, end: Reach, chain: dict[str, dict[str, Any]], start: dict[str, Any]
         ) -> tuple[bool | str, list[str]]:
    """What the actuator does: step, read what it asks for, step again."""
    reads: list[str] = []
    current = start
    while True:
        verdict = step(grant, end, current)
        if not isinstance(verdict, Read):
            return verdict, reads
        if len(reads) == MAX_HOPS:
            return "too deep", reads
        reads.append(f"{verdict.resource}/{verdict.name}")
        current = chain[verdict.name]


def test_a_deployments_pod_reaches_the_workloadspreads_target_through_one_replicaset() -> None:
    end = chain_end(WS_EVICT, "ws", "", SPREAD)
    assert end == Reach("apps", "Deployment", "web")
    chain = {"web-7d": obj("ReplicaSet", "web-7d", ("apps/v1", "Deployment", "web"))}
    pod = obj("Pod", "web-7d-x", ("apps/v1", "ReplicaSet", "web-7d"))
    assert walk(WS_EVICT, end, chain, pod) == (True, ["replicasets/web-7d"])


def test_a_pod_of_another_workload_or_of_none_is_not_the_workloadspreads() -> None:
    end = chain_end(WS_EVICT, "ws", "", SPREAD)
    assert end is not None
    chain = {"api-5c": obj("ReplicaSet", "api-5c", ("apps/v1", "Deployment", "api"))}
    verdict, reads = walk(WS_EVICT, end, chain,
                          obj("Pod", "api-5c-x", ("apps/v1", "ReplicaSet", "api-5c")))
    assert verdict == ("ReplicaSet 'api-5c' is controlled by Deployment 'api', "
                       "not below Deployment 'web'")
    assert reads == ["replicasets/api-5c"]
    assert step(WS_EVICT, end, obj("Pod", "bare")) == (
        "Pod 'bare' has no controller, so no path to Deployment 'web'")
    # A CloneSet is not a link a WorkloadSpread's chain passes through: nothing more is read.
    assert isinstance(step(WS_EVICT, end, obj("Pod", "c", ("apps.kruise.io/v1alpha1",
                                                          "CloneSet", "web"))), str)


def test_a_workloadspread_without_a_target_governs_no_pod() -> None:
    assert chain_end(WS_EVICT, "ws", "", {"spec": {}}) is None


def test_a_uniteddeployments_pod_reaches_it_through_its_subset_workload() -> None:
    end = chain_end(UD_LABEL, "ud", "uid-ud", None)
    assert end == Reach("apps.kruise.io", "UnitedDeployment", "ud", "uid-ud")
    chain = {
        "ud-a-6f": obj("ReplicaSet", "ud-a-6f", ("apps/v1", "Deployment", "ud-a")),
        "ud-a": obj("Deployment", "ud-a", ("apps.kruise.io/v1alpha1", "UnitedDeployment", "ud")),
        "ud-b": obj("StatefulSet", "ud-b", ("apps.kruise.io/v1alpha1", "UnitedDeployment",
                                           "other")),
    }
    assert walk(UD_LABEL, end, chain, obj("Pod", "p", ("apps/v1", "ReplicaSet", "ud-a-6f"))
                ) == (True, ["replicasets/ud-a-6f", "deployments/ud-a"])
    verdict, _ = walk(UD_LABEL, end, chain, obj("Pod", "q", ("apps/v1", "StatefulSet", "ud-b")))
    assert isinstance(verdict, str)
    assert "UnitedDeployment 'other'" in verdict
    # Another UnitedDeployment of the same name (another uid) is not this one.
    recreated = chain_end(UD_LABEL, "ud", "uid-new", None)
    assert recreated is not None
    verdict, _ = walk(UD_LABEL, recreated, chain,
                      obj("Pod", "p", ("apps/v1", "ReplicaSet", "ud-a-6f")))
    assert isinstance(verdict, str)


def test_a_budgets_selector_or_its_target_decides() -> None:
    budget = {"spec": {"selector": {"matchLabels": {"app": "web"}}}}
    assert selected(PUB_LINK, budget, obj("Pod", "p", labels={"app": "web"}))
    assert not selected(PUB_LINK, budget, obj("Pod", "p", labels={"app": "api"}))
    assert not selected(PUB_LINK, {"spec": {"selector": {}}}, obj("Pod", "p"))
    targeted = {"spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet",
                                       "name": "db"}}}
    assert not selected(PUB_LINK, targeted, obj("Pod", "p"))
    end = chain_end(PUB_LINK, "pub", "", targeted)
    assert end is not None
    assert step(PUB_LINK, end, obj("Pod", "db-0", ("apps/v1", "StatefulSet", "db"))) is True


def test_a_rebalancer_names_a_workloadspread_through_its_target() -> None:
    rebalancer = {"spec": {"workloads": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "web"},
        {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
         "namespace": "shop", "name": "ud"}]}}
    spread = {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
              "metadata": {"name": "ws"}, **SPREAD}
    assert named(WR_REQUEST, rebalancer, spread, "shop")
    assert not named(WR_REQUEST, rebalancer, spread, "other")
    other = {**spread, "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                              "name": "api"}}}
    assert not named(WR_REQUEST, rebalancer, other, "shop")
    united = {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
              "metadata": {"name": "ud"}}
    assert named(WR_REQUEST, rebalancer, united, "shop")
    assert not named(WR_REQUEST, {"spec": {}}, united, "shop")


NAMES = st.sampled_from(["web", "api", "ud", "x"])
KINDS = st.sampled_from([("apps/v1", "ReplicaSet"), ("apps/v1", "Deployment"),
                         ("apps/v1", "StatefulSet"), ("apps.kruise.io/v1alpha1", "CloneSet"),
                         ("v1", "ConfigMap")])


@given(links=st.lists(st.tuples(KINDS, NAMES), min_size=0, max_size=5))
def test_a_chain_is_governed_exactly_when_an_owner_on_it_is_the_target(
        links: list[tuple[tuple[str, str], str]]) -> None:
    """Walking never reads past the target, never more than MAX_HOPS objects, and says
    governed exactly when the first non-link owner (or the target, earlier) is the target."""
    end = Reach("apps", "Deployment", "web")
    chain: dict[str, dict[str, Any]] = {}
    objects = [obj("Pod", "pod")]
    for i, ((api_version, kind), name) in enumerate(links):
        unique = f"{name}-{i}" if (kind, name) != ("Deployment", "web") else name
        objects[-1]["metadata"]["ownerReferences"] = [
            {"apiVersion": api_version, "kind": kind, "name": unique, "controller": True}]
        nxt = obj(kind, unique)
        chain[unique] = nxt
        objects.append(nxt)
    verdict, reads = walk(WS_EVICT, end, chain, objects[0])
    expected = False
    for depth, ((api_version, kind), name) in enumerate(links):
        if (kind, name) == ("Deployment", "web") and api_version == "apps/v1":
            expected = depth <= MAX_HOPS  # reached after reading ``depth`` ReplicaSets
            break
        if kind != "ReplicaSet":
            break
    assert (verdict is True) == expected, (links, verdict)
    assert len(reads) <= MAX_HOPS
    assert verdict is True or isinstance(verdict, str)
