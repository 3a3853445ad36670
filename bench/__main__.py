"""Run every benchmark, each in its own subprocess, and print what each reports.

``python -m bench`` runs them all at their default sizes;
``python -m bench --full`` asks each for its full size (the planner replays 1M observations);
``python -m bench --tiny`` runs each at its tiny size (``--tiny``, every benchmark's option: a run
through every step whose figures measure nothing, for checking that they work), those that can
share on one secured and one open local stack started once (:mod:`bench._stack`);
``python -m bench planner_replay`` runs only the named ones. Every benchmark measures its own
baseline in the same run and prints ``ratio`` lines, so results compare across machines.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import _tiny
from bench._stack import shared_stacks

HERE = Path(__file__).parent


def discover() -> list[str]:
    return sorted(
        p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_") and p.stem != "__init__"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--full", action="store_true", help="full sizes (1M observations)")
    size.add_argument("--tiny", action="store_true", help=_tiny.HELP)
    args = parser.parse_args(argv)
    available = discover()
    chosen = args.names or available
    unknown = [n for n in chosen if n not in available]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; have: {', '.join(available)}")
        return 2
    env = dict(os.environ)
    if args.full:
        env["SPREADBUS_BENCH_FULL"] = "1"
    failed = []
    with contextlib.ExitStack() as running:
        given: dict[str, list[str]] = {}
        if args.tiny:
            tmp = running.enter_context(tempfile.TemporaryDirectory(prefix="spreadbus-bench-"))
            given = running.enter_context(shared_stacks(Path(tmp), chosen))
        for name in chosen:
            print(f"== bench.{name}", flush=True)
            started = time.perf_counter()
            options = ["--tiny", *given.get(name, [])] if args.tiny else []
            code = subprocess.call([sys.executable, "-m", f"bench.{name}", *options], env=env,
                                   cwd=HERE.parent)
            print(f"   ({time.perf_counter() - started:.1f} s, exit {code})", flush=True)
            if code != 0:
                failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
