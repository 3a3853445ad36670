"""The leaf link between member1 and the hub is cut while an Adaptive UnitedDeployment in the
host, with one subset in member1 (at most 3 replicas) and one in member2 (the rest), scales.

Real parts (:mod:`tests.fixtures.member_clusters`): a hub nats-server, a leaf nats-server per
member, member1's dialing through a TCP proxy the test cuts; a control-plane host kubesim and a
kubesim per member; the host's watcher, planner and actuator; each member's watcher and
actuator. The story:

1. At 4 replicas: 3 pods in member1, 1 in member2.
2. member1's actuator stops; the UnitedDeployment scales to 2, whose plan for member1 reaches
   member1's own ``PLANS``. The link is cut, then member1's actuator starts again: cut off from
   the hub, it applies the plan it already had (2 pods in member1), and the outcome and the
   observations it makes stay in member1's domain.
3. Still cut, the UnitedDeployment scales to 5 (without the cut: 3 in member1, 2 in member2).
   No heartbeat of member1 reaches the hub, so after the planner's grace period its Cluster
   turns Ready Unknown and tainted unreachable, and Adaptive moves member1's share to member2:
   5 pods there. member1, which hears of none of it, keeps its 2.
4. The link returns: member1's Cluster turns Ready again; the plans queued for it reach it and
   its subset goes to 0 pods, which is the allocation without the cut plus Adaptive's move of 3
   pods to member2, which stay there (member1's 2 pods, which the hub sees again before they
   go, do not pull any back). The hub's copies of member1's observations and outcomes
   are exactly member1's streams (every message, in order, none twice), and every plan on the
   hub has exactly one outcome.

``make test`` runs a cut as long as the story needs with a 3 s grace period; ``make chaos`` holds
the link down for at least 60 s.
"""

from __future__ import annotations

import asyncio
import collections
import time
from pathlib import Path

import pytest
import yaml

from events.streams import OUTCOMES, PLANS
from tests.backbone.bus_recording import read_stream as decoded_stream
from tests.fixtures.member_clusters import (
    ProxyThread,
    kubectl,
    leaf_connections,
    member_clusters,
    read_stream,
)
from tests.fixtures.stack_outages import one_outcome_per_plan
from tests.uniteddeployment_e2e.two_clusters import (
    MEMBER1_OUTCOMES,
    cluster_state,
    copies_differ,
    copies_match,
    held,
    placement,
    plans_and_outcomes,
    ready_pods,
    scale,
    subset_replicas,
    wait,
    wait_placed,
)
from tests.uniteddeployment_e2e.united import two_cluster_united

pytestmark = pytest.mark.e2e

GRACE_SECONDS = 3.0
M1_MAX = 3


def hold_the_cut(proxy: ProxyThread, until: float) -> int:
    """Until ``until`` (monotonic), paced by member1's leaf server's refused redials; how many
    it made."""
    attempts = 0
    while time.monotonic() < until:
        proxy.run(proxy.proxy.refused_attempt(timeout=60))
        attempts += 1
    return attempts


