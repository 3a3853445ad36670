"""Crashes on the WorkloadSpread path converge: the elastic example (a fixed pool of 8, an elastic
overflow) driven through a seeded sequence of changes (scale-out past the fixed pool, a new pod
template rolled out, scale-in into the fixed pool, scale-out again) while the planner, the
actuator and the watcher are killed with SIGKILL at random moments and so is nats-server once
(each started again at once), settles after every change as the same sequence does without faults.

One local stack (nats-server, kubesim with the elastic topology, the webhook and the three
services, each a process) runs both: first the sequence without faults in one namespace, then,
with a standby planner and actuator added and killed like the others, the same sequence in a
second namespace under the seeded faults (:class:`~tests.fixtures.fault_injection.FaultInjector`;
the seed is printed, ``SPREADBUS_FAULT_SEED`` replays it). The first namespace must come through
the faults unchanged.

A second case also kills the webhook with SIGKILL during the first scale-out of the faulted run
and starts it again once that scale-out's pods exist: they were admitted unsteered (the pod
webhook fails open, as it must), and the spread must still settle as the run without faults
does, because the planner moves such pods to the subset the webhook would have chosen. That case
runs under `make chaos` only (see its mark).

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
import time
from pathlib import Path
from typing import Any

import pytest

from events.messages import Outcome, Plan
from events.streams import OUTCOMES, PLANS
from spreadbus.cli.local_stack import Stack
from tests.backbone.bus_recording import read_stream
from tests.fixtures.fault_injection import FaultInjector, fault_seed, replay_hint
from tests.fixtures.stack_victims import KilledChild, log_tails, outcome_results, standby
from tests.workloadspread_e2e.elastic_workload import (
    FIXED_POOL,
    Change,
    SpreadState,
    SpreadWorkload,
    converge,
    elastic_example,
)
from tests.workloadspread_e2e.stack import node_zones, running_stack, subset_of, wait_for

UNSTEERED = "spreadbus.io/unsteered"
"""The planner's mark on a pod that was admitted while no webhook steered it."""

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.chaos]

FAULTS = 10
FAULT_GAPS = (0.4, 2.0)
"""Seconds between two faults: the schedule spans most of the faulted sequence."""
SERVICE_ENV = {"SPREADBUS_LEASE_TTL_SECONDS": "3"}
"""A killed planner's lease expires after 3 s instead of 6, so a standby takes over sooner."""


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


def at_least(pods: list[Any], count: int) -> list[Any] | None:
    return pods if len(pods) >= count else None


def webhook_down_while_scaling(webhook: KilledChild, workload: SpreadWorkload,
                               change: Change) -> None:
    """Kill the webhook, apply ``change``, and start the webhook again once all of the
    change's pods exist and it answers: the spread is read (converted) through it."""
    webhook.kill()
    print(f"{workload.namespace}: {webhook.name} killed for {change}")
    workload.apply(change)
    pods = wait_for(f"{change[1]} pods created while the webhook is down",
                    lambda: at_least(workload.pods(), change[1]), 60)
    unsteered = [p for p in pods if subset_of(p) == "(none)"
                 or (p.metadata.annotations or {}).get(UNSTEERED) == "true"]
    assert unsteered, "the scale-out admitted no pod unsteered: the webhook was not down"
    print(f"{workload.namespace}: {len(unsteered)} of {len(pods)} pods admitted unsteered")
    webhook.start()
    wait_for("the webhook ready again", lambda: webhook.child.ready() or None, 60)


def drive(stack: Stack, workload: SpreadWorkload, changes: list[Change],
          webhook: KilledChild | None = None) -> list[SpreadState]:
    """Each change, then the state it converged to; with ``webhook``, that replica is down
    during the first scale-out."""
    steps = []
    started = time.monotonic()
    for i, change in enumerate(changes):
        if webhook is not None and i == 0 and change[0] == "replicas":
            webhook_down_while_scaling(webhook, workload, change)
        else:
            workload.apply(change)
        steps.append(converge(stack, workload))
    print(f"{workload.namespace}: {len(changes)} changes converged in "
          f"{time.monotonic() - started:.1f} s")
    return steps


@pytest.mark.parametrize("kill_webhook", [
    pytest.param(False, id="services-and-nats"),
    # Run by `make chaos` only (about 45 s). One run in eight to sixteen used to leave the
    # WorkloadSpread status counting a pod the repair had evicted: a rule waiting for the
    # watcher's relist was not offered the objects deleted meanwhile. Since that fix it
    # converged in 11 of 11 runs on a loaded 2-core machine (seeds 24, 101-110).
    pytest.param(True, id="and-the-webhook-during-a-scale-out", marks=pytest.mark.chaos_only),
])
def test_kills_at_random_moments_and_a_nats_restart_leave_the_spread_as_a_run_without_faults(
    tmp_path: Path, kill_webhook: bool,
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
        webhook = next(KilledChild(c) for c in stack.services if c.name == "webhook")
        injector: FaultInjector | None = None
        try:
            calm_steps = drive(stack, calm, changes)
            victims += [standby(stack, "planner"), standby(stack, "actuator")]
            wait_for("the standby planner and actuator ready",
                     lambda: all(c.ready() for c in victims), 60)
            injector = FaultInjector(rng, [KilledChild(c) for c in victims], stack.nats,
                                     faults=FAULTS, gaps=FAULT_GAPS)
            injector.start()
            faulted_steps = drive(stack, faulted, changes, webhook if kill_webhook else None)
            injector.finish()  # faults may still come after the last change
            final = converge(stack, faulted)
            calm_final = converge(stack, calm)
        except BaseException:
            print(log_tails(victims))  # shown with the failure
            raise
        finally:
            if injector is not None:
                injector.stop()
        reader = stack.bus_options()
        plans = [p for _, p in asyncio.run(read_stream(stack.nats.url, PLANS.name, **reader))]
        outcomes = [o for _, o in asyncio.run(read_stream(stack.nats.url, OUTCOMES.name,
                                                           **reader))]

    print(f"faults injected: {collections.Counter(injector.done)}")
    print(f"{len(plans)} plans, results: {outcome_results(outcomes)}")
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
