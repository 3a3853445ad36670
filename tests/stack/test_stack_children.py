"""The local stack's children: one log handle per child, ports reported by the child itself."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from spreadbus.cli.local_stack import HEALTH_LISTENING, Child


def reporting(port: int) -> list[str]:
    line = json.dumps({"msg": HEALTH_LISTENING, "port": port})
    return [sys.executable, "-c", f"print({line!r}, flush=True)"]


def wait_exit(child: Child) -> None:
    assert child.process is not None
    child.process.wait(30)


def test_a_restarted_child_closes_the_previous_log_handle(tmp_path: Path) -> None:
    child = Child("probe", reporting(1), tmp_path / "probe.log")
    handles = []
    for _ in range(3):
        child.start()
        handles.append(child._log)
        wait_exit(child)
    assert [h is not None and h.closed for h in handles] == [True, True, False]
    child.wait_or_kill(time.monotonic() + 5)
    assert handles[-1] is not None
    assert handles[-1].closed


def test_a_child_reports_the_port_it_bound_and_a_restart_reads_only_its_own_run(
    tmp_path: Path,
) -> None:
    log = tmp_path / "probe.log"
    child = Child("probe", reporting(4101), log)
    assert child.reported_port(HEALTH_LISTENING) == 0  # nothing written yet
    child.start()
    wait_exit(child)
    assert child.reported_port(HEALTH_LISTENING) == 4101
    child.argv = reporting(4102)
    child.start()
    wait_exit(child)
    assert child.reported_port(HEALTH_LISTENING) == 4102  # not the first run's line
    child.argv = [sys.executable, "-c", "print('not json'); print('{\"msg\": 1}')"]
    child.start()
    wait_exit(child)
    assert child.reported_port(HEALTH_LISTENING) == 0
    child.close_log()
    assert log.read_text().count(HEALTH_LISTENING) == 2


def test_a_restart_reuses_the_health_port_the_child_reported(tmp_path: Path) -> None:
    echo = [sys.executable, "-c", "import sys; print(sys.argv[1:], flush=True)",
            "--http-port=0", "--port=0"]
    child = Child("probe", echo, tmp_path / "probe.log")
    child.start()
    wait_exit(child)
    child.health_port = 4103  # as ready() records it from the first run's report
    child.start()
    wait_exit(child)
    child.close_log()
    runs = (tmp_path / "probe.log").read_text().splitlines()
    assert runs == ["['--http-port=0', '--port=0']", "['--http-port=4103', '--port=0']"]
