"""The service commands: ``spreadbus <service>`` and ``python -m services.<service>``."""

from __future__ import annotations

import subprocess
import sys

import pytest

SERVICES = ["watcher", "planner", "actuator"]


@pytest.mark.parametrize("service", SERVICES)
def test_every_service_lists_its_flags_under_the_spreadbus_command(service: str) -> None:
    done = subprocess.run([sys.executable, "-m", "spreadbus", service, "--help"],
                          capture_output=True, text=True, timeout=60, check=True)
    for flag in ("--nats-url", "--nats-creds", "--nats-tls-ca", "--http-port", "--cluster",
                 "--kubeconfig", "SPREADBUS_NATS_URL"):
        assert flag in done.stdout


@pytest.mark.parametrize("service", SERVICES)
def test_bad_settings_exit_2_naming_every_bad_flag_and_variable(service: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", f"services.{service}", "--http-port", "eighty"],
        capture_output=True, text=True, timeout=60,
        env={"SPREADBUS_LOG_LEVEL": "INFO", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2
    assert "http_port (from --http-port)" in done.stderr
