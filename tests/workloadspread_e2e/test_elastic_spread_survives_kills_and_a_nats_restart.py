"""Crashes on the WorkloadSpread path converge: the elastic example (a fixed pool of 8, an elastic
overflow) driven through a seeded sequence of changes (scale-out past the fixed pool, a new pod
template rolled out, scale-in into the fixed pool, scale-out again) while the planner, the
actuator and the watcher are killed with SIGKILL at random moments and nats-server is restarted
once, settles after every change as the same sequence does without faults.

One local stack (nats-server, kubesim with the elastic topology, the webhook and the three
services, each a process) runs both: first the sequence without faults in one namespace, then,
with a standby planner and actuator added and killed like the others, the same sequence in a
second namespace under the seeded faults (:class:`~tests.fixtures.fault_injection.FaultInjector`;
the seed is printed, ``SPREADBUS_FAULT_SEED`` replays it). The webhook stays up: its own faults
are another scenario. The first namespace must come through the faults unchanged.

After each change the driver waits for the spread to converge: the Deployment rolled out, every
pod running with a subset and a deletion cost, the status counting those pods with no admission
in flight, the watcher synced, a planner leading and caught up, every plan answered, and all of
it unchanged for a second. Waiting keeps each change's starting point the one the rules give
(a scale-in issued before the planner has corrected a deletion cost removes different pods, in
Kruise as here), so any difference between the runs is the faults'. What is compared per change:
where the pods are (subset, node zone and deletion cost, as a multiset since pod names are
random) and each subset's status replicas and missingReplicas; at the end, every plan on
``PLANS`` has exactly one outcome on ``OUTCOMES``.
"""

from __future__ import annotations

import asyncio
import collections
import random
import re
import signal
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
import pytest
from kubernetes import client

from events.messages import Outcome, Plan
from events.streams import OUTCOMES, PLANS
from spreadbus.cli.local_stack import Child, Stack
from tests.backbone.bus_recording import read_stream
from tests.fixtures.fault_injection import FaultInjector, fault_seed, replay_hint
from tests.workloadspread_e2e.stack import (
    DELETION_COST,
    VIRTUAL_NODE_TOLERATIONS,
    create_spread,
    deployment,
    node_zones,
    running_stack,
    spread,
    spread_status,
    subset_of,
    wait_for,
    zone_subset,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

NAME = "ws-demo"
WORKLOAD = "workload-xxx"
FIXED_POOL = 8
FAULTS = 10
FAULT_GAPS = (0.4, 2.0)
"""Seconds between two faults: the schedule spans most of the faulted sequence."""
QUIET_SECONDS = 1.0
"""How long a settled state must stay the same, the services caught up and no new plan
published, to count as converged (the planner plans a WorkloadSpread at most every 0.25 s)."""
CONVERGE_TIMEOUT = 120.0
SERVICE_ENV = {"SPREADBUS_LEASE_TTL_SECONDS": "3"}
"""A killed planner's lease expires after 3 s instead of 6, so a standby takes over sooner."""
TEMPLATE_REVISION = "example.spreadbus.io/revision"

WORKLOADSPREAD = spread(NAME, WORKLOAD, [
    zone_subset("ACK", "ack", FIXED_POOL),
    {**zone_subset("ECI", "eci"), "tolerations": VIRTUAL_NODE_TOLERATIONS},
])

Change = tuple[str, int]
"""``("replicas", n)`` scales the Deployment; ``("template", n)`` rolls out revision ``n``."""
PodPlace = tuple[str, str, str]
"""A pod's subset, its node's zone and its deletion cost."""


def change_sequence(rng: random.Random) -> list[Change]:
    """Out past the fixed pool, a rollout, in below it, and out past it again."""
    return [
        ("replicas", rng.randint(FIXED_POOL + 2, FIXED_POOL + 4)),
        ("template", rng.randint(2, 1000)),
        ("replicas", rng.randint(2, FIXED_POOL - 1)),
        ("replicas", rng.randint(FIXED_POOL + 1, FIXED_POOL + 4)),
    ]


def replicas_after(changes: list[Change]) -> list[int]:
    """The Deployment's replicas after each change (a rollout keeps them)."""
    out: list[int] = []
    for what, value in changes:
        out.append(value if what == "replicas" else out[-1])
    return out


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


def elastic_example(replicas: int) -> SpreadState:
    """The seed's elastic example: the fixed pool filled first, the rest elastic (scale-in takes
    the elastic pods first), each pod costing what its subset's position gives, 200 and 100."""
    fixed = min(replicas, FIXED_POOL)
    return SpreadState(
        replicas=replicas,
        pods=tuple(sorted([("ACK", "ack", "200")] * fixed
                          + [("ECI", "eci", "100")] * (replicas - fixed))),
        subsets=(("ACK", fixed, FIXED_POOL - fixed), ("ECI", replicas - fixed, -1)),
    )


@dataclass
class SpreadWorkload:
    """The WorkloadSpread and its Deployment in one namespace of the cluster."""

    api: client.ApiClient
    namespace: str
    zones: dict[str, str]
    """Node name -> zone."""

    def create(self) -> None:
        create_spread(self.api, self.namespace, WORKLOADSPREAD)
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

    def status(self) -> list[dict[str, Any]]:
        subsets: list[dict[str, Any]] = (
            spread_status(self.api, self.namespace, NAME).get("subsetStatuses") or [])
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
        status = self.status()
        if any(s.get("creatingPods") or s.get("deletingPods") for s in status):
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
                f"{dict(places)}; status: {self.status()}")


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


