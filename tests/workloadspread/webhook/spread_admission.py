"""A webhook's admission policy over a test view, with its ledger on a real NATS bucket."""

from __future__ import annotations

from typing import Any

from nats.aio.client import Client

from services.webhook.server import review_answer
from spreadbus.engine.admission_chain import AdmissionHandler, Decide, run_chain
from spreadbus.engine.review import AdmissionRequest
from spreadbus.features.workloadspread.admission.admission import SpreadAdmission
from spreadbus.features.workloadspread.admission.reservation_bucket import reservation_bucket
from spreadbus.features.workloadspread.admission.reservation_ledger import reservation_store
from spreadbus.features.workloadspread.admission.view import View
from spreadbus.features.workloadspread.admission.view_progress import ViewProgress


class Answering:
    """The WorkloadSpread handlers answering whole AdmissionReviews, as the webhook's paths do
    (each alone on its path, through the same chain); everything else is the policy's."""

    def __init__(self, policy: SpreadAdmission) -> None:
        self.policy = policy

    def __getattr__(self, name: str) -> Any:
        return getattr(self.policy, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "policy":
            object.__setattr__(self, name, value)
        else:
            setattr(self.policy, name, value)

    @staticmethod
    async def _answer(decide: Decide, request: AdmissionRequest) -> dict[str, Any]:
        handler = AdmissionHandler(feature="workloadspread", path="/test", decide=decide)
        return review_answer(request, await run_chain([handler], request))

    async def mutate_pod(self, request: AdmissionRequest) -> dict[str, Any]:
        return await self._answer(self.policy.mutate_pod, request)

    async def record_pod_removal(self, request: AdmissionRequest) -> dict[str, Any]:
        return await self._answer(self.policy.record_pod_removal, request)

    async def validate_workloadspread(self, request: AdmissionRequest) -> dict[str, Any]:
        return await self._answer(self.policy.validate_workloadspread, request)


async def spread_admission(
    view: View, nc: Client, *, on_bus: bool = True, **options: Any
) -> Any:
    """The policy ``spreadbus webhook`` builds, reserving on ``nc``'s bucket; ``on_bus=False``
    keeps its hints and announcements off the bus (a replica that talks to no other)."""
    store = reservation_store(await reservation_bucket(nc), deadline_seconds=30)
    return Answering(SpreadAdmission(
        view=view,
        ledger=store,
        progress=ViewProgress(view),
        nc=nc if on_bus else None,
        **options,
    ))
