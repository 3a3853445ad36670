"""Client-side rate limiting on virtual time, and the JSON log line format."""

from __future__ import annotations

import io
import itertools
import json
import logging

from spreadbus.runtime.json_logging import configure_logging
from spreadbus.runtime.rate_limit import TokenBucket


class VirtualTime:
    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


async def test_a_burst_passes_at_once_then_calls_are_paced_at_qps() -> None:
    time = VirtualTime()
    bucket = TokenBucket(qps=10, burst=5, clock=time.clock, sleep=time.sleep)
    stamps = []
    for _ in range(25):
        await bucket.acquire()
        stamps.append(time.now)
    assert stamps[:5] == [0.0] * 5
    assert abs(stamps[-1] - 2.0) < 1e-9  # 20 more calls at 10 per second
    gaps = [b - a for a, b in itertools.pairwise(stamps[4:])]
    assert all(abs(g - 0.1) < 1e-9 for g in gaps)


def test_log_lines_are_json_objects_with_service_and_extra_fields() -> None:
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        configure_logging("planner", "INFO", stream=stream)
        logging.getLogger("spreadbus.test").info("plan published", extra={"plan": "abc"})
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("spreadbus.test").exception("failed", extra={"obj": object()})
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["service"] == "planner"
    assert first["msg"] == "plan published"
    assert first["plan"] == "abc"
    assert first["level"] == "INFO"
    assert "ValueError: boom" in second["exc"]
    assert second["obj"].startswith("<object object")
