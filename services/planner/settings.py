"""Planner settings (flags and SPREADBUS_* variables, see :mod:`spreadbus.runtime.settings`).

The settings of the features the planner runs (WorkloadSpread's whitelist, Adaptive recovery and
planning interval) are added when the settings are loaded
(:class:`~spreadbus.engine.feature_service_settings.FeatureServiceSettings`).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field, ValidationInfo, field_validator

from events.shards import MAX_SHARDS, Shards
from spreadbus.engine.feature import Feature
from spreadbus.engine.feature_service_settings import FeatureServiceSettings
from spreadbus.features.registry import BUILTIN


class PlannerSettings(FeatureServiceSettings):
    """The planner's own settings, on top of the shared ones."""

    service: ClassVar[str] = "planner"
    builtin: ClassVar[tuple[Feature[Any], ...]] = BUILTIN

    planner_id: str = ""
    """Name of this replica in the lease; defaults to host name and process id."""
    lease_ttl_seconds: float = 6.0
    """How long the lease outlives its last renewal; a standby takes over after that. The lease
    bucket's TTL wins, which ``spreadbus bus-setup`` sets from this same setting."""
    snapshot_every: int = 50_000
    """Write a snapshot after this many new messages (and at most every snapshot interval)."""
    snapshot_interval_seconds: float = 60.0
    """Longest time between two snapshots while messages arrive."""
    snapshot_bucket: str = "spreadbus-snapshots"
    """Object store bucket the snapshots are written to (``spreadbus bus-setup`` creates it)."""
    replay_batch: int = 8192
    """Messages fetched per request while replaying the observations."""
    round_spacing_seconds: float = 0.02
    """Start decision rounds at most this often: what arrives in between is decided together."""
    shards: Annotated[int, Field(ge=1, le=MAX_SHARDS)] = 1
    """Planner groups the namespaces are shared among, each with its own leader and standbys
    (``spreadbus bus-setup`` is given the same number); one decides for every namespace."""
    shard: Annotated[int, Field(ge=0)] = 0
    """Which of the ``--shards`` groups this replica belongs to, from 0."""

    @field_validator("shard")
    @classmethod
    def _shard_in_range(cls, shard: int, info: ValidationInfo) -> int:
        shards = info.data.get("shards")  # absent when it was itself invalid
        if shards is not None and shard >= shards:
            raise ValueError(f"shard {shard} is not below shards {shards}: the shards are "
                             f"numbered 0 to {shards - 1}")
        return shard

    @property
    def shard_of(self) -> Shards:
        return Shards(self.shards, self.shard)
