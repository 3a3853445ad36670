"""The seed's elastic example at its own size (a fixed pool of 100, an elastic overflow without
limit) scaled 0 -> 150 -> 80 -> 150 while every part of the spreading path dies by SIGKILL at
seeded moments: the webhook, the planner, the actuator, the watcher and nats-server, one service
left with no replica at all for a few seconds. It settles after each change as the same changes
do without faults, no subset stays over its ``maxReplicas`` longer than the repair takes, and
every plan gets exactly one outcome.

One local stack runs both: the changes without faults in one namespace (100/50, then 80/0 since
scale-in takes the elastic pods first, then 100/50), then, with a standby planner and actuator
added, the same changes in a second namespace under a :func:`~tests.fixtures.fault_injection.
chaos_schedule` (the seed is printed; ``make chaos SEED=n`` replays it). Each change meets its
own faults, drawn to land while the services work on it; the driver waits until they are done
and the spread has converged before the next change (as in the scaled-down fault test, so any
difference between the runs is the faults'). A :class:`~.subset_monitor.SubsetMonitor` samples
the faulted namespace every 200 ms and prints every episode of a subset over its maximum.
"""

from __future__ import annotations

import asyncio
import collections
import math
import random
import time
from pathlib import Path
from typing import Final

import pytest
from kubernetes import client, config

from events.messages import Outcome, Plan
from events.streams import OUTCOMES, PLANS
from spreadbus.cli.local_stack import Stack
from spreadbus.features.workloadspread.core.rebalance import (
    DEFAULT_MAX_UNAVAILABLE,
    unavailable_limit,
)
from spreadbus.features.workloadspread.planning.rebalancing import RECHECK_SECONDS
from spreadbus.projection.planning import PLAN_LOST_SECONDS
from tests.backbone.bus_recording import read_stream
from tests.fixtures.fault_injection import (
    NATS_SERVER,
    PhasedFaults,
    chaos_schedule,
    fault_seed,
    replay_hint,
)
from tests.fixtures.stack_victims import KilledChild, log_tails, outcome_results, standby
from tests.workloadspread_e2e.elastic_workload import (
    NAME,
    SEED_FIXED_POOL,
    WORKLOAD,
    Change,
    SpreadState,
    SpreadWorkload,
    converge,
    elastic_example,
)
from tests.workloadspread_e2e.stack import node_zones, running_stack, wait_for
from tests.workloadspread_e2e.subset_monitor import SubsetMonitor

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.chaos, pytest.mark.chaos_only]

CHANGES: Final[list[Change]] = [("replicas", 150), ("replicas", 80), ("replicas", 150)]
FAULTS_PER_CHANGE: Final = 4
FAULT_GAPS: Final = (0.05, 1.0)
"""Seconds before each fault of a change (after the change, or the change's previous fault):
the four land while the pods of the change are created, steered, costed and counted (two
seconds without faults)."""
OUTAGE: Final = (3.0, 6.0)
"""How long the service that loses every replica stays down (during a scale-out)."""
SCALE_OUTS: Final = (0, 2)
"""The changes that create pods: the webhook dies first in the first, so some of its pods are
admitted unsteered and the repair has work, and the service left with no replica is down
during one of them."""
SERVICE_ENV: Final = {"SPREADBUS_LEASE_TTL_SECONDS": "3"}
"""A killed planner's lease expires after 3 s instead of 6, so a standby takes over sooner."""
SERVICE_RESTART_SECONDS: Final = 10.0
"""A killed service (or nats-server) started again is back at work within this: a process
start, a reconnect, a lease taken over after its 3 s, the watcher's relist."""
CONVERGE_UNDER_FAULTS: Final = 240.0

WORST_OVER: Final = max(r for _, r in CHANGES) - SEED_FIXED_POOL
"""At most this many pods are admitted unsteered into the fixed pool beyond its maximum: every
pod of the largest scale-out, less the pool's own."""
REPAIR_ROUNDS: Final = math.ceil(
    WORST_OVER / unavailable_limit(DEFAULT_MAX_UNAVAILABLE, max(r for _, r in CHANGES)))
"""The repair evicts at most maxUnavailable (25 %) of the replicas at once."""
REPAIR_BOUND_SECONDS: Final = (PLAN_LOST_SECONDS + REPAIR_ROUNDS * RECHECK_SECONDS
                               + OUTAGE[1] + 2 * SERVICE_RESTART_SECONDS)
"""How long a subset may stay over its maxReplicas once the webhook steers again. The repair
evicts the unsteered pods beyond the maximum in ``REPAIR_ROUNDS`` rounds, each looked at again
``RECHECK_SECONDS`` later; an eviction plan lost with a nats-server killed before it was
answered is decided again ``PLAN_LOST_SECONDS`` after it was decided; and the planner, actuator
or watcher doing the repair may die meanwhile: down for at most the outage, then back within
``SERVICE_RESTART_SECONDS``, twice (the outage and a kill of one replica)."""

ZONE_SUBSETS: Final = {"ack": "ACK", "eci": "ECI"}


def drive(stack: Stack, workload: SpreadWorkload, faults: PhasedFaults | None = None,
          timeout: float = 120.0) -> list[SpreadState]:
    """Each change, its faults, then the state it converged to."""
    steps = []
    started = time.monotonic()
    for phase, change in enumerate(CHANGES):
        workload.apply(change)
        if faults is not None:
            faults.begin(phase)
            faults.wait_phase(phase)
        steps.append(converge(stack, workload, timeout))
        print(f"{workload.namespace}: {change} converged at "
              f"{time.monotonic() - started:.1f} s: {steps[-1].brief()}")
    return steps


