"""Timing and topology settings for the simulated cluster.

Simulated time runs at wall-clock speed, so every delay is a setting: the defaults feel like a
small real cluster, tests use :meth:`Settings.fast`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kubesim.behaviour.topology import DEFAULT_TOPOLOGY


@dataclass(frozen=True)
class Settings:
    topology: str = DEFAULT_TOPOLOGY
    # kubelet: bound -> ContainerCreating -> Running -> Ready
    create_delay: float = 0.2
    start_delay: float = 0.5
    ready_delay: float = 0.3
    # the most a graceful deletion waits, whatever terminationGracePeriodSeconds says
    max_termination_grace: float = 2.0
    # tolerationSeconds of the not-ready/unreachable tolerations the API adds to new pods; it is
    # an option of the API server (KubeSim(default_toleration_seconds=...)), kept here so the
    # flag and the test fixtures set it with the other timings
    default_toleration_seconds: float = 300.0
    # how often pods the scheduler could not place are retried without any triggering event
    unschedulable_retry: float = 5.0
    # write Events (Scheduled, SuccessfulCreate, ScalingReplicaSet, ...) for kubectl describe
    events: bool = True
    # the HorizontalPodAutoscaler controller: upstream's --horizontal-pod-autoscaler-* flags
    hpa_sync_period: float = 15.0
    hpa_downscale_stabilization: float = 300.0
    hpa_tolerance: float = 0.1
    hpa_cpu_initialization_period: float = 300.0
    hpa_initial_readiness_delay: float = 30.0

    @classmethod
    def fast(cls, **overrides: Any) -> Settings:
        """Delays in tens of milliseconds, for tests."""
        base = cls(
            create_delay=0.01,
            start_delay=0.02,
            ready_delay=0.01,
            max_termination_grace=0.05,
            default_toleration_seconds=2.0,
            unschedulable_retry=1.0,
        )
        return replace(base, **overrides)
