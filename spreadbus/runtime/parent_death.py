"""Children that die with the process that started them, however that process ends.

A supervisor (``spreadbus up``, a test run) stops its children on every orderly exit path, but
SIGKILL, an interpreter crash or a debugger detaching skip all of them, and the children then
live on under PID 1 holding ports and stores. Linux's parent-death signal closes that gap: the
child asks the kernel (``prctl(PR_SET_PDEATHSIG)``) to be sent SIGTERM when its parent goes,
between ``fork`` and ``exec`` so it covers binaries we do not control (nats-server) too.
SIGTERM rather than SIGKILL so services and kubesim still stop cleanly (kubesim saves its
``--state``).

The signal fires when the *thread* that forked the child exits, not the process, so it is only
armed for children started from the main thread; a child started from a worker thread keeps
the ordinary behaviour. On systems without ``prctl`` nothing is armed.

Signature::

    die_with_parent() -> Callable[[], None] | None   # pass as subprocess.Popen(preexec_fn=...)
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Final

PR_SET_PDEATHSIG: Final = 1


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` arming SIGTERM on parent death, or None where it cannot work."""
    if not sys.platform.startswith("linux"):
        return None
    if threading.current_thread() is not threading.main_thread():
        return None
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return None
    prctl = ctypes.CDLL(libc_name, use_errno=True).prctl
    parent = os.getpid()

    def arm() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        # The parent may have died between fork and prctl: then no signal would ever come.
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)

    return arm
