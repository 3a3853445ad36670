"""``python -m services.watcher``."""

from __future__ import annotations

import argparse
import sys

from services.watcher.cli import add_arguments, run

parser = argparse.ArgumentParser(prog="python -m services.watcher")
add_arguments(parser)
sys.exit(run(parser.parse_args()))
