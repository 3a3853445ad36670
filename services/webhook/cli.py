"""``spreadbus webhook`` and ``python -m services.webhook``: run one admission webhook replica."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from services.webhook.service import WebhookService, WebhookSettings, settings_problems
from spreadbus.runtime.json_logging import configure_logging
from spreadbus.runtime.settings import add_settings_arguments, load_settings
from spreadbus.runtime.shutdown import install_shutdown_handlers

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings_arguments(parser, WebhookSettings)


def run(args: argparse.Namespace) -> int:
    settings = load_settings(WebhookSettings, args)
    if isinstance(settings, list):
        for error in settings:
            print(f"spreadbus webhook: {error}", file=sys.stderr)
        return 2
    problems = settings_problems(settings)
    if problems:
        for problem in problems:
            print(f"spreadbus webhook: {problem}", file=sys.stderr)
        return 2
    configure_logging("webhook", settings.log_level)
    return asyncio.run(_serve(settings))


async def _serve(settings: WebhookSettings) -> int:
    stopping = install_shutdown_handlers()
    service = WebhookService(settings)
    try:
        await service.start()
        await stopping.wait()
    finally:
        await service.stop()
    log.info("webhook stopped")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m services.webhook", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))
