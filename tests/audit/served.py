"""``spreadbus audit serve`` started as a user starts it, waited on until Datasette answers."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spreadbus.cli.local_stack import free_port
from tests.fixtures.polling import wait_until


@dataclass(frozen=True)
class Served:
    process: subprocess.Popen[bytes]
    base: str
    port: int
    log: Path


def answering(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/-/versions.json", timeout=1):
            return True
    except (urllib.error.URLError, ConnectionError):
        return False


def start(db: Path, scratch: Path, **popen: Any) -> Served:
    """The command on a free port, its output in ``scratch/serve.log``; returns once it answers."""
    port = free_port()
    log = scratch / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "spreadbus", "audit", "serve", "--db",
                                    str(db), "--port", str(port)], stdout=out, stderr=out,
                                   **popen)
    served = Served(process, f"http://127.0.0.1:{port}", port, log)
    try:
        wait_until(lambda: answering(served.base) or process.poll() is not None,
                   what="Datasette answering", timeout=60, interval=0.2)
    except BaseException:
        process.kill()
        process.wait(10)
        raise
    assert process.poll() is None, log.read_text()
    return served


@contextmanager
def serving(db: Path, scratch: Path) -> Iterator[Served]:
    served = start(db, scratch)
    try:
        yield served
    finally:
        served.process.terminate()
        served.process.wait(timeout=10)


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)
