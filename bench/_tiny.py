"""``--tiny``, the option every benchmark takes: its smallest run that still goes through every
step and prints every line, its ratio lines included.

The test suite runs each benchmark this way (tests/test_benchmarks_run_tiny.py), so a change that
breaks one fails there rather than on the next person who measures. Tiny figures measure nothing.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

HELP = ("the smallest run through every step, for checking that the benchmark works; "
        "its figures measure nothing (options given explicitly still apply)")


def arguments(parser: argparse.ArgumentParser, argv: Sequence[str] | None,
              tiny: Mapping[str, object]) -> argparse.Namespace:
    """``parser``'s arguments with ``--tiny`` added; with ``--tiny``, ``tiny`` (destination ->
    value) replaces the defaults, so an option given explicitly still wins."""
    parser.add_argument("--tiny", action="store_true", help=HELP)
    args = parser.parse_args(argv)
    unknown = sorted(set(tiny) - set(vars(args)))
    if unknown:
        raise ValueError(f"tiny sizes for options the parser lacks: {', '.join(unknown)}")
    if args.tiny:
        parser.set_defaults(**tiny)
        args = parser.parse_args(argv)
    return args
