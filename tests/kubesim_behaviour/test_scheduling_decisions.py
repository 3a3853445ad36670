"""The scheduler's filters, scores and failure messages, as pure functions."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kubesim.behaviour.quantity import milli_value, value
from kubesim.behaviour.scheduling import NodeInfo, filter_node, pod_requests, schedule
from kubesim.behaviour.topology import load_topology


def cluster(name: str = "three-zones") -> list[NodeInfo]:
    return [NodeInfo(n) for n in load_topology(name).nodes("2026-01-01T00:00:00Z")]


def pod(
    name: str = "p", *, cpu: str | None = None, memory: str | None = None, **spec: Any
) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    return {
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec},
    }


def test_quantities_parse_like_kubernetes() -> None:
    assert milli_value("100m") == 100
    assert milli_value("1.5") == 1500
    assert milli_value("1u") == 1
    assert value("1Gi") == 2**30
    assert value("1e3") == 1000
    assert value("1.5k") == 1500
    assert value(110) == 110


def test_limits_stand_in_for_missing_requests_and_init_containers_take_the_max() -> None:
    spec = {
        "containers": [
            {"name": "a", "resources": {"limits": {"cpu": "500m"}}},
            {"name": "b", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}},
        ],
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
    }
    assert pod_requests(spec) == {"cpu": 2000, "memory": 2**30}


def test_pods_spread_over_every_empty_node_before_doubling_up() -> None:
    nodes = cluster()
    by_name = {n.name: n for n in nodes}
    chosen = []
    for i in range(12):
        p = pod(f"p{i}", cpu="100m")
        decision = schedule(p, nodes)
        assert decision.node is not None
        by_name[decision.node].add_pod(p)
        chosen.append(decision.node)
    assert sorted(chosen) == sorted(by_name)


def test_a_pod_that_fits_nowhere_gets_the_upstream_message() -> None:
    p = pod(cpu="100", nodeSelector={"topology.kubernetes.io/zone": "zone-a"})
    decision = schedule(p, cluster())
    assert decision.node is None
    assert decision.message == (
        "0/12 nodes are available: 4 Insufficient cpu, "
        "8 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/12 nodes are available: 4 No preemption victims found for incoming pod, "
        "8 Preemption is not helpful for scheduling."
    )


def test_untolerated_taints_are_counted_as_their_own_reason() -> None:
    p = pod(nodeSelector={"type": "virtual-kubelet"})
    decision = schedule(p, cluster("elastic"))
    assert decision.message.startswith(
        "0/6 nodes are available: 2 node(s) had untolerated taint(s), "
        "4 node(s) didn't match Pod's node affinity/selector."
    )
    tolerant = pod(
        nodeSelector={"type": "virtual-kubelet"},
        tolerations=[{"key": "virtual-kubelet.io/provider", "operator": "Exists"}],
    )
    assert schedule(tolerant, cluster("elastic")).node == "eci-1"


def test_unschedulable_nodes_and_node_names_are_filtered() -> None:
    nodes = cluster()
    for info in nodes:
        info.node["spec"]["unschedulable"] = info.name != "zone-c-4"
    assert schedule(pod(), nodes).node == "zone-c-4"
    decision = schedule(pod(nodeName="zone-a-1"), nodes)
    assert "1 node(s) didn't match the requested node name" in decision.message
    assert "11 node(s) were unschedulable" in decision.message


def test_too_many_pods_is_a_reason_of_its_own() -> None:
    nodes = cluster()[:1]
    nodes[0].node["status"]["allocatable"]["pods"] = "1"
    nodes[0].add_pod(pod("existing"))
    assert schedule(pod(), nodes).message.startswith("0/1 nodes are available: 1 Too many pods.")


def test_preferred_affinity_outweighs_free_capacity() -> None:
    nodes = cluster()
    preferred = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "preference": {
                        "matchExpressions": [
                            {
                                "key": "topology.kubernetes.io/zone",
                                "operator": "In",
                                "values": ["zone-c"],
                            }
                        ]
                    },
                }
            ]
        }
    }
    for _ in range(5):
        p = pod(cpu="100m", affinity=preferred)
        decision = schedule(p, nodes)
        assert decision.node is not None
        assert decision.node.startswith("zone-c")
        next(n for n in nodes if n.name == decision.node).add_pod(p)


def test_prefer_no_schedule_taints_are_avoided_but_not_forbidden() -> None:
    nodes = cluster()[:2]
    nodes[0].node["spec"]["taints"] = [{"key": "spot", "effect": "PreferNoSchedule"}]
    assert schedule(pod(), nodes).node == nodes[1].name
    nodes[1].node["spec"]["unschedulable"] = True
    assert schedule(pod(), nodes).node == nodes[0].name


def spread(mode: str, skew: int = 1) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": skew,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": mode,
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]


def test_do_not_schedule_spread_keeps_zone_skew_within_max_skew() -> None:
    nodes = cluster()
    # zone-a is already busy with matching pods on its first node
    for i in range(3):
        nodes[0].add_pod(pod(f"old{i}"))
    placed: dict[str, int] = {}
    for i in range(6):
        p = pod(f"p{i}", topologySpreadConstraints=spread("DoNotSchedule"))
        decision = schedule(p, nodes)
        assert decision.node is not None
        zone = decision.node.rsplit("-", 1)[0]
        placed[zone] = placed.get(zone, 0) + 1
        next(n for n in nodes if n.name == decision.node).add_pod(p)
    assert placed == {"zone-b": 3, "zone-c": 3}


def test_spread_needs_the_topology_label_on_the_node() -> None:
    nodes = cluster()[:1]
    del nodes[0].node["metadata"]["labels"]["topology.kubernetes.io/zone"]
    decision = schedule(pod(topologySpreadConstraints=spread("DoNotSchedule")), nodes)
    assert "(missing required label)" in decision.message


def test_schedule_anyway_spread_prefers_the_emptier_zone() -> None:
    nodes = cluster()
    for info in nodes[:8]:  # zone-a and zone-b carry one matching pod per node
        info.add_pod(pod(f"on-{info.name}"))
    decision = schedule(pod(topologySpreadConstraints=spread("ScheduleAnyway")), nodes)
    assert decision.node is not None
    assert decision.node.startswith("zone-c")


@given(st.lists(st.sampled_from(["100m", "250m", "1", "2"]), min_size=1, max_size=40))
def test_the_scheduler_never_overcommits_cpu(cpus: list[str]) -> None:
    nodes = cluster()
    for i, cpu in enumerate(cpus):
        p = pod(f"p{i}", cpu=cpu)
        decision = schedule(p, nodes)
        if decision.node is not None:
            next(n for n in nodes if n.name == decision.node).add_pod(p)
    for info in nodes:
        assert info.requested.get("cpu", 0) <= info.allocatable()["cpu"]


def test_ties_are_broken_by_node_name_so_runs_repeat() -> None:
    first = [schedule(pod(), cluster()).node for _ in range(3)]
    assert first == ["zone-a-1"] * 3


def anti_affinity(app: str, key: str = "kubernetes.io/hostname") -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
            ]
        }
    }


def place(nodes: list[NodeInfo], p: dict[str, Any]) -> str | None:
    decision = schedule(p, nodes)
    if decision.node is not None:
        next(n for n in nodes if n.name == decision.node).add_pod(p)
    return decision.node


def test_required_anti_affinity_puts_one_replica_per_zone_and_then_refuses() -> None:
    nodes = cluster()
    zones = [
        place(nodes, pod(f"p{i}", affinity=anti_affinity("web", "topology.kubernetes.io/zone")))
        for i in range(3)
    ]
    assert sorted(z.rsplit("-", 1)[0] for z in zones if z) == ["zone-a", "zone-b", "zone-c"]
    fourth = schedule(
        pod("p3", affinity=anti_affinity("web", "topology.kubernetes.io/zone")), nodes
    )
    assert fourth.node is None
    assert fourth.message.startswith(
        "0/12 nodes are available: 12 node(s) didn't match pod anti-affinity rules."
    )


def test_existing_pods_anti_affinity_keeps_others_away() -> None:
    nodes = cluster()
    loner = pod("loner", affinity=anti_affinity("web"))
    loner["metadata"]["labels"] = {"app": "loner"}
    assert place(nodes, loner) == "zone-a-1"
    # the newcomer has no affinity of its own, yet may not join the loner's node
    for info in nodes[1:]:
        info.node["spec"]["unschedulable"] = True
    decision = schedule(pod("web-1"), nodes)
    assert decision.message.startswith(
        "0/12 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules, "
        "11 node(s) were unschedulable."
    )


def test_required_affinity_follows_a_matching_pod_and_lets_the_first_one_start() -> None:
    nodes = cluster()
    follower_affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "cache"}},
                    "topologyKey": "topology.kubernetes.io/zone",
                }
            ]
        }
    }
    lonely = schedule(pod("follower", affinity=follower_affinity), nodes)
    assert lonely.node is None
    assert "12 node(s) didn't match pod affinity rules" in lonely.message
    first = pod("cache-0", affinity=follower_affinity)
    first["metadata"]["labels"] = {"app": "cache"}
    where = place(nodes, first)
    assert where is not None
    zone = where.rsplit("-", 1)[0]
    for i in range(4):
        follower = place(nodes, pod(f"follower-{i}", affinity=follower_affinity))
        assert follower is not None
        assert follower.startswith(zone)


def test_preferred_anti_affinity_spreads_over_hosts() -> None:
    nodes = cluster()[:3]
    preferred = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        }
    }
    # the first node is emptier in cpu terms but already runs a web pod
    nodes[1].add_pod(pod("heavy-1", cpu="3"))
    nodes[2].add_pod(pod("heavy-2", cpu="3"))
    nodes[1].pods["default/heavy-1"]["metadata"]["labels"] = {"app": "other"}
    nodes[2].pods["default/heavy-2"]["metadata"]["labels"] = {"app": "other"}
    nodes[0].add_pod(pod("web-0"))
    assert place(nodes, pod("web-1", affinity=preferred)) != nodes[0].name


ZONE = "topology.kubernetes.io/zone"


@given(
    st.lists(
        st.tuples(
            st.sampled_from([None, "zone-a", "zone-b", "ack", "eci"]),
            st.booleans(),
            st.sampled_from(["100m", "500m", "2", "5"]),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_every_placement_passes_every_filter_and_every_refusal_names_each_node(
    pods: list[tuple[str | None, bool, str]],
) -> None:
    nodes = cluster("elastic") + cluster("three-zones")[:4]
    for i, (zone, tolerant, cpu) in enumerate(pods):
        extra: dict[str, Any] = {}
        if zone:
            extra["nodeSelector"] = {ZONE: zone}
        if tolerant:
            extra["tolerations"] = [{"key": "virtual-kubelet.io/provider", "operator": "Exists"}]
        p = pod(f"p{i}", cpu=cpu, **extra)
        decision = schedule(p, nodes)
        if decision.node is None:
            counts = [
                int(part.split(" ", 1)[0])
                for part in decision.message.split(": ", 1)[1].split(". preemption")[0].split(", ")
            ]
            # a node can fail several resource checks at once, never fewer than one
            assert sum(counts) >= len(nodes)
            assert all(filter_node(p, n) is not None for n in nodes)
            continue
        chosen = next(n for n in nodes if n.name == decision.node)
        assert filter_node(p, chosen) is None
        if zone:
            assert chosen.labels[ZONE] == zone
        if chosen.taints:
            assert tolerant
        chosen.add_pod(p)