@pytest.mark.parametrize("cut_seconds", [
    pytest.param(0.0, id="as-long-as-needed", marks=pytest.mark.timeout(300)),
    pytest.param(60.0, id="60s", marks=[pytest.mark.slow, pytest.mark.chaos,
                                        pytest.mark.chaos_only, pytest.mark.timeout(600)]),
])
def test_a_member_cut_off_keeps_applying_and_loses_nothing_while_adaptive_moves_its_share(
    tmp_path: Path, cut_seconds: float,
) -> None:
    with member_clusters(tmp_path, ("member1", "member2"), cut=("member1",),
                         planner_args=("--cluster-monitor-grace-seconds",
                                       str(GRACE_SECONDS))) as stack:
        member1 = stack.members["member1"]
        proxy = member1.proxy
        assert proxy is not None
        wait(lambda: all(cluster_state(stack, m) == ("True", []) for m in stack.members),
                   what="both Clusters Ready", timeout=60, interval=0.5)
        kubectl(stack.host.kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump(two_cluster_united(
            "cut", 4, adaptive=True, m1_max=M1_MAX)))
        wait_placed(stack, {"member1": 3, "member2": 1}, "3 pods in member1, 1 in member2")

        # A plan member1 holds but has not applied when the link goes.
        member1.actuator.terminate(20)
        plans_there = held(member1.server.url, PLANS.name, "plan.member1.>")
        scale(stack, 2)
        wait(lambda: held(member1.server.url, PLANS.name, "plan.member1.>")
                   > plans_there and held(member1.server.url, PLANS.name, "plan.member1.>")
                   == held(stack.hub.server.url, PLANS.name, "plan.member1.>"),
                   what="the scale-in's plans for member1 in member1's PLANS",
                   timeout=60, interval=0.5)
        wait(lambda: ready_pods(stack.members["member2"].kube.kubeconfig) == 0,
                   what="member2 scaled in", timeout=60, interval=0.5)
        outcomes_at_hub = held(stack.hub.server.url, OUTCOMES.name, MEMBER1_OUTCOMES)
        outcomes_there = held(member1.server.url, OUTCOMES.name, MEMBER1_OUTCOMES)

        proxy.cut()
        cut_at = time.monotonic()
        wait(lambda: leaf_connections(member1.server) == 0,
                   what="member1's leaf link down", timeout=30, interval=0.2)
        member1.actuator.start()
        member1.actuator.wait_ready()
        wait(lambda: ready_pods(member1.kube.kubeconfig) == 2,
                   what="member1, cut off, applying the plan it had", timeout=60, interval=0.5)
        wait(lambda: held(member1.server.url, OUTCOMES.name, MEMBER1_OUTCOMES)
                   > outcomes_there, what="member1 recording its outcome", timeout=30,
                   interval=0.5)
        assert held(stack.hub.server.url, OUTCOMES.name, MEMBER1_OUTCOMES) == outcomes_at_hub, \
            "an outcome crossed the cut link"

        scale(stack, 5)
        wait(lambda: cluster_state(stack, "member1") == (
            "Unknown", ["cluster.karmada.io/unreachable"]),
            what="member1 Unknown and tainted unreachable", timeout=90, interval=0.5)
        wait(lambda: ready_pods(stack.members["member2"].kube.kubeconfig) == 5,
                   what="Adaptive moving member1's share to member2", timeout=120, interval=0.5)
        assert subset_replicas(stack) == {"m1": 0, "m2": 5}
        assert ready_pods(member1.kube.kubeconfig) == 2, "member1 heard of a plan across the cut"
        assert cluster_state(stack, "member2") == ("True", [])
        redials = hold_the_cut(proxy, cut_at + cut_seconds)
        print(f"cut held {time.monotonic() - cut_at:.1f} s ({redials} refused redials "
              "after the moves)")

        proxy.restore()
        wait(lambda: cluster_state(stack, "member1") == ("True", []),
             what="member1 Ready again", timeout=90)
        try:
            wait(lambda: copies_match(stack),
                 what="the hub's copies of member1's streams equal to member1's", timeout=90,
                 interval=1.0)
        except BaseException:
            print(copies_differ(stack))
            raise
        assert held(stack.hub.server.url, OUTCOMES.name, MEMBER1_OUTCOMES) > outcomes_there

        def answered() -> bool:
            return not one_outcome_per_plan(*plans_and_outcomes(stack.hub.server.url))

        wait(answered, what="every plan on the hub answered once", timeout=60, interval=1.0)
        for url in (stack.hub.server.url, member1.server.url):
            ids = collections.Counter(i for _, _, i in read_stream(url, PLANS.name,
                                                                   "plan.member1.>"))
            assert max(ids.values()) == 1, f"a plan held twice: {ids.most_common(3)}"
        outcomes = [o for _, o in asyncio.run(decoded_stream(member1.server.url,
                                                             OUTCOMES.name))]
        per_plan = collections.Counter(o.plan_id for o in outcomes)
        assert per_plan
        assert max(per_plan.values()) == 1, "a plan with two outcomes in member1"

        def settled() -> dict[str, int] | None:
            where, allocated = placement(stack), subset_replicas(stack)
            counts = {"m1": where["member1"], "m2": where["member2"]}
            return allocated if counts == allocated and sum(allocated.values()) == 5 else None

        final = wait(settled, what="5 pods placed as the UnitedDeployment allocates them",
                     timeout=120)
        print(f"final allocation {final}")
        # Without the cut 3 + 2; Adaptive moved member1's 3 to member2, and they stay there.
        assert final == {"m1": 0, "m2": 5}
        wait(lambda: copies_match(stack), what="the scale-in's observations copied too",
             timeout=90, interval=1.0)
