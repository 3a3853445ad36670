"""Hints between webhook replicas that a WorkloadSpread was just allowed, over core NATS.

Deciding that no WorkloadSpread governs a pod needs as much care as steering it: an unsteered
pod runs wherever it is scheduled, the planner then matches it to that node's subset (as Kruise's
controller does, full or not) and the subset ends over its limit. A WorkloadSpread is created
before its workload, but the observation stream alone does not order the spread before the
workload's pods' owner: the watcher watches each resource on its own, and a spread has been seen
arriving 100 ms after the owner. So:

- a replica that allows a WorkloadSpread CREATE tells the others (:class:`SpreadAllowed` on
  :func:`allowed_subject`), taken by the server before its answer
  (:func:`~spreadbus.runtime.server_barrier.processed`), hence before the API server stores the
  spread, and remembers it itself until its view holds it;
- a replica that finds no governing spread for a pod whose owner was created within
  :data:`ANNOUNCED_SECONDS` first hears those hints (one NATS round trip, :meth:`SpreadHints.hear`)
  and, when one names a spread of the pod's namespace its view lacks, waits for that spread.

Trade-offs: the hints are core NATS, not JetStream: nothing is stored, and a replica that is not
running when a hint is sent learns the spread from the observation stream like everything else
(start-up waits until it listens before serving). A hint is only a reason to wait: the decision
itself is always made from the view. A hint for a spread the API server then refused makes pods
of that namespace wait up to the catch-up timeout, for at most :data:`ANNOUNCED_SECONDS`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import msgspec

from events import subjects
from spreadbus.features.workloadspread.admission.view import View
from spreadbus.runtime.server_barrier import processed

if TYPE_CHECKING:
    # The offline commands read this module (its subject) and never load the NATS client.
    from nats.aio.client import Client
    from nats.aio.subscription import Subscription

log = logging.getLogger(__name__)

ANNOUNCED_SECONDS: Final = 10.0
"""How long an allowed WorkloadSpread CREATE is expected in the view (the API may still fail it),
and how young a pod's owner must be for a missing spread to be asked of the other replicas."""


class SpreadAllowed(msgspec.Struct, frozen=True):
    """A WorkloadSpread CREATE one replica allowed, told to the others (core NATS, not stored).

    A hint between the live replicas of one webhook, not a bus event: a replica that misses it
    (not running yet) learns the spread from the observation stream like everything else.
    """

    namespace: str
    name: str


LISTEN_SECONDS: Final = 10.0
"""How long :meth:`SpreadHints.listening` waits for the server to confirm the subscription."""
_ENCODER: Final = msgspec.json.Encoder()
_DECODER: Final = msgspec.json.Decoder(SpreadAllowed)


HINTS_PREFIX: Final = "webhook.spreads"


def allowed_subject(cluster: str) -> str:
    return f"{HINTS_PREFIX}.{subjects.escape(cluster)}"


class SpreadHints:
    """One replica's side of the hints: it tells, listens, and remembers what its view lacks."""

    def __init__(self, *, view: View, nc: Client | None, clock: Callable[[], float]) -> None:
        self.view = view
        self.nc = nc
        self.clock = clock
        self.allowed_unseen: dict[tuple[str, str], float] = {}
        """WorkloadSpreads allowed on CREATE and not yet in the view: (namespace, name) -> when."""
        self._subscription: Subscription | None = None
        self._listening: asyncio.Future[None] | None = None
        if nc is not None:
            self._listening = asyncio.get_running_loop().create_task(self._listen(nc))
            self._listening.add_done_callback(_report_listen_failure)

    async def listening(self) -> None:
        """Return once the server routes other replicas' allowed WorkloadSpreads to this one."""
        if self._listening is not None and self.nc is not None:
            await self._listening
            await processed(self.nc, timeout=LISTEN_SECONDS)

    async def _listen(self, nc: Client) -> None:
        self._subscription = await nc.subscribe(allowed_subject(self.view.cluster))

    async def tell_allowed(self, namespace: str, name: str, *, timeout: float) -> None:
        """Tell the other replicas, before the API server stores it, that a spread is coming."""
        self.allowed_unseen[(namespace, name)] = self.clock()
        if self.nc is None or not self.nc.is_connected:
            return
        data = _ENCODER.encode(SpreadAllowed(namespace=namespace, name=name))
        try:
            await self.nc.publish(allowed_subject(self.view.cluster), data)
            await processed(self.nc, timeout=timeout)
        except Exception as exc:
            log.warning("allowed WorkloadSpread not announced: %r", exc)

    def owner_is_new(self, owner: Mapping[str, Any]) -> bool:
        """Whether a pod's owner (as the view holds it) is young enough for a spread allowed
        for it to be still on its way; an unreadable creation time counts as young."""
        created = (owner.get("metadata") or {}).get("creationTimestamp")
        try:
            moment = datetime.fromisoformat(str(created)).timestamp()
        except ValueError:
            return True
        return self.clock() - moment <= ANNOUNCED_SECONDS

    async def hear(self, namespace: str, *, timeout: float) -> bool:
        """Take in every hint sent so far; whether a spread allowed here is not in the view.

        A flush is a round trip on this connection: every hint the server routed to us before
        answering it is then queued on the subscription, and is read here.
        """
        if self.nc is None or not self.nc.is_connected or self._listening is None:
            return False
        try:
            await asyncio.wait_for(asyncio.shield(self._listening), timeout)
            await asyncio.wait_for(self.nc.flush(), timeout)
        except Exception as exc:
            log.warning("allowed WorkloadSpreads not heard: %r", exc)
            return False
        sub = self._subscription
        while sub is not None and sub.pending_msgs > 0:
            try:
                msg = await sub.next_msg(timeout=0.1)
                heard = _DECODER.decode(msg.data)
            except TimeoutError:  # NATS' own timeout is a TimeoutError too
                break
            except msgspec.DecodeError:
                continue
            if (heard.namespace, heard.name) not in self.view.spreads:
                self.allowed_unseen[(heard.namespace, heard.name)] = self.clock()
        return self.unseen_in(namespace)

    def unseen_in(self, namespace: str) -> bool:
        """Whether a WorkloadSpread allowed in ``namespace`` is not in the view yet."""
        if not self.allowed_unseen:
            return False
        oldest = self.clock() - ANNOUNCED_SECONDS
        for key, at in list(self.allowed_unseen.items()):
            if at < oldest or key in self.view.spreads:
                del self.allowed_unseen[key]
        return any(ns == namespace for ns, _ in self.allowed_unseen)


def _report_listen_failure(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("not listening for allowed WorkloadSpreads: %r", task.exception())
