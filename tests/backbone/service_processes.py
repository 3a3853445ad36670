"""Run the services as real processes for end-to-end and fault tests."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from spreadbus.runtime.parent_death import die_with_parent
from tests.fixtures.generation_feature import PLUGIN as GENERATION_PLUGIN
from tests.fixtures.polling import wait_until


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ServiceProcess:
    name: str
    args: list[str]
    log_dir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def start(self) -> ServiceProcess:
        self.starts += 1
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        # The child keeps its own descriptor of the log; ours is closed at once.
        with (self.log_dir / f"{self.name}.{self.starts}.log").open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", f"services.{self.name}", "--http-host", "127.0.0.1",
                 "--http-port", str(self.port), *self.args],
                stdout=log, stderr=subprocess.STDOUT, env=env, preexec_fn=die_with_parent(),
            )
        return self

    def kill(self) -> None:
        """SIGKILL: no clean-up of any kind, as a crash."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def terminate(self, timeout: float = 20.0) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def readyz(self) -> tuple[int, dict[str, object]]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=2) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")
        except (urllib.error.URLError, OSError, ValueError):
            return 0, {}

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=2) as r:
            return str(r.read().decode())

    def logs(self) -> str:
        return "\n".join(
            p.read_text(errors="replace")[-4000:]
            for p in sorted(self.log_dir.glob(f"{self.name}.*.log"))
        )

    def wait_ready(self, timeout: float = 60.0) -> None:
        def ready() -> tuple[int, dict[str, object]] | None:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(f"{self.name} exited:\n{self.logs()}")
            answer = self.readyz()
            return answer if answer[0] == 200 else None

        with logs_on_failure(self):
            wait_until(ready, what=f"{self.name} to be ready", timeout=timeout, interval=0.1)


@contextlib.contextmanager
def logs_on_failure(*services: ServiceProcess) -> Iterator[None]:
    """Print the services' logs when the block fails; pytest shows them with the failure."""
    try:
        yield
    except BaseException:
        for service in services:
            print(f"--- {service.name}:\n{service.logs()}")
        raise


@contextlib.contextmanager
def stack(nats_url: str, kubeconfig: Path, log_dir: Path, cluster: str = "e2e",
          resources: str = "apps/v1/deployments,v1/pods",
          plugins: str = GENERATION_PLUGIN) -> Iterator[dict[str, ServiceProcess]]:
    """Watcher, planner and actuator; by default with the test feature that annotates every
    Deployment with its generation, which makes the whole chain checkable from outside."""
    common = ["--nats-url", nats_url, "--cluster", cluster, "--kubeconfig", str(kubeconfig),
              "--feature-plugins", plugins]
    services = {
        "watcher": ServiceProcess("watcher", [*common, "--resources", resources], log_dir),
        "planner": ServiceProcess("planner", [*common, "--lease-ttl-seconds", "3",
                                              "--snapshot-every", "200"], log_dir),
        "actuator": ServiceProcess("actuator", [*common, "--kube-qps", "200",
                                                "--kube-burst", "200"], log_dir),
    }
    try:
        for service in services.values():
            service.start()
        yield services
    finally:
        for service in services.values():
            with contextlib.suppress(Exception):
                service.terminate(10)
            service.kill()
