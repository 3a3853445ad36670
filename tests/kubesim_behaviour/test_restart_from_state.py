"""A cluster restarted from its state file carries on: nodes, pods and addresses survive."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubesim import KubeSimThread
from kubesim.behaviour import behaviours_for
from kubesim.behaviour.settings import Settings
from kubesim.interface import DEPLOYMENTS, NODES, PODS
from tests.fixtures.cluster import is_ready
from tests.fixtures.polling import wait_until
from tests.kubesim_behaviour.workloads import deployment


def wait(
    sim: KubeSimThread, check: Callable[[list[dict[str, Any]]], bool], what: str
) -> list[dict[str, Any]]:
    def ready_pods() -> list[dict[str, Any]] | None:
        pods, _ = sim.call(sim.cluster.list(PODS, namespace="default"))
        return pods if check(pods) else None

    return wait_until(ready_pods, what=what)


def test_a_restarted_cluster_keeps_its_pods_running_and_their_addresses_distinct(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state.json"
    first = KubeSimThread(tls=False, state_file=state, behaviours=behaviours_for(Settings.fast()))
    first.start()
    try:
        first.call(first.cluster.create(DEPLOYMENTS, deployment("kept", 6), namespace="default"))
        before = wait(first, lambda pods: sum(is_ready(p) for p in pods) == 6, "6 ready pods")
    finally:
        first.stop()
    second = KubeSimThread(tls=False, state_file=state, behaviours=behaviours_for(Settings.fast()))
    second.start()
    try:
        nodes, _ = second.call(second.cluster.list(NODES))
        assert len(nodes) == 12
        second.call(
            second.cluster.patch(
                DEPLOYMENTS,
                "kept",
                {"spec": {"replicas": 24}},
                patch_type="merge",
                namespace="default",
            )
        )
        after = wait(second, lambda pods: sum(is_ready(p) for p in pods) == 24, "24 ready pods")
    finally:
        second.stop()
    names_before = {p["metadata"]["name"] for p in before}
    kept = [p for p in after if p["metadata"]["name"] in names_before]
    assert len(kept) == 6
    assert {p["status"]["podIP"] for p in kept} == {p["status"]["podIP"] for p in before}
    assert len({p["status"]["podIP"] for p in after}) == 24
