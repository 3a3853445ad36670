"""The session guard finds a server process the tests left behind, by its marker."""

from __future__ import annotations

import subprocess
import sys

from tests.fixtures.processes import marked_processes, reap


def test_a_process_carrying_the_session_marker_is_found_and_killed_once_it_lingers(
    process_guard: str,
) -> None:
    pattern = "process-guard-probe"
    lingering = subprocess.Popen(
        [sys.executable, "-c", "import time, sys; time.sleep(60)", pattern]
    )
    try:
        assert [leak.pid for leak in marked_processes(process_guard, (pattern,))] == [
            lingering.pid
        ]
        assert [leak.pid for leak in marked_processes("another-session", (pattern,))] == []
        leaks = reap(process_guard, (pattern,), grace=0.2)
        assert [leak.pid for leak in leaks] == [lingering.pid]
        assert lingering.wait(10) == -9
        assert marked_processes(process_guard, (pattern,)) == []
    finally:
        if lingering.poll() is None:
            lingering.kill()
            lingering.wait()
