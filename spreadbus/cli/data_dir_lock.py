"""The data directory's lock: one local stack per directory at a time.

Two stacks on one directory would share the NATS store, and the one that stops first would
delete the other's ``kubeconfig`` and ``nats-url``, leaving it running but unreachable. The
stack holds ``DIR/lock`` with ``flock`` for as long as it runs, and writes its pid there so a
second one can say who holds it. The kernel drops the lock when its holder exits, however it
exits (SIGKILL included), so a file left behind never blocks the next stack.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Final

from spreadbus.cli.stack_errors import StackError

LOCK_FILE: Final = "lock"


class DataDirInUse(StackError):
    """Another process holds the data directory's lock."""

    def __init__(self, data_dir: Path, holder: int | None) -> None:
        self.data_dir, self.holder = data_dir, holder
        who = "another process" if holder is None else f"process {holder}"
        command = _command_of(holder)
        if command:
            who += f" ({command})"
        super().__init__(
            f"{data_dir} is in use by {who}, which holds {data_dir / LOCK_FILE}: stop that "
            "stack first, or give this one another --data-dir"
        )


def _command_of(pid: int | None) -> str:
    """The holder's command line, when this system shows it (Linux ``/proc``)."""
    if pid is None:
        return ""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part)


def _holder(fd: int) -> int | None:
    """The pid the holder wrote; ``None`` while it has not written it yet."""
    text = os.pread(fd, 64, 0).decode(errors="replace").strip()
    return int(text) if text.isdigit() else None


class DataDirLock:
    """The lock on one data directory, held by this process between :meth:`acquire` and
    :meth:`release`. The file descriptor is not inherited, so the stack's children never
    hold it."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock (a no-op when held already) or raise :class:`DataDirInUse`."""
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise DataDirInUse(self.path.parent, holder) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Let go of the lock; safe when it is not held. The file stays: removing it could
        let two processes lock two different files of the same name."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
