"""A webhook's admission policy over a test view, with its ledger on a real NATS bucket."""

from __future__ import annotations

from typing import Any

from nats.aio.client import Client

from services.webhook.admission import SpreadAdmission
from services.webhook.ledger import LedgerStore
from services.webhook.view import View
from services.webhook.view_progress import ViewProgress
from spreadbus.runtime.reservation_bucket import reservation_bucket


async def spread_admission(
    view: View, nc: Client, *, on_bus: bool = True, **options: Any
) -> SpreadAdmission:
    """The policy ``spreadbus webhook`` builds, reserving on ``nc``'s bucket; ``on_bus=False``
    keeps its hints and announcements off the bus (a replica that talks to no other)."""
    store = LedgerStore(await reservation_bucket(nc), deadline_seconds=30)
    return SpreadAdmission(
        view=view,
        ledger=store,
        progress=ViewProgress(view),
        nc=nc if on_bus else None,
        **options,
    )
