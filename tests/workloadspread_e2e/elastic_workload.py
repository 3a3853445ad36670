"""The seed's elastic example on the local stack, as the scenarios that compare runs read it.

A fixed pool (subset ``ACK``, ``maxReplicas`` 8, zone ``ack``) and an elastic overflow (``ECI``,
the virtual nodes of zone ``eci``) over one Deployment. :class:`SpreadWorkload` drives it in one
namespace and reads its state as :class:`SpreadState`: where the pods are (subset, node zone,
deletion cost, a multiset since pod names are random) and each subset's status replicas and
missingReplicas. :func:`converge` waits until that state has settled and the services are done
with it, so two runs can be compared change by change.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

import nats
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from nats.errors import Error as NatsError

from events.streams import OUTCOMES, PLANS
from spreadbus.cli.local_stack import Child, Stack
from tests.workloadspread_e2e.stack import (
    DELETION_COST,
    create_spread,
    deployment,
    elastic_spread,
    spread_status,
    subset_of,
    wait_for,
)

NAME = "ws-demo"
WORKLOAD = "workload-xxx"
FIXED_POOL = 8
QUIET_SECONDS = 1.0
"""How long a settled state must stay the same, the services caught up and no new plan
published, to count as converged (the planner plans a WorkloadSpread at most every 0.25 s)."""
CONVERGE_TIMEOUT = 120.0
TEMPLATE_REVISION = "example.spreadbus.io/revision"

SEED_FIXED_POOL = 100
"""The fixed pool of the seed's own example (``maxReplicas: 100``)."""


Change = tuple[str, int]
"""``("replicas", n)`` scales the Deployment; ``("template", n)`` rolls out revision ``n``."""
PodPlace = tuple[str, str, str]
"""A pod's subset, its node's zone and its deletion cost."""


@dataclass(frozen=True)
class SpreadState:
    replicas: int
    pods: tuple[PodPlace, ...]
    """Sorted: the multiset of pod places."""
    subsets: tuple[tuple[str, int, int], ...]
    """Each subset's name, replicas and missingReplicas, in spec order."""

    def brief(self) -> str:
        places = ", ".join(f"{n} x {subset} in {zone} costing {cost}" for (subset, zone, cost), n
                           in sorted(collections.Counter(self.pods).items()))
        subsets = ", ".join(f"{name} {replicas} (missing {missing})"
                            for name, replicas, missing in self.subsets)
        return f"{self.replicas} pods: {places}; status: {subsets}"


def elastic_example(replicas: int, fixed_pool: int = FIXED_POOL) -> SpreadState:
    """The seed's elastic example: the fixed pool filled first, the rest elastic (scale-in takes
    the elastic pods first), each pod costing what its subset's position gives, 200 and 100."""
    fixed = min(replicas, fixed_pool)
    return SpreadState(
        replicas=replicas,
        pods=tuple(sorted([("ACK", "ack", "200")] * fixed
                          + [("ECI", "eci", "100")] * (replicas - fixed))),
        subsets=(("ACK", fixed, fixed_pool - fixed), ("ECI", replicas - fixed, -1)),
    )


