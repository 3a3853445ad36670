"""Watcher settings (flags and SPREADBUS_* variables, see :mod:`spreadbus.runtime.settings`)."""

from __future__ import annotations

from spreadbus.runtime.settings import ServiceSettings

DEFAULT_RESOURCES = (
    "v1/pods",
    "v1/nodes",
    "apps/v1/deployments",
    "apps/v1/replicasets",
    "apps/v1/statefulsets",
    "apps/v1/controllerrevisions",
    "policy/v1/poddisruptionbudgets",
    "apps.kruise.io/v1alpha1/workloadspreads",
    "apps.kruise.io/v1alpha1/uniteddeployments",
    "apps.karmada.io/v1alpha1/workloadrebalancers",
)


class WatcherSettings(ServiceSettings, frozen=True, kw_only=True):
    resources: tuple[str, ...] = DEFAULT_RESOURCES
    """``[group/]version/resource`` to list and watch."""
    max_in_flight: int = 2000
    """Unacknowledged publishes before reading from Kubernetes pauses (back-pressure)."""
    watch_timeout_seconds: int = 300
    list_page_size: int = 500
