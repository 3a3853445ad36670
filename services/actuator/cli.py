"""``spreadbus actuator``: apply plans to the Kubernetes API, one outcome per plan."""

from __future__ import annotations

import argparse

from services.actuator.service import KUBE, main
from services.actuator.settings import ActuatorSettings
from spreadbus.runtime.service import service_main
from spreadbus.runtime.settings import add_settings_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings_arguments(parser, ActuatorSettings)


def run(args: argparse.Namespace) -> int:
    return service_main("actuator", ActuatorSettings, args, main, conditions=(KUBE,))