@dataclass
class SpreadWorkload:
    """The WorkloadSpread and its Deployment in one namespace of the cluster."""

    api: client.ApiClient
    namespace: str
    zones: dict[str, str]
    """Node name -> zone."""
    fixed_pool: int = FIXED_POOL

    def create(self) -> None:
        create_spread(self.api, self.namespace, elastic_spread(NAME, WORKLOAD, self.fixed_pool))
        apps: Any = client.AppsV1Api(self.api)
        apps.create_namespaced_deployment(self.namespace, deployment(WORKLOAD, 0))

    def apply(self, change: Change) -> None:
        apps: Any = client.AppsV1Api(self.api)
        what, value = change
        if what == "replicas":
            body: dict[str, Any] = {"spec": {"replicas": value}}
        else:
            body = {"spec": {"template": {"metadata": {"annotations": {
                TEMPLATE_REVISION: str(value)}}}}}
        apps.patch_namespaced_deployment(WORKLOAD, self.namespace, body)

    def pods(self) -> list[Any]:
        core: Any = client.CoreV1Api(self.api)
        pods: list[Any] = core.list_namespaced_pod(
            self.namespace, label_selector=f"app={WORKLOAD}").items
        return pods

    def whole_status(self) -> dict[str, Any]:
        """The WorkloadSpread's status; empty while the API cannot read the WorkloadSpread (its
        conversion webhook down: a fault test kills it)."""
        try:
            return spread_status(self.api, self.namespace, NAME)
        except ApiException as exc:
            if exc.status is None or exc.status < 500:
                raise
            return {}

    def status(self) -> list[dict[str, Any]]:
        subsets: list[dict[str, Any]] = self.whole_status().get("subsetStatuses") or []
        return subsets

    def rolled_out_pods(self) -> list[Any] | None:
        """The pods once all are of the Deployment's template, as many as it asks for, running
        and none leaving; else None."""
        apps: Any = client.AppsV1Api(self.api)
        workload = apps.read_namespaced_deployment(WORKLOAD, self.namespace)
        replicas = int(workload.spec.replicas or 0)
        status = workload.status
        if (status.observed_generation or 0) < workload.metadata.generation or any(
            int(count or 0) != replicas
            for count in (status.replicas, status.updated_replicas, status.ready_replicas)
        ):
            return None
        pods = self.pods()
        if len(pods) != replicas or any(
            p.metadata.deletion_timestamp is not None or p.status.phase != "Running"
            for p in pods
        ):
            return None
        return pods

    def settled_state(self) -> SpreadState | None:
        """The state once the pods are rolled out, each with a subset and a deletion cost, and
        the status counts them with no admission in flight; else None."""
        pods = self.rolled_out_pods()
        if pods is None:
            return None
        places = [(subset_of(p), self.zones.get(p.spec.node_name, ""),
                   (p.metadata.annotations or {}).get(DELETION_COST)) for p in pods]
        if any(cost is None for _, _, cost in places):
            return None
        whole = self.whole_status()
        status: list[dict[str, Any]] = whole.get("subsetStatuses") or []
        # Reservations in flight are written per version only (as Kruise's webhook writes
        # them): one of a webhook killed before it answered holds its slot until it expires.
        versioned = [s for subsets in (whole.get("versionedSubsetStatuses") or {}).values()
                     for s in subsets]
        if any(s.get("creatingPods") or s.get("deletingPods") for s in [*status, *versioned]):
            return None
        split = collections.Counter(subset for subset, _, _ in places)
        counted = {s["name"]: int(s.get("replicas") or 0) for s in status}
        if sum(counted.values()) != len(pods) or any(
            counted[name] != split.get(name, 0) for name in counted
        ):
            return None
        return SpreadState(
            replicas=len(pods),
            pods=tuple(sorted((subset, zone, str(cost)) for subset, zone, cost in places)),
            subsets=tuple((s["name"], int(s.get("replicas") or 0),
                           int(s.get("missingReplicas", 0))) for s in status),
        )

    def describe(self) -> str:
        """What a spread that does not settle looks like: pods, their places, the status."""
        places = collections.Counter(
            (subset_of(p), self.zones.get(p.spec.node_name or "", ""), p.status.phase,
             p.metadata.deletion_timestamp is not None,
             (p.metadata.annotations or {}).get(DELETION_COST))
            for p in self.pods()
        )
        return (f"{self.namespace}: pods (subset, zone, phase, terminating, cost): "
                f"{dict(places)}; status: {self.whole_status()}")


def _metric(child: Child, name: str) -> float | None:
    """The value of an unlabelled metric of a running child, None when it cannot be read."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{child.health_port}/metrics",
                                    timeout=2) as response:
            text = response.read().decode()
    except (urllib.error.URLError, OSError):
        return None
    found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else None


def services_caught_up(stack: Stack) -> bool:
    """The watcher has listed the cluster and a planner leads, caught up with the stream."""
    watcher = next(c for c in stack.services if c.name == "watcher")
    planners = [c for c in stack.services if c.name.startswith("planner")]
    return watcher.ready() and any(
        p.ready() and _metric(p, "spreadbus_planner_leader") == 1.0 for p in planners
    )


def bus_counts(stack: Stack) -> tuple[int, int] | None:
    """Plans and outcomes on the bus; None while nats-server cannot answer (a restart)."""
    assert stack.nats is not None
    return asyncio.run(_bus_counts(stack.nats_urls, stack.bus_options()))


async def _bus_counts(urls: list[str], options: dict[str, Any]) -> tuple[int, int] | None:
    """Plans and outcomes on the bus; None while nats-server cannot answer (a restart)."""
    try:
        nc = await nats.connect(urls, allow_reconnect=False, connect_timeout=2, **options)
    except (NatsError, OSError, TimeoutError):
        return None
    try:
        js = nc.jetstream(timeout=2)
        plans = (await js.stream_info(PLANS.name)).state.messages
        outcomes = (await js.stream_info(OUTCOMES.name)).state.messages
        return int(plans), int(outcomes)
    except (NatsError, OSError, TimeoutError):
        return None
    finally:
        with contextlib.suppress(NatsError, OSError, TimeoutError):
            await nc.close()


def converge(stack: Stack, workload: SpreadWorkload,
             timeout: float = CONVERGE_TIMEOUT) -> SpreadState:
    """Wait for a settled state that stays the same for ``QUIET_SECONDS`` while the services
    are caught up, every plan is answered and no new plan is published."""
    assert stack.nats is not None
    urls = stack.nats_urls
    first_seen: list[tuple[SpreadState, int, float]] = []

    def quiet() -> SpreadState | None:
        state = workload.settled_state()
        if state is None or not services_caught_up(stack):
            first_seen.clear()
            return None
        counts = asyncio.run(_bus_counts(urls, stack.bus_options()))
        if counts is None or counts[1] < counts[0]:
            first_seen.clear()
            return None
        now = time.monotonic()
        plans = counts[0]
        if first_seen and first_seen[0][:2] == (state, plans):
            return state if now - first_seen[0][2] >= QUIET_SECONDS else None
        first_seen[:] = [(state, plans, now)]
        return None

    return wait_for(f"the spread in {workload.namespace} to converge", quiet, timeout,
                    workload.describe)
