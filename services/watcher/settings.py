"""Watcher settings (flags and SPREADBUS_* variables, see :mod:`spreadbus.runtime.settings`).

The resources to watch are, unless ``--resources`` names them, those the registered features
declare (:func:`spreadbus.features.registry.watched_resources`): every kind a feature reads is
observed. Custom workloads named by ``--workload-whitelist`` (the same JSON the webhook and the
planner take) are added to ``resources`` even when ``--resources`` is given: without them their
pods could not be steered. A resource the cluster does not serve (a CRD not installed) is
tolerated by the watch loop. A whitelist or a feature plugin that cannot be used is a bad setting
(exit 2) naming every problem in it.
"""

from __future__ import annotations

import msgspec

from spreadbus.features.registry import PluginError, features, watched_resources
from spreadbus.features.workloadspread.core.custom_workloads import WhitelistError, parse_whitelist
from spreadbus.features.workloadspread.core.workload_kinds import workload_kinds
from spreadbus.runtime.settings import ServiceSettings


class WatcherSettings(ServiceSettings, frozen=True, kw_only=True):
    resources: tuple[str, ...] = ()
    """``[group/]version/resource`` to list and watch; empty: what the features read."""
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
        if not self.resources:
            try:
                chosen = features(self.feature_plugins)
            except PluginError as exc:
                raise ValueError(
                    f"feature_plugins (--feature-plugins, SPREADBUS_FEATURE_PLUGINS): {exc}"
                ) from exc
            msgspec.structs.force_setattr(self, "resources", watched_resources(chosen))
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
