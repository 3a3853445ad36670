"""The service shell every stack process runs in: on a stop, a service winds down in order.

A stopping service's own clean-up talks to NATS (a lease step-down, a consumer hand-back) or
waits for requests in flight; cancelling it the moment the stop signal arrives would cut that
clean-up at its first ``await``. The shell lets it return by itself and cancels it only past
its budget.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.service import ServiceContext, run_service
from spreadbus.runtime.settings import ServiceSettings


def settings(nats_server: NatsServer) -> ServiceSettings:
    return ServiceSettings(nats_url=(nats_server.url,), http_host="127.0.0.1", http_port=0)


async def clean_up_after_a_stop(
    nats_server: NatsServer, clean_up: Callable[[ServiceContext], Awaitable[None]]
) -> int:
    """Run a service in the shell that, once stopped, runs ``clean_up``; the shell's exit code."""
    started = asyncio.Event()

    async def main(ctx: ServiceContext) -> None:
        started.set()
        await ctx.stopping.wait()
        await clean_up(ctx)

    stopping = asyncio.Event()
    shell = asyncio.create_task(
        run_service("shell-probe", settings(nats_server), main, stopping=stopping)
    )
    waiting = asyncio.ensure_future(started.wait())
    try:
        await asyncio.wait({shell, waiting}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
    assert started.is_set(), f"the service did not start: exit code {shell.result()}"
    stopping.set()
    return await shell


async def test_a_service_whose_clean_up_talks_to_nats_finishes_it_before_the_shell_exits(
    nats_server: NatsServer,
) -> None:
    steps: list[str] = []

    async def clean_up(ctx: ServiceContext) -> None:
        steps.append("stopping")
        for _ in range(3):  # round trips to the server, as a lease step-down makes
            await ctx.nc.flush()
        steps.append("cleaned up")

    assert await clean_up_after_a_stop(nats_server, clean_up) == 0
    assert steps == ["stopping", "cleaned up"]


async def test_a_clean_up_that_overruns_its_budget_is_cancelled_and_the_shell_still_exits_0(
    nats_server: NatsServer,
) -> None:
    cancelled: list[bool] = []

    async def clean_up(ctx: ServiceContext) -> None:
        try:
            await asyncio.Event().wait()  # a clean-up that never ends by itself
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    assert await clean_up_after_a_stop(nats_server, clean_up) == 0
    assert cancelled == [True]