async def _bus_counts(url: str) -> tuple[int, int]:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        plans = (await js.stream_info(PLANS.name)).state.messages
        outcomes = (await js.stream_info(OUTCOMES.name)).state.messages
        return int(plans), int(outcomes)
    finally:
        await nc.close()


def converge(stack: Stack, workload: SpreadWorkload) -> SpreadState:
    """Wait for a settled state that stays the same for ``QUIET_SECONDS`` while the services
    are caught up, every plan is answered and no new plan is published."""
    assert stack.nats is not None
    url = stack.nats.url
    first_seen: list[tuple[SpreadState, int, float]] = []

    def quiet() -> SpreadState | None:
        state = workload.settled_state()
        if state is None or not services_caught_up(stack):
            first_seen.clear()
            return None
        plans, outcomes = asyncio.run(_bus_counts(url))
        if outcomes < plans:
            first_seen.clear()
            return None
        now = time.monotonic()
        if first_seen and first_seen[0][:2] == (state, plans):
            return state if now - first_seen[0][2] >= QUIET_SECONDS else None
        first_seen[:] = [(state, plans, now)]
        return None

    return wait_for(f"the spread in {workload.namespace} to converge", quiet, CONVERGE_TIMEOUT,
                    workload.describe)


def drive(stack: Stack, workload: SpreadWorkload, changes: list[Change]) -> list[SpreadState]:
    """Each change, then the state it converged to."""
    steps = []
    started = time.monotonic()
    for change in changes:
        workload.apply(change)
        steps.append(converge(stack, workload))
    print(f"{workload.namespace}: {len(changes)} changes converged in "
          f"{time.monotonic() - started:.1f} s")
    return steps


@dataclass
class KilledChild:
    """A stack process as a fault victim: SIGKILL, no clean-up, and started again at once on
    the health port it had."""

    child: Child

    @property
    def name(self) -> str:
        return self.child.name

    def kill(self) -> None:
        process = self.child.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait(10)

    def start(self) -> None:
        self.child.start()


def standby(stack: Stack, name: str) -> Child:
    """A second replica of the stack's service ``name``, stopped with the stack."""
    original = next(c for c in stack.services if c.name == name)
    assert original.argv[:3] == [sys.executable, "-m", f"services.{name}"]
    child = Child(f"{name}-standby", list(original.argv),
                  stack.data_dir / "logs" / f"{name}-standby.log", env=original.env)
    stack.services.append(child)
    child.start()
    return child


