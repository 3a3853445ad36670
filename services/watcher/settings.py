"""Watcher settings (flags and SPREADBUS_* variables, see :mod:`spreadbus.runtime.settings`).

The workload kinds come from :mod:`spreadbus.core.workload_kinds`, the table the webhook and the
planner read too, so every kind a WorkloadSpread may target is observed. Custom workloads named
by ``--workload-whitelist`` (the same JSON the webhook and the planner take) are added to
``resources`` even when ``--resources`` is given: without them their pods could not be steered.
A resource the cluster does not serve (a CRD not installed) is tolerated by the watch loop.
A whitelist that cannot be used is a bad setting (exit 2) naming every problem in it.
"""

from __future__ import annotations

import msgspec

from spreadbus.core.workload_kinds import workload_kinds
from spreadbus.core.workloadspread.custom_workloads import WhitelistError, parse_whitelist
from spreadbus.runtime.settings import ServiceSettings

DEFAULT_RESOURCES = (
    "v1/pods",
    "v1/nodes",
    *workload_kinds().resources(),
    "apps/v1/controllerrevisions",
    "policy/v1/poddisruptionbudgets",
    "apps.kruise.io/v1alpha1/workloadspreads",
    "apps.kruise.io/v1alpha1/uniteddeployments",
    "apps.karmada.io/v1alpha1/workloadrebalancers",
)


class WatcherSettings(ServiceSettings, frozen=True, kw_only=True):
    resources: tuple[str, ...] = DEFAULT_RESOURCES
    """``[group/]version/resource`` to list and watch."""
    workload_whitelist: str = ""
    """Custom workloads, as Kruise's WorkloadSpread_Watch_Custom_Workload_WhiteList JSON."""
    max_in_flight: int = 2000
    """Unacknowledged publishes before reading from Kubernetes pauses (back-pressure)."""
    watch_timeout_seconds: int = 300
    list_page_size: int = 500
    modified_hold_seconds: float = 0.1
    """How long an object's MODIFIED observation may wait for a newer one to replace it before
    it is published (0: publish every one); see :mod:`services.watcher.modified_hold`."""

    def __post_init__(self) -> None:
        if not self.modified_hold_seconds >= 0:
            raise ValueError(
                "modified_hold_seconds (--modified-hold-seconds, SPREADBUS_MODIFIED_HOLD_SECONDS) "
                f"must be >= 0, not {self.modified_hold_seconds}"
            )
        if not self.workload_whitelist:
            return
        try:
            whitelist = parse_whitelist(self.workload_whitelist)
        except WhitelistError as exc:
            raise ValueError(
                "workload_whitelist (--workload-whitelist, SPREADBUS_WORKLOAD_WHITELIST) is not a "
                "valid whitelist: " + "; ".join(exc.problems)
            ) from exc
        custom = [k.spec for k in workload_kinds(whitelist) if k.custom]
        merged = tuple(dict.fromkeys((*self.resources, *custom)))
        msgspec.structs.force_setattr(self, "resources", merged)
