"""Planner settings (flags and SPREADBUS_* variables, see :mod:`spreadbus.runtime.settings`)."""

from __future__ import annotations

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
    nats_replicas: int = 1
    """Replicas of the reservation bucket if this service is the first to create it."""
