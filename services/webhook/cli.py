"""``spreadbus webhook`` and ``python -m services.webhook``: run one admission webhook replica."""

from __future__ import annotations

import argparse
import sys

from services.webhook.service import CAUGHT_UP, WebhookSettings, main, settings_problems
from spreadbus.engine.feature_set import bus_accesses
from spreadbus.runtime.bus_layout import service_needs
from spreadbus.runtime.nats_connection import NATS_CONDITION
from spreadbus.runtime.service import service_main
from spreadbus.runtime.settings import add_settings_arguments, load_settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings_arguments(parser, WebhookSettings)


def run(args: argparse.Namespace) -> int:
    settings = load_settings(WebhookSettings, args)
    if not isinstance(settings, list):
        problems = settings_problems(settings)
        for problem in problems:
            print(f"webhook: bad setting {problem}", file=sys.stderr)
        if problems:
            return 2
    # Once serving, a replica stays in the Service through a NATS restart or a follower that
    # starts over: its handlers decide without the bus (a budget that cannot be spent is
    # refused), where leaving it would let every review through unchecked (failurePolicy).
    return service_main("webhook", WebhookSettings, args, main, conditions=(CAUGHT_UP,),
                        held=(NATS_CONDITION, CAUGHT_UP), needs=needs)


def needs(settings: WebhookSettings) -> tuple[str, ...]:
    return service_needs("webhook", bus_accesses(settings.features()))


def command(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m services.webhook", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))
