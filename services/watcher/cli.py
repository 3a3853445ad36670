"""``spreadbus watcher``: list and watch one cluster into the KUBE stream."""

from __future__ import annotations

import argparse

from services.watcher.service import SYNCED, main
from services.watcher.settings import WatcherSettings
from spreadbus.runtime.service import service_main
from spreadbus.runtime.settings import add_settings_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings_arguments(parser, WatcherSettings)


def run(args: argparse.Namespace) -> int:
    return service_main("watcher", WatcherSettings, args, main, conditions=(SYNCED,))
