"""Files that hold a secret (a private key, a bearer token): readable by their owner alone,
from the moment they exist.

A secret is written to a new file beside its target, created with mode 0600 by
:func:`tempfile.mkstemp` (``O_CREAT | O_EXCL``, so no umask or earlier file can widen it), and
then renamed over the target: there is no moment at which the bytes sit in a file others may
read, a reader sees the old file or the whole new one, and a target that was readable by others
is replaced rather than rewritten in place (which would keep its mode).

Shared by kubesim (its kubeconfig, its state file) and spreadbus (the local stack's keys and
kubeconfig), hence here, beside the certificates whose keys it writes.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_secret(path: Path, data: bytes) -> None:
    """``data`` as ``path``, mode 0600, replaced whole."""
    descriptor, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
