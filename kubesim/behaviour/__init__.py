"""Simulated kube-controller-manager, kube-scheduler and kubelet behaviour for kubesim."""

from __future__ import annotations

import argparse

from kubesim.interface import Behaviour


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags for topology and simulated delays; owned by the behaviour package."""


def build_behaviours(args: argparse.Namespace) -> list[Behaviour]:
    """The cluster components to run alongside the API machinery."""
    return []
