"""``spreadbus planner``: replay observations into the projection and decide plans."""

from __future__ import annotations

import argparse

from services.planner.service import CAUGHT_UP, main
from services.planner.settings import PlannerSettings
from spreadbus.engine.feature_set import bus_accesses
from spreadbus.runtime.bus_layout import service_needs
from spreadbus.runtime.service import service_main
from spreadbus.runtime.settings import add_settings_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings_arguments(parser, PlannerSettings)


def run(args: argparse.Namespace) -> int:
    return service_main("planner", PlannerSettings, args, main, conditions=(CAUGHT_UP,),
                        needs=needs)


def needs(settings: PlannerSettings) -> tuple[str, ...]:
    return service_needs("planner", bus_accesses(settings.features()),
                         snapshot_bucket=settings.snapshot_bucket, shards=settings.shards)
