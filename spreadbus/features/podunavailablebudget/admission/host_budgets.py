"""The bus between a member's webhook and the host's budgets (:mod:`..core.member_spend`).

:class:`HostBudgetClient` is the member's side: a spend is one request on
``budget.spend.<member>.<namespace>``, answered on the member's own answer subjects; no answer
within the deadline raises, and the member's webhook refuses, as a spend on an unreachable
entry does. :class:`SpendResponder` is the host webhook's side: every replica subscribes in one
queue group, so each spend is decided by one replica of the cluster that holds the member's
Cluster object, in the same compare-and-set transaction on
the budget's one entry as a host pod's deletion.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from events import subjects
from spreadbus.features.podunavailablebudget.admission.handlers import BudgetAdmission
from spreadbus.features.podunavailablebudget.core import member_spend
from spreadbus.features.podunavailablebudget.core.member_spend import SpendAnswer, SpendRequest

log = logging.getLogger(__name__)


class HostUnanswered(RuntimeError):
    """The host gave no answer within the deadline (the leaf link down, no host webhook)."""


class HostBudgetClient:
    """A member webhook replica's spends on the host's budgets."""

    def __init__(self, nc: Client, member: str, *, deadline_seconds: float = 2.0) -> None:
        self.nc = nc
        self.member = member
        self.deadline = deadline_seconds
        self._prefix = f"{member_spend.answer_prefix(member)}.{secrets.token_hex(8)}"
        self._waiting: dict[str, asyncio.Future[bytes]] = {}
        self._sub: Subscription | None = None
        self._subscribing = asyncio.Lock()

    async def _subscribed(self) -> None:
        async with self._subscribing:
            if self._sub is None:
                self._sub = await self.nc.subscribe(f"{self._prefix}.*", cb=self._answered)
                await self.nc.flush()

    async def _answered(self, msg: Msg) -> None:
        future = self._waiting.pop(msg.subject, None)
        if future is None or future.done():
            return
        if msg.headers and msg.headers.get("Status") == "503":  # the server: no responder
            future.set_exception(HostUnanswered("no host webhook answers budget spends"))
        else:
            future.set_result(msg.data)

    async def spend(self, request: SpendRequest) -> SpendAnswer:
        try:
            async with asyncio.timeout(self.deadline):
                await self._subscribed()
                reply = f"{self._prefix}.{secrets.token_hex(8)}"
                future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
                self._waiting[reply] = future
                try:
                    await self.nc.publish(
                        member_spend.spend_subject(self.member, request.namespace),
                        member_spend.encode(request), reply=reply)
                    data = await future
                finally:
                    self._waiting.pop(reply, None)
        except TimeoutError:
            raise HostUnanswered(f"no answer from the host within {self.deadline:g} s") from None
        return member_spend.decode_answer(data)

    async def stop(self) -> None:
        if self._sub is not None:
            await self._sub.unsubscribe()
            self._sub = None


class SpendResponder:
    """A host webhook replica's answers to members' spends."""

    def __init__(self, nc: Client, admission: BudgetAdmission,
                 binding: Callable[[str, str], Mapping[str, Any] | None],
                 registers: Callable[[str], bool]) -> None:
        self.nc = nc
        self.admission = admission
        self.binding = binding
        """(namespace, name) -> the host's ResourceBinding."""
        self.registers = registers
        """Whether this cluster is the member's host (holds its Cluster object): only the host
        answers, so another cluster on the hub, whose budgets do not cover the member's copies,
        never answers first that nothing covers them."""
        self.answered = 0
        self.ignored = 0
        self._sub: Subscription | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        # ``.>``: the hub passes a leaf link the interest of a subscription this wide, not of
        # ``budget.spend.*.*`` (measured on nats-server with the leaf permissions of member_bus).
        # A queue group per cluster: a member's own webhook subscribes too (it cannot tell it is
        # no host), and NATS gives a queue group's message to a subscriber on the publisher's
        # own server first; with one group for all, the member's would take its own spends.
        self._sub = await self.nc.subscribe(
            f"{subjects.BUDGET_SPEND}.>", cb=self._received,
            queue=f"{member_spend.QUEUE}-{subjects.escape(self.admission.view.cluster)}")
        await self.nc.flush()

    async def _received(self, msg: Msg) -> None:
        # One task per spend, so spends on one entry are group-committed, not serialized.
        task = asyncio.create_task(self._answer(msg))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, msg: Msg) -> None:
        member = member_spend.member_of(msg.subject)
        if member == self.admission.view.cluster or (member is not None
                                                      and not self.registers(member)):
            return  # a member's own spend, or another's cluster's: its host answers it
        if member is None or not msg.reply or not member_spend.answers_to(msg.reply, member):
            self.ignored += 1  # an answer elsewhere would tell another member what it asked
            return
        try:
            request = member_spend.decode_request(msg.data)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            answer = SpendAnswer(allowed=False, code=400, reason="BadRequest",
                                 message=f"budget spend: {exc}")
        else:
            try:
                answer = await self.admission.spend_for_member(
                    member, request, self.binding(request.namespace, request.copy.binding))
            except Exception as exc:  # a bad pod must not leave the member without an answer
                log.warning("member spend failed", extra={"member": member, "error": repr(exc)})
                answer = SpendAnswer(allowed=False, code=403, reason="Forbidden",
                                     message=f"budget spend failed: {exc!r}")
        self.answered += 1
        await self.nc.publish(msg.reply, member_spend.encode(answer))

    async def stop(self) -> None:
        if self._sub is not None:
            await self._sub.unsubscribe()
            self._sub = None
        for task in list(self._tasks):
            task.cancel()