def log_tails(children: list[Child]) -> str:
    return "\n".join(f"--- {c.name}:\n{c.log_tail(40)}" for c in children)


def results(outcomes: list[Any]) -> dict[tuple[str, str, int], int]:
    """Outcomes by result, target resource and API status (0 when none)."""
    return dict(collections.Counter(
        (o.result, o.target.resource, o.error.status if o.error else 0) for o in outcomes))


def test_kills_at_random_moments_and_a_nats_restart_leave_the_spread_as_a_run_without_faults(
    tmp_path: Path,
) -> None:
    seed = fault_seed()
    print(replay_hint(seed))
    rng = random.Random(seed)
    changes = change_sequence(rng)
    print(f"changes: {changes}")

    with running_stack(tmp_path, "elastic", SERVICE_ENV) as (stack, api):
        assert stack.nats is not None
        zones = node_zones(api)
        calm = SpreadWorkload(api, "without-faults", zones)
        faulted = SpreadWorkload(api, "with-faults", zones)
        for workload in (calm, faulted):
            workload.create()
            # followed by the stack: the planner wrote its first status
            wait_for(f"the first status in {workload.namespace}", workload.status, 60)
        victims = [c for c in stack.services if c.name in ("planner", "actuator", "watcher")]
        injector: FaultInjector | None = None
        try:
            calm_steps = drive(stack, calm, changes)
            victims += [standby(stack, "planner"), standby(stack, "actuator")]
            wait_for("the standby planner and actuator ready",
                     lambda: all(c.ready() for c in victims), 60)
            injector = FaultInjector(rng, [KilledChild(c) for c in victims], stack.nats,
                                     faults=FAULTS, gaps=FAULT_GAPS)
            injector.start()
            faulted_steps = drive(stack, faulted, changes)
            injector.finish()  # faults may still come after the last change
            final = converge(stack, faulted)
            calm_final = converge(stack, calm)
        except BaseException:
            print(log_tails(victims))  # shown with the failure
            raise
        finally:
            if injector is not None:
                injector.stop()
        plans = [p for _, p in asyncio.run(read_stream(stack.nats.url, PLANS.name))]
        outcomes = [o for _, o in asyncio.run(read_stream(stack.nats.url, OUTCOMES.name))]

    print(f"faults injected: {collections.Counter(injector.done)}")
    print(f"{len(plans)} plans, results: {results(outcomes)}")
    assert len(injector.done) == FAULTS

    # Without faults every change ends as the elastic example says.
    expected = [elastic_example(r) for r in replicas_after(changes)]
    assert calm_steps == expected, "\n".join(
        f"after {change}: {got.brief()}, expected {want.brief()}"
        for change, got, want in zip(changes, calm_steps, expected, strict=True) if got != want)
    for change, with_faults, without in zip(changes, faulted_steps, calm_steps, strict=True):
        assert with_faults == without, (
            f"seed {seed}: after {change} the spread settled under faults as "
            f"{with_faults.brief()}, without faults as {without.brief()}"
        )
    assert final == calm_steps[-1], (
        f"seed {seed}: once the faults ended the spread settled as {final.brief()}, "
        f"without faults as {calm_steps[-1].brief()}"
    )
    assert calm_final == calm_steps[-1], "the faults disturbed the settled spread"

    assert plans, "the planner published plans"
    assert all(isinstance(p, Plan) for p in plans)
    assert all(isinstance(o, Outcome) for o in outcomes)
    assert len({p.id for p in plans}) == len(plans), "no plan published twice"
    per_plan = collections.Counter(o.plan_id for o in outcomes)
    assert set(per_plan) == {p.id for p in plans}, "every plan answered, and only plans"
    assert max(per_plan.values()) == 1, "no plan answered twice"
