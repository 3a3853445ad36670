"""The serving certificate, read from files and reloaded when the files change.

Certificates are rotated by replacing files (a Kubernetes Secret volume swaps a symlink; a
local CA rewrites them). One ``ssl.SSLContext`` serves every connection; reloading calls
``load_cert_chain`` on that same context, so new handshakes use the new certificate while open
keep-alive connections carry on undisturbed. A half-written pair (the key no longer matches the
certificate) is rejected by ``load_cert_chain``; the old pair stays in use and the next change
is tried again, so a rotation can never take the webhook down.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from pathlib import Path

log = logging.getLogger(__name__)

Fingerprint = tuple[tuple[int, int, int], ...]


class CertificateFiles:
    """A server ``SSLContext`` bound to a certificate and key file pair."""

    def __init__(self, cert_file: Path, key_file: Path) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self.context.set_alpn_protocols(["http/1.1"])
        self.loads = 0
        self._seen: Fingerprint | None = None
        self.reload()

    def _fingerprint(self) -> Fingerprint:
        # st_ino catches an atomic rename; mtime_ns and size catch an in-place rewrite.
        stats = [os.stat(p) for p in (self.cert_file, self.key_file)]
        return tuple((s.st_ino, s.st_mtime_ns, s.st_size) for s in stats)

    def reload(self) -> None:
        """Load the pair now; raises if it cannot be read (used at start-up)."""
        seen = self._fingerprint()
        self.context.load_cert_chain(self.cert_file, self.key_file)
        self._seen = seen
        self.loads += 1

    def reload_if_changed(self) -> bool:
        """Load the pair when the files changed since the last load; never raises."""
        try:
            current = self._fingerprint()
        except OSError as exc:
            log.warning("certificate files unreadable, keeping the loaded pair: %s", exc)
            return False
        if current == self._seen:
            return False
        try:
            self.context.load_cert_chain(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as exc:
            log.warning("new certificate not loaded, keeping the previous one: %s", exc)
            return False
        self._seen = current
        self.loads += 1
        log.info("certificate reloaded from %s", self.cert_file)
        return True

    async def watch(self, interval: float) -> None:
        """Poll the files until cancelled; polling works on every filesystem and volume."""
        while True:
            await asyncio.sleep(interval)
            self.reload_if_changed()
