"""The planner process steps down and exits non-zero when its lease task dies."""

from __future__ import annotations

import asyncio

import pytest

import services.planner.service as planner_service
from services.planner.planner import Planner
from services.planner.settings import PlannerSettings
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.service import ServiceContext, run_service


class _LeaseThatDiesWhileLeader:
    """A lease whose loop crashes with a non-NATS error right after winning, without stepping
    down: the failure the supervisor exists for."""

    def __init__(self, js: object, *, on_change: object, **_: object) -> None:
        assert callable(on_change)
        self.on_change = on_change
        self.is_leader = False

    async def run(self) -> None:
        self.is_leader = True
        self.on_change(True)
        await asyncio.sleep(0.3)
        raise KeyError("bug in the lease loop")

    def stop(self) -> None:
        pass


async def test_a_planner_whose_lease_task_dies_steps_down_and_exits_non_zero(
    nats_server: NatsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    leadership: list[bool] = []

    class RecordingPlanner(Planner):
        def set_leader(self, leader: bool) -> None:
            leadership.append(leader)
            super().set_leader(leader)

    monkeypatch.setattr(planner_service, "Lease", _LeaseThatDiesWhileLeader)
    monkeypatch.setattr(planner_service, "Planner", RecordingPlanner)
    settings = PlannerSettings(nats_url=(nats_server.url,), cluster="c1", http_host="127.0.0.1",
                               http_port=0, snapshot_bucket="snapshots-supervision")
    stopping = asyncio.Event()

    async def body(ctx: ServiceContext) -> None:
        await planner_service.main(settings, ctx)

    shell = asyncio.create_task(run_service("planner", settings, body, stopping=stopping))
    try:
        code = await asyncio.wait_for(asyncio.shield(shell), 20)
    finally:
        stopping.set()
        await asyncio.wait_for(shell, 15)
    assert code == 1
    assert leadership[0] is True
    assert leadership[-1] is False
