"""Garbage collection for a process whose heap is mostly one long-lived projection.

A service holds objects that live as long as the process (the webhook's view and the planner's
projection, a JSON tree per object, thousands of them; the watcher's record of what it published)
and handles a steady flow of short-lived ones (decoded messages, reviews, plans). CPython's
default thresholds run a young collection every 700 new container objects and a full one, walking
the whole projection, every hundred of those; the short-lived objects are mostly gone by the
next young collection anyway, while the projection's never are. So a service:

- collects its young generation every :data:`YOUNG_THRESHOLD` new objects (:func:`tune`), which
  keeps the work per collection proportional to what was allocated but promotes far fewer
  still-in-flight objects into the older generations, whose collections are the costly ones;
- once it is first ready (its replay folded), collects everything once and freezes what
  survived (:func:`settle`): frozen objects leave the collector's generations, so later full
  collections walk only what was made since. They are still freed by reference counting when
  dropped; only a reference cycle among them would outlive the process's need for it, and a
  projection of JSON trees and frozen structs has none.

Measured in the 1,000-pod scale-up of ``bench/workloadspread_end_to_end.py`` (collector time
from ``gc.callbacks`` during the run): webhook 0.040-0.054 s and planner 0.042-0.048 s with the
defaults, 0.008 s and 0.011 s with both.

Process-wide settings: only a service's entry point applies them, never a library call.
"""

from __future__ import annotations

import gc
from typing import Final

YOUNG_THRESHOLD: Final = 7000
"""New container objects between young collections (CPython's default is 700)."""


def tune() -> None:
    """Collect the young generation less often; the older generations' ratios stay."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)


def settle() -> None:
    """Collect once and freeze what survives: the folded projection leaves the collector."""
    gc.collect()
    gc.freeze()
