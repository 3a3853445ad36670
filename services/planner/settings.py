"""Planner settings (flags and SPREADBUS_* variables, see :mod:`spreadbus.runtime.settings`).

The workload whitelist is checked when the settings are loaded: a whitelist that cannot be used is
a bad setting (the service exits 2 naming the flag and every problem in it), never a traceback
once the service has started.
"""

from __future__ import annotations

from spreadbus.features.workloadspread.core.custom_workloads import WhitelistError, parse_whitelist
from spreadbus.runtime.settings import ServiceSettings


class PlannerSettings(ServiceSettings, frozen=True, kw_only=True):
    planner_id: str = ""
    """Name of this replica in the lease; defaults to host name and process id."""
    lease_ttl_seconds: float = 6.0
    snapshot_every: int = 50_000
    """Write a snapshot after this many new messages (and at most every snapshot interval)."""
    snapshot_interval_seconds: float = 60.0
    snapshot_bucket: str = "spreadbus-snapshots"
    replay_batch: int = 8192
    workload_whitelist: str = ""
    """Custom workloads, as Kruise's WorkloadSpread_Watch_Custom_Workload_WhiteList JSON."""
    adaptive_recover_seconds: float = 300.0
    """How long an Adaptive subset stays ``Schedulable=False`` before it may turn True again
    (Kruise: 300 s); handed to the pure planning functions as ``recover_after_seconds``."""
    workloadspread_min_interval_seconds: float = 0.25
    """Plan one WorkloadSpread at most this often; changes in between are taken together."""
    round_spacing_seconds: float = 0.02
    """Start decision rounds at most this often: what arrives in between is decided together."""
    nats_replicas: int = 1
    """Replicas of the reservation bucket if this service is the first to create it."""

    def __post_init__(self) -> None:
        try:
            parse_whitelist(self.workload_whitelist or None)
        except WhitelistError as exc:
            raise ValueError(
                "workload_whitelist (--workload-whitelist, SPREADBUS_WORKLOAD_WHITELIST) is not a "
                "valid whitelist: " + "; ".join(exc.problems)
            ) from exc
