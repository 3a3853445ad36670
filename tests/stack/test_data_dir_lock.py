"""One stack per data directory: a second ``spreadbus up`` on a directory in use names the process
holding it, exits 2 and leaves the first stack's files alone; a holder that dies frees it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from spreadbus.cli.data_dir_lock import DataDirInUse, DataDirLock
from spreadbus.runtime.parent_death import die_with_parent

ROOT = Path(__file__).resolve().parents[2]

HOLD = (
    "import sys\n"
    "from pathlib import Path\n"
    "from spreadbus.cli.data_dir_lock import DataDirLock\n"
    "DataDirLock(Path(sys.argv[1])).acquire()\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """Another process holding ``tmp_path/stack``'s lock until its stdin closes."""
    data_dir = tmp_path / "stack"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(data_dir)], cwd=ROOT, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, preexec_fn=die_with_parent(),
    )
    with proc:
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline() == "held\n"
            yield proc, data_dir
        finally:
            if proc.poll() is None:
                proc.kill()


def test_a_second_lock_names_the_holder_and_is_free_once_released(tmp_path: Path) -> None:
    first, second = DataDirLock(tmp_path), DataDirLock(tmp_path)
    first.acquire()
    with pytest.raises(DataDirInUse) as refused:
        second.acquire()
    assert refused.value.holder == os.getpid()
    assert f"process {os.getpid()}" in str(refused.value)
    assert str(tmp_path / "lock") in str(refused.value)
    assert not second.held
    first.release()
    second.acquire()
    assert second.held
    assert (tmp_path / "lock").read_text() == f"{os.getpid()}\n"
    second.release()


def test_a_killed_holder_leaves_the_directory_free(
    holder: tuple[subprocess.Popen[str], Path],
) -> None:
    proc, data_dir = holder
    with pytest.raises(DataDirInUse):
        DataDirLock(data_dir).acquire()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert (data_dir / "lock").read_text() == f"{proc.pid}\n", "the file stays behind"
    lock = DataDirLock(data_dir)
    lock.acquire()
    lock.release()


def test_up_on_a_directory_in_use_exits_2_naming_the_holder_and_touches_nothing(
    holder: tuple[subprocess.Popen[str], Path],
) -> None:
    proc, data_dir = holder
    (data_dir / "kubeconfig").write_text("the first stack's\n")
    (data_dir / "nats-url").write_text("tls://127.0.0.1:4222\n")
    before = sorted(p.name for p in data_dir.iterdir())
    done = subprocess.run(
        [sys.executable, "-m", "spreadbus", "up", "--data-dir", str(data_dir)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
        preexec_fn=die_with_parent(),
    )
    assert done.returncode == 2, done.stderr
    assert f"is in use by process {proc.pid}" in done.stderr
    assert str(data_dir / "lock") in done.stderr
    assert "starting" not in done.stderr
    assert sorted(p.name for p in data_dir.iterdir()) == before
    assert (data_dir / "kubeconfig").read_text() == "the first stack's\n"
    assert (data_dir / "nats-url").read_text() == "tls://127.0.0.1:4222\n"
