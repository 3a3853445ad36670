"""``python -m services.planner``."""

from __future__ import annotations

import argparse
import sys

from services.planner.cli import add_arguments, run

parser = argparse.ArgumentParser(prog="python -m services.planner")
add_arguments(parser)
sys.exit(run(parser.parse_args()))
