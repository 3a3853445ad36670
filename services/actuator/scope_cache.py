"""The governor checks' reads, kept a little while so a burst of plans does not repeat them.

Every governed plan reads its governor (:mod:`services.actuator.governor_check`), and a pod plan
also what lies between the pod and the governor (:mod:`services.actuator.scope_check`); both
read the governor through here, so a burst of plans of one governor reads it once.

Why: checking a plan against its governor turned a WorkloadSpread's deletion-cost patch on a
Deployment's pod from one API request into four (the WorkloadSpread, the pod, its ReplicaSet,
the write). At the actuator's default 20 requests/s the
costs of 150 pods took about 30 s instead of about 7.5 s. The pod must be read for each plan,
but 150 pods share one WorkloadSpread and a few ReplicaSets: kept here, those cost one read each
per burst, and the 150 plans about 150 + 1 + 3 reads before their writes instead of 450. On the
local stack (``python -m bench.actuator_scope_reads``: the elastic example's WorkloadSpread created
over 150 running pods) the actuator went from 1,024 requests and 29 s to every cost to about 450
and 14 s.

- A governor is kept ``governor_seconds`` (3 s) after its read was sent, so a burst of plans
  from one governor reads it once.
- A chain link (a ReplicaSet, a subset workload ...) is kept ``link_seconds`` (30 s) after its
  read was sent, and reused only while its uid is the one the owner reference being followed
  names: a link replaced under its name is read again, and the check's ``Stale`` verdict stays
  right. Only the link's kind, name, uid and owner references are kept.
- Both are bounded in entries, least recently used first out; concurrent checks that need an
  object not yet kept share one read of it.
- A plan is never refused on what was kept: a refusal or ``Stale`` verdict reached with any object
  from here (kept, or a read another check had sent) is checked again with fresh reads, which
  also replace what was kept. A changed ``targetRef`` or selector therefore never refuses a
  legitimate plan. It can let a plan through for at most ``governor_seconds`` after the read
  its verdict used was sent (the governor as it was then); a ReplicaSet orphaned or adopted by
  another owner under the same uid, for at most ``link_seconds``. Past that window every plan is
  checked on reads sent after the change.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from events.messages import Plan
from kubesemantics.lenient_json import as_map
from services.actuator.scope_check import Get, OutOfScope, Stale, Uncached, judge
from spreadbus.engine.plan_grants import PlanGrant
from spreadbus.engine.plan_scope import uid_of

GOVERNOR_SECONDS: Final = 3.0
LINK_SECONDS: Final = 30.0


@dataclass(frozen=True)
class ScopeLimits:
    """How long and how many reads are kept; both times 0: none, every read is sent."""

    governor_seconds: float = GOVERNOR_SECONDS
    link_seconds: float = LINK_SECONDS
    max_governors: int = 64
    max_links: int = 1024

    @property
    def keeps(self) -> bool:
        return self.governor_seconds > 0 or self.link_seconds > 0


KEPT_AS_DEFAULT: Final = ScopeLimits()

Accept = Callable[[dict[str, Any]], bool]


@dataclass(frozen=True)
class _Kept:
    obj: dict[str, Any]
    expires: float


class _Shelf:
    """Objects by path, each until ``seconds`` after its read was sent, at most ``size``."""

    def __init__(self, get: Get, clock: Callable[[], float], seconds: float, size: int,
                 keep: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self._get = get
        self._clock = clock
        self._seconds = seconds
        self._size = size
        self._keep = keep
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._reading: dict[str, asyncio.Task[dict[str, Any]]] = {}

    def __len__(self) -> int:
        return len(self._kept)

    async def read(self, path: str, accept: Accept) -> tuple[dict[str, Any], bool]:
        """The object at ``path`` and whether it came from an earlier read."""
        kept = self._kept.get(path)
        if kept is not None:
            if kept.expires > self._clock() and accept(kept.obj):
                self._kept.move_to_end(path)
                return kept.obj, True
            if kept.expires <= self._clock():
                del self._kept[path]
        reading = self._reading.get(path)
        if reading is not None:
            obj = await asyncio.shield(reading)
            if accept(obj):
                return obj, True
        return await self.fresh(path), False

    async def fresh(self, path: str) -> dict[str, Any]:
        """Read ``path`` now, keep it, and let concurrent readers of it share the answer."""
        task = asyncio.ensure_future(self._fetch(path))
        task.add_done_callback(_retrieve)
        self._reading[path] = task
        return await asyncio.shield(task)

    async def _fetch(self, path: str) -> dict[str, Any]:
        sent = self._clock()
        try:
            obj = self._keep(await self._get(path))
        finally:
            if self._reading.get(path) is asyncio.current_task():
                del self._reading[path]
        kept = self._kept.get(path)
        if kept is None or kept.expires <= sent + self._seconds:
            self._kept[path] = _Kept(obj, sent + self._seconds)
            self._kept.move_to_end(path)
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)
        return obj


def _retrieve(task: asyncio.Task[dict[str, Any]]) -> None:
    """A read whose every reader went away must not log its error as never retrieved."""
    if not task.cancelled():
        task.exception()


def _link_facts(obj: dict[str, Any]) -> dict[str, Any]:
    """What the chain check reads of a link; the rest (a pod template ...) is not kept."""
    metadata = as_map(obj.get("metadata"))
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"),
            "metadata": {k: metadata[k] for k in ("name", "namespace", "uid", "ownerReferences")
                         if k in metadata}}


class ScopeCache:
    """The scope check's governor and chain-link reads, shared by the plans of a burst."""

    def __init__(self, get: Get, *, clock: Callable[[], float] = time.monotonic,
                 limits: ScopeLimits = KEPT_AS_DEFAULT) -> None:
        self._get = get
        self._keeps = limits.keeps
        self.governors = _Shelf(get, clock, limits.governor_seconds, limits.max_governors,
                                lambda o: o)
        self.links = _Shelf(get, clock, limits.link_seconds, limits.max_links, _link_facts)

    async def governor(self, path: str, *, fresh: bool = False) -> tuple[dict[str, Any], bool]:
        """The governor at ``path`` and whether it came from an earlier read; ``fresh``: read
        now (and kept). A read the API refuses (not found ...) raises and is not kept."""
        if not self._keeps:
            return await self._get(path), False
        if fresh:
            return await self.governors.fresh(path), False
        return await self.governors.read(path, lambda _: True)

    async def judge(self, plan: Plan, grant: PlanGrant,
                    target: dict[str, Any]) -> OutOfScope | Stale | None:
        """:func:`~services.actuator.scope_check.judge`, a refusal made on kept objects
        confirmed on fresh reads."""
        if not self._keeps:
            return await judge(plan, grant, target, Uncached(self._get))
        reads = _Reads(self, fresh=False)
        verdict = await judge(plan, grant, target, reads)
        if verdict is None or not reads.reused:
            return verdict
        return await judge(plan, grant, target, _Reads(self, fresh=True))


class _Reads:
    """One check's reads: kept ones allowed or not, noting whether any was used."""

    def __init__(self, cache: ScopeCache, *, fresh: bool) -> None:
        self._cache = cache
        self._fresh = fresh
        self.reused = False

    async def governor(self, path: str) -> dict[str, Any]:
        return await self._read(self._cache.governors, path, lambda _: True)

    async def link(self, path: str, uid: str) -> dict[str, Any]:
        return await self._read(self._cache.links, path, lambda o: not uid or uid_of(o) == uid)

    async def _read(self, shelf: _Shelf, path: str, accept: Accept) -> dict[str, Any]:
        if self._fresh:
            return await shelf.fresh(path)
        obj, reused = await shelf.read(path, accept)
        self.reused = self.reused or reused
        return obj
