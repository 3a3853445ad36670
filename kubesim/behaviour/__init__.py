"""Simulated kube-controller-manager, kube-scheduler and kubelet behaviour for kubesim.

``build_behaviours`` returns the components in start order: the kubelet first (it registers the
topology's nodes), then the scheduler, then the controller manager. Each talks to the API only
through :class:`kubesim.interface.Cluster`, so admission sees everything they do.
"""

from __future__ import annotations

import argparse

from kubesim.behaviour.controller_manager import ControllerManager
from kubesim.behaviour.kubelet import Kubelet
from kubesim.behaviour.scheduler import Scheduler
from kubesim.behaviour.settings import Settings
from kubesim.behaviour.topology import (
    DEFAULT_TOPOLOGY,
    TopologyError,
    load_topology,
    shipped_topologies,
)
from kubesim.interface import Behaviour


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags for topology and simulated delays; owned by the behaviour package."""
    defaults = Settings()
    group = parser.add_argument_group("simulated cluster")
    group.add_argument(
        "--topology",
        default=DEFAULT_TOPOLOGY,
        metavar="FILE",
        help=f"node topology: a YAML file or one of {', '.join(shipped_topologies())}"
        f" (default {DEFAULT_TOPOLOGY})",
    )
    group.add_argument(
        "--no-events",
        dest="sim_events",
        action="store_false",
        help="do not write Events for scheduling, scaling and evictions",
    )
    group.add_argument(
        "--no-behaviour",
        action="store_true",
        help="serve the API only: no nodes, scheduler, kubelet or controllers",
    )
    group.add_argument(
        "--control-plane",
        action="store_true",
        help="serve a control plane that runs no workloads, as a multi-cluster host's API "
        "server: objects, namespaces and garbage collection, but no nodes, scheduler, kubelet "
        "or workload controllers (a Deployment stays a template); --topology does not apply",
    )
    for flag, field, text in (
        ("--create-delay", "create_delay", "seconds from binding to ContainerCreating"),
        ("--start-delay", "start_delay", "seconds from ContainerCreating to Running"),
        ("--ready-delay", "ready_delay", "seconds from Running to Ready"),
        ("--max-termination-grace", "max_termination_grace", "cap on graceful deletion, seconds"),
        (
            "--default-toleration-seconds",
            "default_toleration_seconds",
            "tolerationSeconds of the not-ready/unreachable tolerations added to new pods",
        ),
        ("--unschedulable-retry", "unschedulable_retry", "seconds between retries of pending pods"),
        ("--hpa-sync-period", "hpa_sync_period", "seconds between HorizontalPodAutoscaler syncs"),
        (
            "--hpa-downscale-stabilization",
            "hpa_downscale_stabilization",
            "window of recommendations a scale-down without spec.behavior honours, seconds",
        ),
        ("--hpa-tolerance", "hpa_tolerance", "usage ratio change below which HPAs do not scale"),
        (
            "--hpa-cpu-initialization-period",
            "hpa_cpu_initialization_period",
            "seconds after a pod starts during which its cpu sample needs it Ready",
        ),
        (
            "--hpa-initial-readiness-delay",
            "hpa_initial_readiness_delay",
            "seconds after start in which a not-ready pod counts as never ready",
        ),
    ):
        group.add_argument(
            flag,
            dest=f"sim_{field}",
            type=float,
            default=getattr(defaults, field),
            metavar="RATIO" if field == "hpa_tolerance" else "SECONDS",
            help=f"{text} (default {getattr(defaults, field)})",
        )


def settings_from_args(args: argparse.Namespace) -> Settings:
    values = {
        name[len("sim_") :]: value for name, value in vars(args).items() if name.startswith("sim_")
    }
    return Settings(topology=getattr(args, "topology", None) or DEFAULT_TOPOLOGY, **values)


def build_behaviours(args: argparse.Namespace) -> list[Behaviour]:
    """The cluster components to run alongside the API machinery: none for an API-only server
    or a control plane (namespaces and garbage collection are the API server's own)."""
    if getattr(args, "no_behaviour", False) or getattr(args, "control_plane", False):
        return []
    try:
        return behaviours_for(settings_from_args(args))
    except TopologyError as exc:
        raise SystemExit(f"kubesim: --topology: {exc}") from exc


def behaviours_for(settings: Settings) -> list[Behaviour]:
    """The components for ``settings``: kubelet (registers nodes), scheduler, controllers."""
    topology = load_topology(settings.topology)
    return [Kubelet(topology, settings), Scheduler(settings), ControllerManager(settings)]
