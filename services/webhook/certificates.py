"""The serving certificate, read from files and reloaded when the files change.

Certificates are rotated by replacing files (a Kubernetes Secret volume swaps a symlink; a
local CA rewrites them), and the two files never change at the same instant: for a moment the
new certificate sits beside the old key. ``load_cert_chain`` refuses such a pair, but only after
it has installed the certificate, leaving the context it was called on with a certificate and a
key that do not match, so every later handshake on it fails.

Hence a new pair is always loaded into a fresh scratch ``SSLContext``; only when that load
succeeds does the scratch context become the current one. The listening context (the one the
server was started with) hands every new handshake the current context from its SNI callback,
which OpenSSL runs for every ClientHello, with or without a server name. A refused pair changes
nothing: the old pair keeps serving and the next change is tried again, so a rotation can never
take the webhook down. Open keep-alive connections carry on with the pair they started with.

With a client CA (``--client-ca``), every context requires a client certificate and verifies it
against that bundle, so a caller the CA did not certify is refused in the handshake, before a
byte of its request is read: only the API server (which presents its client certificate, see
deploy/README.md) can spend reservations. The bundle is reloaded with the pair, the same way,
when its file changes. Without one, any caller that reaches the port is served: fit for a
local cluster, unsafe in production.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from pathlib import Path

log = logging.getLogger(__name__)

Fingerprint = tuple[tuple[int, int, int], ...]


def _server_context() -> ssl.SSLContext:
    # Not create_default_context: it would add the system's CAs to those a client certificate
    # may chain to, and any certificate a public CA issued would pass.
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    return context


class CertificateFiles:
    """A server ``SSLContext`` bound to a certificate and key file pair, and to the bundle of CAs
    a client certificate must chain to when ``client_ca`` is given."""

    def __init__(self, cert_file: Path, key_file: Path, client_ca: Path | None = None) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self.client_ca = client_ca
        self.loads = 0
        self._seen: Fingerprint | None = self._fingerprint()
        self.current = self._load()
        """The context holding the newest pair that loaded; new handshakes switch to it."""
        self.context = self.current
        """The context to listen with: it starts with the first pair and redirects to
        :attr:`current` on every handshake."""
        self.context.sni_callback = self._select

    def _fingerprint(self) -> Fingerprint:
        # st_ino catches an atomic rename; mtime_ns and size catch an in-place rewrite.
        stats = [os.stat(p) for p in self._files()]
        return tuple((s.st_ino, s.st_mtime_ns, s.st_size) for s in stats)

    def _files(self) -> list[Path]:
        files = [self.cert_file, self.key_file]
        return files if self.client_ca is None else [*files, self.client_ca]

    def _load(self) -> ssl.SSLContext:
        """A scratch context with the files on disk; raises if the pair does not load or the
        client CA bundle holds no certificate."""
        scratch = _server_context()
        scratch.load_cert_chain(self.cert_file, self.key_file)
        if self.client_ca is not None:
            scratch.load_verify_locations(cafile=self.client_ca)
            if not scratch.get_ca_certs():
                raise ssl.SSLError(f"no CA certificate in {self.client_ca}")
            scratch.verify_mode = ssl.CERT_REQUIRED
        self.loads += 1
        return scratch

    def _select(
        self, connection: ssl.SSLSocket | ssl.SSLObject, server_name: str | None, _: ssl.SSLContext
    ) -> None:
        if connection.context is not self.current:
            connection.context = self.current

    def reload(self) -> None:
        """Load the pair now; raises if it cannot be read or does not match."""
        seen = self._fingerprint()
        self.current = self._load()
        self._seen = seen

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
            self.reload()
        except (OSError, ssl.SSLError) as exc:
            log.warning("new certificate not loaded, keeping the previous one: %s", exc)
            return False
        log.info("certificate reloaded from %s", self.cert_file)
        return True

    async def watch(self, interval: float) -> None:
        """Poll the files until cancelled; polling works on every filesystem and volume."""
        while True:
            await asyncio.sleep(interval)
            self.reload_if_changed()
