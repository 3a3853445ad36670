"""Any interleaving of webhook replicas and status writes never allows more disruptions than the
budget: the replicas spend on a real nats-server's key-value bucket by compare-and-set.

Hypothesis draws the story: bursts of concurrent DELETEs and evictions through three replicas,
each replica deciding from its own view of the budget (the newest written status, or one several
writes old), and planner status writes computed from a ledger entry and a set of pods each read at
some earlier moment. Allowed pods are deleted at once. After every burst the number of pods let go
beyond what the statuses could have known never exceeds ``maxUnavailable``: with nothing ever
becoming available again, the distinct pods allowed must stay within the first status's
``unavailableAllowed``.

The planner's two inputs lag differently, as they do in the product. Its ledger comes from the
budget bucket's own stream, so it may be any earlier entry, even one older than the entry the
status it replaces was computed from (a new leader whose bucket follower is behind, an old leader
still writing). Its pods come from the same ``KUBE`` projection as the budget it writes, and the
resourceVersion precondition lands a status only when computed from the newest written budget; that
budget's observation follows everything its writer had read, so the pods a status is computed from
are never older than those of the status it replaces. A drawn pods lag reaching further back is
clamped to those. Without the clamp no rule can hold the budget: as in Kruise's controller, a
status drops the record of a pod that is gone, so a later status computed from pods in which that
pod is back, ready and unrecorded, counts it available again.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import nats
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from events.buckets import entry_key
from spreadbus.features.podunavailablebudget.admission.budget_bucket import (
    budget_bucket,
    budget_store,
)
from spreadbus.features.podunavailablebudget.admission.handlers import BudgetAdmission
from spreadbus.features.podunavailablebudget.core.budget_ledger import (
    BudgetEntry,
    records,
)
from spreadbus.features.podunavailablebudget.planning.status_inputs import compute
from spreadbus.runtime.nats_server import NatsServer
from tests.fixtures.bus_setup import set_up
from tests.podunavailablebudget.budgets import NS, StaticView, budget, pod, review

PODS = 8
MAX_UNAVAILABLE = 2
NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
_keys = itertools.count()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    nats_server = NatsServer(store_dir=tmp_path_factory.mktemp("nats")).start()
    try:
        set_up(nats_server.url)
        yield nats_server
    finally:
        nats_server.stop()


request = st.tuples(st.integers(0, 2), st.integers(0, PODS - 1), st.integers(0, 3),
                    st.booleans())
"""(replica, pod, how many status writes behind its view is, eviction rather than DELETE)"""
plan = st.tuples(st.just("plan"), st.integers(0, 3), st.integers(0, 3))
"""("plan", how many bursts old the ledger it read is, how many bursts old its pods are, but
never older than the previous plan's)"""
story = st.lists(st.one_of(st.lists(request, min_size=1, max_size=6), plan),
                 min_size=1, max_size=10)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=story)
@example(steps=[
    # One replica spends the budget, the planner writes a status listing both pods, the replica
    # reads that status and stops counting them itself; a replica whose view still holds the
    # first status must decide on the newer one the entry carries.
    [(0, 0, 0, False), (0, 1, 0, False)], ("plan", 0, 0), [(0, 2, 0, False)],
    [(1, 3, 1, True)],
])
@example(steps=[
    # A status lists the two pods spent and the replica drops its records; a planner whose ledger
    # is from before the spending writes the next status from pods without them, and a planner
    # drawn with pods from before the deletions reads those same pods (the clamp): the pods stay
    # gone, so the budget stays spent for the replica deciding on the newest status.
    [(0, 0, 0, False), (0, 2, 0, False)], ("plan", 0, 0), ("plan", 1, 0), ("plan", 1, 1),
    [(0, 1, 2, False), (0, 1, 0, False)],
])
def test_replicas_and_planner_in_any_order_never_overspend(server: NatsServer,
                                                           steps: list[Any]) -> None:
    asyncio.run(_play(server, steps))