def test_the_elastic_example_at_150_pods_converges_through_kills_of_every_part(
    tmp_path: Path,
) -> None:
    seed = fault_seed()
    print(replay_hint(seed))
    print(f"repair bound: {REPAIR_BOUND_SECONDS:.0f} s")
    rng = random.Random(seed)

    with running_stack(tmp_path, "elastic", SERVICE_ENV) as (stack, api):
        assert stack.nats is not None
        zones = node_zones(api)
        calm = SpreadWorkload(api, "without-faults", zones, SEED_FIXED_POOL)
        faulted = SpreadWorkload(api, "with-faults", zones, SEED_FIXED_POOL)
        for workload in (calm, faulted):
            workload.create()
            wait_for(f"the first status in {workload.namespace}", workload.status, 60)
        services = {name: [next(c for c in stack.services if c.name == name)]
                    for name in ("webhook", "planner", "actuator", "watcher")}
        monitor: SubsetMonitor | None = None
        injector: PhasedFaults | None = None
        monitor_api: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(tmp_path / "kubeconfig"))
        try:
            calm_started = time.monotonic()
            calm_steps = drive(stack, calm)
            calm_seconds = time.monotonic() - calm_started
            for name in ("planner", "actuator"):
                services[name].append(standby(stack, name))
            wait_for("the standby planner and actuator ready",
                     lambda: all(c.ready() for c in stack.services), 60)
            schedule = chaos_schedule(rng, {n: len(r) for n, r in services.items()},
                                      phases=len(CHANGES), per_phase=FAULTS_PER_CHANGE,
                                      gaps=FAULT_GAPS, outage=OUTAGE, opening="webhook",
                                      outage_phases=SCALE_OUTS)
            print("\n".join(f.brief() for f in schedule))
            injector = PhasedFaults(
                schedule, {n: [KilledChild(c) for c in r] for n, r in services.items()},
                stack.nats, phases=len(CHANGES))
            webhook = services["webhook"][0]
            monitor = SubsetMonitor(monitor_api, faulted.namespace, f"app={WORKLOAD}",
                                    spread=NAME, limits={"ACK": SEED_FIXED_POOL},
                                    zone_subsets=ZONE_SUBSETS, node_zones=zones,
                                    webhook_steers=webhook.ready)
            monitor.start()
            injector.start()
            faulted_started = time.monotonic()
            faulted_steps = drive(stack, faulted, injector, CONVERGE_UNDER_FAULTS)
            final = converge(stack, faulted, CONVERGE_UNDER_FAULTS)
            faulted_seconds = time.monotonic() - faulted_started
            calm_final = converge(stack, calm)
        except BaseException:
            print(log_tails(stack.services))  # shown with the failure
            raise
        finally:
            if injector is not None:
                injector.stop()
            if monitor is not None:
                monitor.stop()
            monitor_api.close()  # type: ignore[no-untyped-call]
        reader = stack.bus_options()
        plans = [p for _, p in asyncio.run(read_stream(stack.nats.url, PLANS.name, **reader))]
        outcomes = [o for _, o in asyncio.run(read_stream(stack.nats.url, OUTCOMES.name,
                                                           **reader))]

    assert injector is not None
    assert monitor is not None
    kills = injector.kills()
    print(f"without faults: {calm_seconds:.1f} s; with faults: {faulted_seconds:.1f} s")
    print(f"kills: {dict(kills)}")
    print(f"{len(plans)} plans, results: {outcome_results(outcomes)}")
    print(f"monitor: {monitor.samples} samples, {monitor.failures} failed, highest "
          f"{monitor.highest}, {len(monitor.episodes)} episodes over a maximum")
    for episode in monitor.episodes:
        print(f"  {episode.brief(monitor.started_at)}")

    for victim in (*services, NATS_SERVER):
        assert any(name.startswith(victim) for name in kills), f"{victim} was never killed"
    assert any(f.down for f in schedule), "a service was left with no replica"
    assert monitor.samples > 0, "the monitor saw the pods"

    expected = [elastic_example(r, SEED_FIXED_POOL) for _, r in CHANGES]
    assert calm_steps == expected, "\n".join(
        f"after {change}: {got.brief()}, expected {want.brief()}"
        for change, got, want in zip(CHANGES, calm_steps, expected, strict=True) if got != want)
    for change, with_faults, without in zip(CHANGES, faulted_steps, calm_steps, strict=True):
        assert with_faults == without, (
            f"seed {seed}: after {change} the spread settled under faults as "
            f"{with_faults.brief()}, without faults as {without.brief()}")
    assert final == calm_steps[-1]
    assert calm_final == calm_steps[-1], "the faults disturbed the settled spread"

    for episode in monitor.episodes:
        assert episode.repair_seconds is not None, (
            f"seed {seed}: {episode.brief(monitor.started_at)} never ended")
        assert episode.repair_seconds <= REPAIR_BOUND_SECONDS, (
            f"seed {seed}: {episode.brief(monitor.started_at)}, longer than the repair bound "
            f"of {REPAIR_BOUND_SECONDS:.0f} s")

    assert plans, "the planner published plans"
    assert all(isinstance(p, Plan) for p in plans)
    assert all(isinstance(o, Outcome) for o in outcomes)
    assert len({p.id for p in plans}) == len(plans), "no plan published twice"
    per_plan = collections.Counter(o.plan_id for o in outcomes)
    assert set(per_plan) == {p.id for p in plans}, "every plan answered, and only plans"
    assert max(per_plan.values()) == 1, "no plan answered twice"
