"""``spreadbus up`` supervises nats-server like the services, says what it restarts, and starts a
child's restart delay over once the child has stayed up a while."""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.request
from pathlib import Path

import pytest

from spreadbus.cli.local_stack import (
    FIRST_DELAY_SECONDS,
    HEALTHY_RESET_SECONDS,
    MAX_DELAY_SECONDS,
    Backoff,
)
from tests.fixtures.observed_generation import ANNOTATION
from tests.fixtures.polling import wait_until
from tests.stack.test_local_stack import (
    DEPLOYMENT,
    KUBECTL,
    children_of,
    start_up,
    tear_down,
    while_up,
)


def test_restart_delays_double_up_to_their_cap() -> None:
    backoff = Backoff()
    delays = []
    for n in range(9):
        delay = backoff.exited(now=100.0 * n)
        assert delay is not None
        delays.append(delay)
        assert backoff.exited(now=100.0 * n + 1) is None, "one exit, one scheduled restart"
        assert not backoff.due(100.0 * n + delay - 0.01)
        assert backoff.due(100.0 * n + delay)
        backoff.started(100.0 * n + delay)
    assert delays == [0.5, 1, 2, 4, 8, 16, 30, 30, 30]
    assert delays[0] == FIRST_DELAY_SECONDS
    assert delays[-1] == MAX_DELAY_SECONDS


@pytest.mark.parametrize(("up_for", "next_delay"), [
    (HEALTHY_RESET_SECONDS - 1, 4.0),  # not healthy long enough: the delay keeps growing
    (HEALTHY_RESET_SECONDS, FIRST_DELAY_SECONDS),  # healthy a while: it starts over
])
def test_a_child_that_stayed_up_a_while_restarts_after_the_shortest_delay_again(
    up_for: float, next_delay: float
) -> None:
    backoff = Backoff()
    now = 0.0
    for _ in range(3):  # three quick crashes: 0.5, 1, 2 s
        now = backoff.next_start if backoff.next_start is not None else now
        backoff.exited(now)
        now = backoff.next_start or now
        backoff.started(now)
    backoff.running(now + up_for)
    assert backoff.exited(now + up_for) == next_delay


def _nats_pid(up_pid: int) -> int | None:
    for pid in children_of(up_pid):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        if command.endswith(b"nats-server"):
            return pid
    return None


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


@pytest.mark.e2e
def test_a_killed_nats_server_is_restarted_and_the_services_are_ready_again(
    tmp_path: Path,
) -> None:
    data_dir, log_path = tmp_path / "stack", tmp_path / "up.log"
    proc = start_up(data_dir, log_path)
    try:
        wait_until(while_up(proc, lambda: (data_dir / "nats-url").exists()),
                   what="the stack to be ready", timeout=120, interval=0.2)
        url = (data_dir / "nats-url").read_text().strip()
        first = _nats_pid(proc.pid)
        assert first is not None
        os.kill(first, signal.SIGKILL)
        restarted = wait_until(
            while_up(proc, lambda: (pid := _nats_pid(proc.pid)) not in (None, first) and pid),
            what="a new nats-server", timeout=60, interval=0.2,
        )
        assert restarted != first
        assert "nats-server exited" in log_path.read_text()
        # said once the new server answers, which may come after its process is seen
        announced = f"nats-server restarted on {url}"
        wait_until(while_up(proc, lambda: announced in log_path.read_text()),
                   what="the restart announced", timeout=60, interval=0.2)
        health = sorted(set(_health_ports(log_path)))
        assert health, "the services' health ports are in the log"
        wait_until(while_up(proc, lambda: all(_ready(port) for port in health)),
                   what="every service ready again after the restart", timeout=90, interval=0.5)
        # The whole chain works through the new server: watcher, planner and actuator
        # annotate a Deployment created after the restart (the test feature's rule).
        kubeconfig = data_dir / "kubeconfig"
        applied = subprocess.run([str(KUBECTL), f"--kubeconfig={kubeconfig}", "apply", "-f", "-"],
                                 input=DEPLOYMENT, capture_output=True, text=True, timeout=60)
        assert applied.returncode == 0, applied.stderr

        def annotated() -> bool:
            shown = subprocess.run(
                [str(KUBECTL), f"--kubeconfig={kubeconfig}", "get", "deployment", "web",
                 "-o", "jsonpath={.metadata.annotations}"],
                capture_output=True, text=True, timeout=30)
            return ANNOTATION in shown.stdout

        wait_until(while_up(proc, annotated), what="the Deployment annotated through the bus",
                   timeout=90, interval=0.5)
    finally:
        tear_down(proc)


def _health_ports(log_path: Path) -> list[int]:
    return [int(part.split("http://127.0.0.1:")[1].split()[0].rstrip("/"))
            for part in log_path.read_text().splitlines() if "health http://127.0.0.1:" in part]
