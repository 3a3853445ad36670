"""The scheduler's NodeAffinity answer, shared between nodes that agree on the labels it reads,
is the answer each node would get on its own."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesemantics.node_affinity import pod_matches_node
from kubesim.behaviour.scheduling import NodeInfo, node_fit_for

KEYS = ("zone", "pool", "arch")
VALUES = ("a", "b", "c", "")  # "" is a value, not an absent label

labels = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)
requirement = st.one_of(
    st.fixed_dictionaries({
        "key": st.sampled_from(KEYS),
        "operator": st.sampled_from(["In", "NotIn"]),
        "values": st.lists(st.sampled_from(VALUES), max_size=2),
    }),
    st.fixed_dictionaries({
        "key": st.sampled_from(KEYS),
        "operator": st.sampled_from(["Exists", "DoesNotExist"]),
    }),
)
field = st.fixed_dictionaries({
    "key": st.just("metadata.name"),
    "operator": st.sampled_from(["In", "NotIn"]),
    "values": st.lists(st.sampled_from(["node-0", "node-1", "node-2"]), min_size=1, max_size=1),
})
term = st.fixed_dictionaries(
    {},
    optional={"matchExpressions": st.lists(requirement, max_size=3),
              "matchFields": st.lists(field, max_size=1)},
)
spec = st.fixed_dictionaries(
    {},
    optional={
        "nodeSelector": labels,
        "affinity": st.builds(
            lambda terms: {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}},
            st.lists(term, max_size=3),
        ),
    },
)


def node(i: int, node_labels: dict[str, str]) -> dict[str, Any]:
    name = f"node-{i}"
    return {"metadata": {"name": name, "labels": {**node_labels, "hostname": name}}}


@settings(max_examples=300, deadline=None)
@given(spec, st.lists(labels, min_size=1, max_size=8))
def test_a_shared_node_affinity_answer_equals_each_nodes_own(
    pod_spec: dict[str, Any], node_labels: list[dict[str, str]]
) -> None:
    nodes = [node(i, lab) for i, lab in enumerate(node_labels)]
    fit = node_fit_for({"spec": pod_spec})
    assert [fit(NodeInfo(n)) for n in nodes] == [pod_matches_node(pod_spec, n) for n in nodes]


def test_nodes_of_one_zone_share_an_answer_and_other_zones_do_not() -> None:
    pod_spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a"]}]}]}}}}
    fit = node_fit_for({"spec": pod_spec})
    assert [fit(NodeInfo(node(i, {"zone": z}))) for i, z in enumerate("aabbc")] == [
        True, True, False, False, False,
    ]
