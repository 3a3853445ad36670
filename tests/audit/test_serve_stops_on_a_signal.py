"""``spreadbus audit serve`` stopped by SIGINT or SIGTERM sent to it alone (not its process
group): it exits 0, and its Datasette child, the child's port and its temporary directory are
gone with it. SIGINT is sent to a command started with SIGINT ignored, as a shell starts a
background job, which must still stop on it."""

from __future__ import annotations

import errno
import os
import signal
import socket
from pathlib import Path

import pytest

from events.codec import encode
from spreadbus.audit.store import AuditStore
from tests.audit.history_messages import story
from tests.audit.served import start
from tests.fixtures.polling import wait_until


def children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in text.split()]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return False
            raise
    return True


def ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_to_the_command_stops_datasette_and_cleans_up(
    signum: signal.Signals, tmp_path: Path
) -> None:
    db = tmp_path / "audit.db"
    store = AuditStore(db)
    store.apply([(seq, "history.x", encode(e))  # type: ignore[arg-type]
                 for seq, e in enumerate(story(), start=1)])
    store.finish()
    store.close()
    served = start(db, tmp_path,
                   preexec_fn=ignore_sigint if signum == signal.SIGINT else None)
    child = 0
    try:
        [child] = children(served.process.pid)
        argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        scratch = Path(os.fsdecode(argv[argv.index(b"--metadata") + 1])).parent
        assert scratch.is_dir()
        assert not port_free(served.port)

        os.kill(served.process.pid, signum)
        assert served.process.wait(30) == 0, served.log.read_text()
        wait_until(lambda: not alive(child), what=f"Datasette ({child}) to end", timeout=15)
        assert port_free(served.port)
        assert not scratch.exists()
    finally:
        for pid in (served.process.pid, child):
            if pid and alive(pid):
                os.kill(pid, signal.SIGKILL)
        served.process.wait()
