"""Properties of the propagation rule over a host and its members, for any static weights and
replica count: once it settles, the members' copies hold exactly the template's replicas, split
as the binding's ``spec.clusters`` says, every copy passes the member's check against the
binding, and a further round on the same state plans nothing."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.propagation.core.member_copy import follows
from tests.propagation.test_the_planner_propagates_through_members import (
    MEMBERS,
    NOW,
    World,
    binding,
    deployment,
    member_cluster,
    policy,
)


@settings(max_examples=30, deadline=None)
@given(replicas=st.integers(0, 40), weights=st.tuples(st.integers(0, 5), st.integers(0, 5)))
def test_settled_copies_hold_the_templates_replicas_and_follow_the_binding(
        replicas: int, weights: tuple[int, int]) -> None:
    scheduling = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                  "weightPreference": {"staticWeightList": [
                      {"targetCluster": {"clusterNames": [name]}, "weight": weight}
                      for name, weight in zip(MEMBERS, weights, strict=True)]}}
    w = World()
    for name in MEMBERS:
        w.put("host", "cluster.karmada.io", "clusters", member_cluster(name))
    w.put("host", "policy.karmada.io", "propagationpolicies", policy(scheduling))
    w.put("host", "apps", "deployments", deployment(replicas))
    w.settle()
    rb = binding(w)
    shares = {c["name"]: c["replicas"] for c in rb["spec"].get("clusters") or []}
    copies = {}
    for name in MEMBERS:
        placed = w.get(name, "apps", "deployments", "default", "demo-deploy")
        if placed is not None:
            assert follows(rb, placed, None) == ""
            copies[name] = placed["spec"]["replicas"]
    assert copies == shares
    if replicas:
        assert sum(copies.values()) == replicas
    w.view.mark_all_changed()
    assert [x for x in w.decide(NOW) if not w._true(x)] == []
