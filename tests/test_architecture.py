"""The architecture rules that import-linter cannot see: the core never reads a clock or
randomness, and no module is a grab-bag named utils/helpers/common."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PURE = [ROOT / "spreadbus" / "core", ROOT / "spreadbus" / "projection"]
CLOCK_OR_CHANCE = re.compile(
    r"\b(datetime\.now|datetime\.utcnow|date\.today|time\.time|time\.monotonic|"
    r"time\.perf_counter|uuid\.uuid[14]|import random|from random)\b"
)
PACKAGES = ["spreadbus", "events", "services", "kubesim"]


def _sources(dirs: list[Path]) -> list[Path]:
    return sorted(p for d in dirs if d.exists() for p in d.rglob("*.py"))


def test_pure_core_reads_no_clock_and_no_randomness() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _sources(PURE)
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if CLOCK_OR_CHANCE.search(line)
    ]
    assert offenders == []


def test_the_pure_core_exists_and_is_checked() -> None:
    assert len(_sources(PURE)) > 5


def test_no_grab_bag_modules() -> None:
    grab_bags = [
        str(path.relative_to(ROOT))
        for path in _sources([ROOT / p for p in PACKAGES])
        if path.stem in {"utils", "util", "helpers", "common", "misc"}
        or path.parent.name in {"utils", "util", "helpers", "common", "misc"}
    ]
    assert grab_bags == []
