"""The HTTPS site serves, refuses and bounds handshakes alike on both of its TLS paths: the lean
one over asyncio's undocumented TLS protocol (on the Python versions it was checked on) and the
public one it falls back to elsewhere, forced here.

Only pytest, the standard library and ``tlsserving`` are used, so the module also runs on a
Python that has nothing else of the project installed (how the lean path is checked on each
version).
"""

from __future__ import annotations

import asyncio
import ssl
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.fixtures.polling import wait_until_async
from tlsserving import issue_client_cert, issue_server_cert, make_ca
from tlsserving.https_site import LEAN_TLS_CHECKED_ON, HttpsSite, lean_tls_checked

PATHS = [pytest.param(True, id="lean"), pytest.param(False, id="public")]


class Greeter(asyncio.Protocol):
    """Answers every chunk it reads with ``hello`` and what it read."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.transport.write(b"hello " + data)


class Tls:
    def __init__(self, directory: Path) -> None:
        self.ca = make_ca("site-test-ca")
        self.ca_file = self.ca.write(directory, "ca").cert
        server = issue_server_cert(self.ca, ["127.0.0.1"]).write(directory, "server")
        self.server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.server.load_cert_chain(server.cert, server.key)
        self.server.load_verify_locations(cafile=str(self.ca_file))
        self.server.verify_mode = ssl.CERT_REQUIRED
        self.client_paths = issue_client_cert(self.ca, "caller").write(directory, "client")

    def client(self, *, with_certificate: bool = True) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        if with_certificate:
            context.load_cert_chain(self.client_paths.cert, self.client_paths.key)
        return context


@pytest.fixture
def tls(tmp_path: Path) -> Tls:
    return Tls(tmp_path)


@asynccontextmanager
async def serving(tls: Tls, lean: bool, handshake_timeout: float = 600.0
                  ) -> AsyncIterator[HttpsSite]:
    site = HttpsSite(Greeter, "127.0.0.1", 0, ssl_context=tls.server,
                     handshake_timeout=handshake_timeout, lean_tls=lean)
    await site.start()
    try:
        yield site
    finally:
        await site.stop()


async def greeted(site: HttpsSite, client: ssl.SSLContext) -> bytes:
    """What the site answers ``there`` with. Under TLS 1.3 a refused certificate shows only
    once the client reads, after its side of the handshake."""
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", site.port, ssl=client, server_hostname="127.0.0.1")
    try:
        writer.write(b"there")
        return await asyncio.wait_for(reader.readexactly(11), 30)
    finally:
        writer.close()


async def closed_by_the_server(reader: asyncio.StreamReader) -> bool:
    try:
        return await reader.read(1) == b""
    except ConnectionResetError:
        return True


def test_the_lean_path_is_taken_only_on_the_versions_it_was_checked_on() -> None:
    assert lean_tls_checked((3, 11))
    assert not lean_tls_checked((3, 10))
    assert not lean_tls_checked((3, 99))
    here = tuple(sys.version_info[:2]) in LEAN_TLS_CHECKED_ON
    assert HttpsSite(Greeter, "127.0.0.1", 0, ssl_context=ssl.create_default_context(
        ssl.Purpose.CLIENT_AUTH)).lean_tls is here


@pytest.mark.parametrize("lean", PATHS)
async def test_a_caller_with_a_certificate_is_served(tls: Tls, lean: bool) -> None:
    async with serving(tls, lean) as site:
        assert await greeted(site, tls.client()) == b"hello there"
        assert site.failed_handshakes == 0


@pytest.mark.parametrize("lean", PATHS)
async def test_a_caller_without_a_certificate_is_refused_and_counted(
        tls: Tls, lean: bool) -> None:
    async with serving(tls, lean) as site:
        with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError)):
            await greeted(site, tls.client(with_certificate=False))
        await wait_until_async(lambda: site.failed_handshakes == 1, what="the refusal counted")
        await wait_until_async(lambda: site.handshaking == 0, what="the handshake to end")


@pytest.mark.parametrize("lean", PATHS)
async def test_a_handshake_stalled_midway_is_closed_by_its_timeout(
        tls: Tls, lean: bool) -> None:
    async with serving(tls, lean, handshake_timeout=0.3) as site:
        reader, writer = await asyncio.open_connection("127.0.0.1", site.port)
        writer.write(b"\x16\x03\x01")  # the first bytes of a ClientHello, then nothing
        assert await asyncio.wait_for(closed_by_the_server(reader), 30)
        await wait_until_async(lambda: site.failed_handshakes == 1, what="the timeout counted")
        await wait_until_async(lambda: site.handshaking == 0, what="the handshake to end")
        writer.close()


@pytest.mark.parametrize("lean", PATHS)
async def test_stopping_aborts_a_handshake_in_progress(tls: Tls, lean: bool) -> None:
    site = HttpsSite(Greeter, "127.0.0.1", 0, ssl_context=tls.server,
                     handshake_timeout=600.0, lean_tls=lean)
    await site.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", site.port)
    writer.write(b"\x16\x03\x01")
    await wait_until_async(lambda: site.handshaking == 1, what="the handshake to start")
    await asyncio.wait_for(site.stop(), 30)
    assert await asyncio.wait_for(closed_by_the_server(reader), 30)
    assert site.handshaking == 0
    writer.close()
