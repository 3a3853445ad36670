"""``spreadbus webhook`` refuses to start without what it needs, naming it."""

from __future__ import annotations

import os
import subprocess
import sys


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "services.webhook", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_without_a_certificate_the_webhook_exits_2_naming_the_flags() -> None:
    result = run("--nats-url=nats://127.0.0.1:1")
    assert result.returncode == 2
    assert "--tls-cert" in result.stderr


def test_a_bad_number_in_the_environment_is_reported_with_its_variable() -> None:
    result = run(env={"SPREADBUS_PORT": "https"})
    assert result.returncode == 2
    assert "SPREADBUS_PORT" in result.stderr


def refused_whitelist(value: str) -> str:
    """Start the webhook with ``value`` as its whitelist; what it says as it refuses to start."""
    result = run(
        "--tls-cert=/nonexistent.crt",
        "--tls-key=/nonexistent.key",
        env={"SPREADBUS_WORKLOAD_WHITELIST": value},
    )
    assert result.returncode == 2
    assert "SPREADBUS_WORKLOAD_WHITELIST" in result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr


def test_a_whitelist_that_is_not_json_is_reported_with_its_setting() -> None:
    refused_whitelist("{workloads")


def test_a_whitelist_of_the_wrong_shape_is_refused_at_start_naming_the_field() -> None:
    stderr = refused_whitelist('{"workloads": [{"Group": "g", "Kind": "K"}, "Y"]}')
    assert "workloads[1]: expected object, got string" in stderr


def test_a_client_ca_that_is_not_a_file_is_refused_at_start_naming_the_flag() -> None:
    result = run("--tls-cert=/nonexistent.crt", "--tls-key=/nonexistent.key",
                 env={"SPREADBUS_CLIENT_CA": "/nonexistent/ca.crt"})
    assert result.returncode == 2
    assert "--client-ca: no such file /nonexistent/ca.crt" in result.stderr
