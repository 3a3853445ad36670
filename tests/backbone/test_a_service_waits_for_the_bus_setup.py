"""A service started before ``spreadbus bus-setup`` stays unready, says what is missing and which
command creates it, and becomes ready once the setup step has run; on the secured bus, with
each side's own credential (the service cannot create what it lacks)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from events import streams
from spreadbus.runtime.bus_users import seed_file
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.parent_death import die_with_parent
from tests.backbone.service_processes import free_port
from tests.fixtures.polling import wait_until


def readyz(port: int) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")
    except (urllib.error.URLError, OSError, ValueError):
        return 0, {}


def log_lines(path: Path) -> list[dict[str, object]]:
    found = []
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if isinstance(record, dict):
                found.append(record)
    return found


@pytest.mark.e2e
def test_a_service_started_before_the_setup_waits_unready_then_serves(
    unset_secured_bus: tuple[NatsServer, Path], tmp_path: Path,
) -> None:
    server, credentials = unset_secured_bus
    port = free_port()
    log = tmp_path / "audit.log"
    common = ["--nats-url", server.url]
    with log.open("wb") as out:
        audit = subprocess.Popen(
            [sys.executable, "-m", "spreadbus", "audit", "follow", *common,
             "--nats-nkey-seed", str(seed_file(credentials, "audit")),
             "--db", str(tmp_path / "audit.db"), "--http-host", "127.0.0.1",
             "--http-port", str(port)],
            stdout=out, stderr=subprocess.STDOUT, preexec_fn=die_with_parent())
    try:
        def waiting() -> dict[str, object] | None:
            assert audit.poll() is None, log.read_text()
            status, body = readyz(port)
            notes = body.get("notes")
            return body if status == 503 and isinstance(notes, dict) and "bus" in notes \
                else None

        body = wait_until(waiting, what="the service to say the bus is not set up", timeout=30)
        note = body["notes"]
        assert isinstance(note, dict)
        missing = [f"stream {s.name}" for s in streams.ALL]
        assert all(name in note["bus"] for name in missing), note
        assert "spreadbus bus-setup" in note["bus"]
        conditions = body["conditions"]
        assert isinstance(conditions, dict)
        assert conditions["bus"] is False
        said = [r for r in log_lines(log) if r.get("level") == "WARNING"
                and "spreadbus bus-setup" in str(r.get("msg"))]
        assert said
        assert all(name in str(said[0]["msg"]) for name in missing), said
        # The service's own credential may not create what it lacks.
        assert "Violation" not in server.log.decode()

        setup = subprocess.run(
            [sys.executable, "-m", "spreadbus", "bus-setup", *common,
             "--nats-nkey-seed", str(seed_file(credentials, "setup"))],
            capture_output=True, text=True, timeout=60, check=False)
        assert setup.returncode == 0, setup.stderr
        assert "stream HISTORY created" in setup.stdout
        assert "bucket spreadbus-leases created" in setup.stdout

        wait_until(lambda: readyz(port)[0] == 200, what="the service ready after the setup",
                   timeout=30)
        assert readyz(port)[1]["notes"] == {}
        audit.terminate()
        assert audit.wait(20) == 0
    finally:
        if audit.poll() is None:
            audit.kill()
            audit.wait()
