"""The cluster registry's settings, and which services read each."""

from __future__ import annotations

from typing import Annotated

from spreadbus.engine.feature_settings import FeatureSettings, UsedBy


class ClusterSettings(FeatureSettings):
    cluster_monitor_grace_seconds: Annotated[float, UsedBy("planner")] = 40.0
    """A member whose agent sent no heartbeat this long is set Ready Unknown and tainted
    unreachable (Karmada's ``--cluster-monitor-grace-period``)."""
    cluster_startup_grace_seconds: Annotated[float, UsedBy("planner")] = 60.0
    """A registered member that never sent a heartbeat is set Ready Unknown this long after its
    Cluster object was created (Karmada's ``--cluster-startup-grace-period``)."""
    cluster_success_threshold_seconds: Annotated[float, UsedBy("planner")] = 30.0
    """A member's heartbeats turn its Ready from not True to True once they have reported it
    healthy this long (Karmada's ``--cluster-success-threshold``)."""
    cluster_failure_threshold_seconds: Annotated[float, UsedBy("planner")] = 30.0
    """A member's heartbeats turn its Ready from True to False once they have reported it
    unhealthy or unreachable this long (Karmada's ``--cluster-failure-threshold``)."""
