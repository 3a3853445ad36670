"""Which WorkloadSpread governs a new pod, decided only once a lagging view can tell.

The rule itself is the core's (``governing_workloadspread`` in
:mod:`spreadbus.features.workloadspread.core.target`: follow the pod's owner chain to its workload,
find the spread targeting it). What this module adds is when to trust the view with it. Deciding
that no WorkloadSpread governs a pod needs as much care as steering it: an unsteered pod runs
wherever it is scheduled, the planner then matches it to that node's subset (as Kruise's controller
does, full or not) and the subset ends over its limit. A WorkloadSpread is created before its
workload, which is created before the pod's owner, so before deciding, a pod waits (up to a timeout)
until the view holds:

- the pod's owner, when its kind is followed: a ReplicaSet's first pods are created moments
  after it, possibly before its observation reached this view. An owner still missing after the
  timeout fails the create, as Kruise fails it for an unknown owner; an owner of a kind the view
  does not follow ends the chain instead and is reported, so the pod is admitted with a warning;
- every WorkloadSpread the replicas told each other they allowed in the namespace
  (:mod:`spreadbus.features.workloadspread.admission.spread_hints`), heard first when the pod's
  owner is new and the view finds no spread for it.

Trade-off: the first pods of a new workload wait for a few stream messages (milliseconds), and
at worst the timeout, in exchange for never being left unsteered by a view that lags; after the
timeout the pod is decided from the view as it is.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from kubesemantics.owner_refs import controller_ref
from spreadbus.features.workloadspread.admission.spread_hints import SpreadHints
from spreadbus.features.workloadspread.admission.view import View
from spreadbus.features.workloadspread.admission.view_progress import ViewProgress
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.model import WorkloadSpread, api_group
from spreadbus.features.workloadspread.core.target import OwnerNotFound, governing_workloadspread

log = logging.getLogger(__name__)


class GoverningSpread:
    """Finds a pod's governing WorkloadSpread in the view, waiting for the view when needed."""

    def __init__(self, *, progress: ViewProgress, hints: SpreadHints, whitelist: Whitelist) -> None:
        self.view: View = progress.view
        self.progress = progress
        self.hints = hints
        self.whitelist = whitelist

    async def find(
        self, pod: Mapping[str, Any], unfollowed: list[str], *, timeout: float
    ) -> WorkloadSpread | str | None:
        """The governing spread, None if there is none, or why the owner chain is broken.

        Owners of kinds the view does not follow are named in ``unfollowed``.
        """
        namespace = pod_state.namespace(pod)
        owner = _owner_of(pod)
        await self._catch_up_with(namespace, owner, timeout)
        spread = await self._governing_in_view(pod, namespace, unfollowed, timeout)
        if (
            spread is None
            and self._owner_is_new(namespace, owner)
            and await self.hints.hear(namespace, timeout=timeout)
        ):
            await self._catch_up_with(namespace, owner, timeout)
            unfollowed.clear()
            spread = await self._governing_in_view(pod, namespace, unfollowed, timeout)
        return spread

    async def _catch_up_with(
        self, namespace: str, owner: tuple[str, str, str] | None, timeout: float
    ) -> None:
        """Wait until the view holds the pod's owner and the spreads allowed in its namespace."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self._owner_unseen(namespace, owner) or self.hints.unseen_in(namespace):
            if not await self.progress.wait_for_more(deadline):
                log.debug(
                    "view did not catch up with the pod's owner or an allowed WorkloadSpread",
                    extra={"namespace": namespace, "view_seq": self.view.seq},
                )
                return

    async def _governing_in_view(
        self, pod: Mapping[str, Any], namespace: str, unfollowed: list[str], timeout: float
    ) -> WorkloadSpread | str | None:
        """The spread governing the pod; an owner the view lacks yet is waited for briefly."""
        spreads = self.view.spreads_in(namespace)
        if not spreads:
            return None
        deadline = asyncio.get_running_loop().time() + timeout

        def record(namespace: str, group: str, kind: str, name: str) -> None:
            owner = f"{kind}.{group} {namespace}/{name}" if group else f"{kind} {namespace}/{name}"
            if owner not in unfollowed:
                unfollowed.append(owner)

        lookup = self.view.owner_lookup(record)
        while True:
            try:
                return governing_workloadspread(
                    pod, spreads, lookup=lookup, whitelist=self.whitelist
                )
            except OwnerNotFound as exc:
                if not await self.progress.wait_for_more(deadline):
                    return str(exc)
            spreads = self.view.spreads_in(namespace)  # as the view is after waiting

    def _owner_unseen(self, namespace: str, owner: tuple[str, str, str] | None) -> bool:
        if owner is None:
            return False
        followed, found = self.view.followed_lookup(namespace, *owner)
        return followed and found is None

    def _owner_is_new(self, namespace: str, owner: tuple[str, str, str] | None) -> bool:
        found = self.view.lookup(namespace, *owner) if owner else None
        return found is not None and self.hints.owner_is_new(found)


def _owner_of(pod: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """The pod's controller owner as ``(group, kind, name)``, if it names one."""
    owner = controller_ref(pod)
    if owner is None:
        return None
    kind, name = owner.get("kind"), owner.get("name")
    if not isinstance(kind, str) or not isinstance(name, str):
        return None
    return api_group(str(owner.get("apiVersion") or "")), kind, name