async def _play(server: NatsServer, steps: list[Any]) -> None:
    clients = [await nats.connect(server.url) for _ in range(3)]
    try:
        cluster = f"c{next(_keys)}"
        world = {f"p{i}": pod(f"p{i}") for i in range(PODS)}
        workloads: list[dict[str, Any]] = []
        first = compute(budget(total=PODS, max_unavailable=MAX_UNAVAILABLE), list(world.values()),
                        workloads, {}, NOW).status
        written = [budget(total=PODS, max_unavailable=MAX_UNAVAILABLE, status=first, version=1)]
        allowed_at_start = first["unavailableAllowed"]
        assert allowed_at_start == MAX_UNAVAILABLE
        views = [StaticView(cluster) for _ in clients]
        replicas = [BudgetAdmission(view=view, store=budget_store(await budget_bucket(nc),
                                                                   deadline_seconds=30),
                                    clock=lambda: NOW.timestamp())
                    for view, nc in zip(views, clients, strict=True)]
        key = entry_key(cluster, NS, "pub")
        entries: list[BudgetEntry] = [BudgetEntry()]
        pods_seen: list[list[dict[str, Any]]] = [list(world.values())]
        pods_floor = 0  # the pods the newest written status was computed from
        let_go: set[str] = set()

        async def ask(replica: int, name: str, lag: int, evict: bool) -> None:
            if name not in world:
                return  # deleted already: the API server answers 404 before any admission
            views[replica].budgets = {"pub": written[max(0, len(written) - 1 - lag)]}
            views[replica].pods = dict(world)
            target = world[name]
            req = (review("CREATE", target, sub_resource="eviction") if evict
                   else review("DELETE", target))
            verdict = await replicas[replica].validate_pod(req)
            if verdict.allowed:
                let_go.add(name)
                world.pop(name, None)

        for step in steps:
            if step[0] == "plan":
                _, ledger_lag, pods_lag = step
                entry = entries[max(0, len(entries) - 1 - ledger_lag)]
                pods_floor = max(pods_floor, len(pods_seen) - 1 - pods_lag)
                pods = pods_seen[pods_floor]
                previous = written[-1]
                status = compute(previous, pods, workloads, records(entry), NOW).status
                # The status subresource write with a resourceVersion precondition: computed
                # from the newest written budget, or it does not land.
                written.append({**previous, "status": status, "metadata": {
                    **previous["metadata"], "resourceVersion": str(len(written) + 1)}})
            else:
                await asyncio.gather(*(ask(r, f"p{p}", lag, evict)
                                       for r, p, lag, evict in step))
                entries.append(await replicas[0].store.current(key))
                pods_seen.append(list(world.values()))
            assert len(let_go) <= allowed_at_start, (
                f"{len(let_go)} pods let go with a budget of {allowed_at_start}: {sorted(let_go)}")
    finally:
        for nc in clients:
            await nc.close()


def test_an_exhausted_budget_refuses_a_delete_with_403_and_an_eviction_with_429(
    server: NatsServer,
) -> None:
    async def run() -> None:
        nc = await nats.connect(server.url)
        try:
            view = StaticView(f"c{next(_keys)}")
            world = [pod(f"p{i}") for i in range(3)]
            status = compute(budget(total=3), world, [], {}, NOW).status
            view.budgets = {"pub": budget(total=3, status=status)}
            view.pods = {p["metadata"]["name"]: p for p in world}
            admission = BudgetAdmission(view=view, store=budget_store(await budget_bucket(nc)),
                                        clock=lambda: NOW.timestamp())
            first = await admission.validate_pod(review("DELETE", world[0]))
            again = await admission.validate_pod(review("DELETE", world[0]))
            refused = await admission.validate_pod(review("DELETE", world[1]))
            evicted = await admission.validate_pod(
                review("CREATE", world[2], sub_resource="eviction"))
            dry = await admission.validate_pod(review("DELETE", world[1], dry_run=True))
            assert (first.allowed, again.allowed) == (True, True), "a retried DELETE is free"
            assert (refused.allowed, refused.code, refused.reason) == (False, 403, "Forbidden")
            assert (evicted.allowed, evicted.code, evicted.reason) == (
                False, 429, "TooManyRequests")
            assert 'podunavailablebudget.policy.kruise.io "pub" is forbidden' in refused.message
            assert not dry.allowed, "a dry run is refused when the budget is spent"
            # Expired records stop costing: 21 s later the first pod's record is gone.
            admission.clock = lambda: (NOW + timedelta(seconds=21)).timestamp()
            later = await admission.validate_pod(review("DELETE", world[1]))
            assert later.allowed
        finally:
            await nc.close()

    asyncio.run(run())
