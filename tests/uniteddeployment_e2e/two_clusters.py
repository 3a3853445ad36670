"""Reading a host UnitedDeployment ``cut`` of two subsets, ``m1`` in member1 and ``m2`` in
member2 (:func:`~tests.uniteddeployment_e2e.united.two_cluster_united`), and the bus of the
clusters it runs in (:mod:`tests.fixtures.member_clusters`)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from events.messages import Outcome, Plan
from events.streams import KUBE, OUTCOMES, PLANS
from tests.backbone.bus_recording import read_stream as decoded_stream
from tests.fixtures.member_clusters import MemberClusters, get_json, kubectl, read_stream
from tests.fixtures.polling import wait_until
from tests.fixtures.stack_outages import say

NAME = "cut"
T = TypeVar("T")


def wait(check: Callable[[], T | None], *, what: str, timeout: float,
         interval: float = 0.5) -> T:
    """:func:`wait_until`, saying how long it took."""
    started = time.monotonic()
    found = wait_until(check, what=what, timeout=timeout, interval=interval)
    say(f"{what}: {time.monotonic() - started:.1f} s")
    return found


def ready_pods(kubeconfig: Path) -> int | None:
    """The UnitedDeployment's pods in one cluster; None while one is not Running and Ready."""
    pods = get_json(kubeconfig, "pods", "-n", "default", "-l", f"app={NAME}")["items"]
    for pod in pods:
        ready = any(c["type"] == "Ready" and c["status"] == "True"
                    for c in pod.get("status", {}).get("conditions", []))
        if pod["metadata"].get("deletionTimestamp") or not ready:
            return None
    return len(pods)


def placement(stack: MemberClusters) -> dict[str, int | None]:
    return {name: ready_pods(m.kube.kubeconfig) for name, m in stack.members.items()}


def cluster_state(stack: MemberClusters, name: str) -> tuple[str, list[str]]:
    """member's Ready status in the host and its NoSchedule taints."""
    obj = get_json(stack.host.kubeconfig, "clusters.cluster.karmada.io", name)
    ready = next((c.get("status", "") for c in obj.get("status", {}).get("conditions", [])
                  if c.get("type") == "Ready"), "")
    return ready, [t["key"] for t in obj.get("spec", {}).get("taints") or []
                   if t.get("effect") == "NoSchedule"]


def scale(stack: MemberClusters, replicas: int) -> None:
    kubectl(stack.host.kubeconfig, "patch", "uniteddeployment", NAME, "--type", "merge",
            "-p", json.dumps({"spec": {"replicas": replicas}}))


def wait_placed(stack: MemberClusters, want: dict[str, int], what: str) -> None:
    try:
        wait(lambda: placement(stack) == want, what=what, timeout=120)
    except BaseException:
        print(f"placement {placement(stack)}, subsets {subset_replicas(stack)}")
        raise


def subset_replicas(stack: MemberClusters) -> dict[str, int]:
    status = get_json(stack.host.kubeconfig, "uniteddeployment", NAME).get("status", {})
    return dict(status.get("subsetReplicas") or {})


MEMBER1_KUBE = "kube.*.member1.>"
MEMBER1_OUTCOMES = "outcome.member1.>"


def copies_differ(stack: MemberClusters, member: str = "member1") -> list[str]:
    """Where the hub's copies of the member's observations and outcomes differ from the
    member's streams; empty when they are the same. ``OUTCOMES`` must match message for message,
    in order on each subject (an object's outcomes), as sourcing promises; the order between
    subjects is said when it differs, not required. ``KUBE`` keeps one message per subject, and
    each subject's must match; their order across subjects may not: after kill -9 of
    nats-servers one side can have stored a message again, at the end, where the other dropped
    it as a duplicate."""
    url, hub = stack.members[member].server.url, stack.hub.server.url
    problems = []
    for stream, subjects in ((KUBE.name, f"kube.*.{member}.>"),
                             (OUTCOMES.name, f"outcome.{member}.>")):
        mine, copied = read_stream(url, stream, subjects), read_stream(hub, stream, subjects)
        same = (sorted(mine) == sorted(copied)) if stream == KUBE.name else (
            _per_subject(mine) == _per_subject(copied))
        if not same:
            only_member = [m[::2] for m in mine if m not in copied]
            only_hub = [m[::2] for m in copied if m not in mine]
            problems.append(f"{stream}: {len(mine)} in {member}, {len(copied)} at the hub; "
                            f"only in {member} {only_member[:5]}, only at the hub "
                            f"{only_hub[:5]}")
            if not only_member and not only_hub:  # the same messages in another order
                problems.append(f"{stream} in {member}: {[m[::2] for m in mine]}; at the hub: "
                                f"{[m[::2] for m in copied]}")
        elif mine != copied:
            say(f"{stream}: the hub holds {member}'s {len(mine)} messages in another order")
    return problems


def _per_subject(messages: list[tuple[str, bytes, str]]) -> dict[str, list[tuple[str, bytes, str]]]:
    out: dict[str, list[tuple[str, bytes, str]]] = {}
    for message in messages:
        out.setdefault(message[0], []).append(message)
    return out


def copies_match(stack: MemberClusters, member: str = "member1") -> bool:
    """The hub's copies of the member's observations and outcomes are the member's streams."""
    return not copies_differ(stack, member)


def held(url: str, stream: str, subjects: str) -> int:
    return len(read_stream(url, stream, subjects))


def plans_and_outcomes(url: str) -> tuple[list[Plan], list[Outcome]]:
    plans = [p for _, p in asyncio.run(decoded_stream(url, PLANS.name))]
    outcomes = [o for _, o in asyncio.run(decoded_stream(url, OUTCOMES.name))]
    assert all(isinstance(p, Plan) for p in plans)
    assert all(isinstance(o, Outcome) for o in outcomes)
    return plans, outcomes
