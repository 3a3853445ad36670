"""Actuator settings (flags and SPREADBUS_* variables, see :mod:`spreadbus.runtime.settings`)."""

from __future__ import annotations

from typing import Any, ClassVar

from spreadbus.engine.feature import Feature
from spreadbus.engine.feature_service_settings import FeatureServiceSettings
from spreadbus.features.registry import BUILTIN


class ActuatorSettings(FeatureServiceSettings):
    """The actuator's own settings, on top of the shared ones."""

    service: ClassVar[str] = "actuator"
    builtin: ClassVar[tuple[Feature[Any], ...]] = BUILTIN

    kube_qps: float = 20.0
    """Kubernetes API requests per second, on average."""
    kube_burst: int = 40
    """Kubernetes API requests allowed at once above the average rate."""
    workers: int = 8
    """Plans applied concurrently by this replica."""
    max_attempts: int = 6
    """Tries per delivery for retryable API errors before the plan is given up as failed."""
    max_deliveries: int = 5
    """Deliveries of one plan (crashes mid-apply) before it is given up as failed."""
    backoff_seconds: float = 0.2
    """First retry delay; doubles per attempt, capped at 10 s."""
    scope_governor_seconds: float = 3.0
    """How long a governor read for the scope check is reused (0 with the next: never)."""
    scope_link_seconds: float = 30.0
    """How long an owner (a ReplicaSet ...) read for the scope check is reused, same uid only."""
    host_kubeconfig: str = ""
    """Kubeconfig of the host's API server, for a member's actuator: the governors of plans for
    this member that live in the host (a UnitedDeployment of a subset workload here, a propagated
    template's binding) are read there. Empty: plans whose governor is in another cluster are
    refused, and host governors are read in this cluster."""
    host_kube_context: str = ""
    """Context of ``--host-kubeconfig`` to use; empty: its current context."""
    host_cluster: str = "local"
    """The host's cluster name (its services' ``--cluster``), as plans name a governor's
    cluster; the default is every service's default ``--cluster``, the host's of ``spreadbus up
    --members``."""
