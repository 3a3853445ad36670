"""Dynamic admission: calling mutating, then validating webhooks with ``AdmissionReview`` v1.

Placeholder until webhook calls land: no webhook configuration means nothing to call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubesim.apiserver import ApiServer
    from kubesim.registry import ResourceType

JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Attributes:
    operation: str
    rt: ResourceType
    subresource: str
    namespace: str
    name: str
    dry_run: bool
    options: JsonObject


class Admission:
    def __init__(self, server: ApiServer) -> None:
        self.server = server

    @property
    def active(self) -> bool:
        return False

    async def mutate(self, attrs: Attributes, obj: Any, old: JsonObject | None) -> Any:
        return obj

    async def validate(self, attrs: Attributes, obj: Any, old: JsonObject | None) -> None:
        return None

    async def close(self) -> None:
        return None
