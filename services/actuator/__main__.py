"""``python -m services.actuator``."""

from __future__ import annotations

import argparse
import sys

from services.actuator.cli import add_arguments, run

parser = argparse.ArgumentParser(prog="python -m services.actuator")
add_arguments(parser)
sys.exit(run(parser.parse_args()))
