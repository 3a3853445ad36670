"""Running kubesim: :class:`KubeSim` on the caller's event loop, :class:`KubeSimThread` on its own.

``KubeSim`` owns the aiohttp site, the TLS material (a fresh CA per instance, written to a
temporary directory so clients can trust it by file), the bearer token and the simulated
behaviours. Tests that use synchronous clients (the official client, kubectl subprocesses)
run it in a :class:`KubeSimThread`, whose ``call`` runs a coroutine on kubesim's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
import socket
import ssl
import tempfile
import threading
from collections.abc import Coroutine, Sequence
from concurrent.futures import Future
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import yaml
from aiohttp import web

from kubesim import state
from kubesim.apiserver import ApiServer, Clock
from kubesim.http import HttpApi
from kubesim.interface import Behaviour, Cluster
from kubesim.kinds import DEFAULT_TOLERATION_SECONDS
from kubesim.webhook_client import ClientCertificate
from tlsserving import issue_server_cert, make_ca, write_secret
from tlsserving.https_site import HANDSHAKE_TIMEOUT_SECONDS, HttpsSite

T = TypeVar("T")


class KubeSim:
    """A Kubernetes API simulator serving HTTP(S) on ``host:port`` (port 0 picks a free one)."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: bool = True,
        token: str | None = None,
        state_file: str | Path | None = None,
        watch_history: int = 10_000,
        bookmark_interval: float = 60.0,
        behaviours: Sequence[Behaviour] = (),
        clock: Clock | None = None,
        max_watch_queue: int = 10_000,
        require_token: bool = True,
        default_toleration_seconds: float = DEFAULT_TOLERATION_SECONDS,
        tls_handshake_timeout: float = HANDSHAKE_TIMEOUT_SECONDS,
        webhook_client_certificate: ClientCertificate | None = None,
        webhook_client_certificate_for_conversions: bool = False,
    ) -> None:
        self.host = host
        self.tls_handshake_timeout = tls_handshake_timeout
        self.port = port
        self.tls = tls
        self.token: str | None = token or (secrets.token_urlsafe(24) if require_token else None)
        self.state_file = Path(state_file) if state_file else None
        self.behaviours = list(behaviours)
        self.api = ApiServer(
            watch_history=watch_history,
            clock=clock,
            max_watch_queue=max_watch_queue,
            default_toleration_seconds=default_toleration_seconds,
        )
        self.api.admission.client_certificate = webhook_client_certificate
        self.api.admission.certificate_for_conversions = webhook_client_certificate_for_conversions
        self.http = HttpApi(self.api, token=self.token, bookmark_interval=bookmark_interval)
        self.ca_file: str | None = None
        self.url = ""
        self._dir: Path | None = None
        self._runner: web.AppRunner | None = None
        self._https: HttpsSite | None = None
        self._save_task: asyncio.Task[None] | None = None

    @property
    def cluster(self) -> Cluster:
        return self.api

    async def start(self) -> None:
        if self.state_file is not None:
            state.load(self.api, self.state_file)
        await self.api.start()
        ssl_ctx: ssl.SSLContext | None = None
        self._dir = Path(tempfile.mkdtemp(prefix="kubesim-"))
        if self.tls:
            ca = make_ca("kubesim-ca")
            hosts = list(dict.fromkeys([self.host, "127.0.0.1", "localhost", "::1"]))
            server_cert = issue_server_cert(ca, [h for h in hosts if h not in ("0.0.0.0", "::")])
            self.ca_file = str(ca.write(self._dir, "ca").cert)
            paths = server_cert.write(self._dir, "server")
            ssl_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ssl_ctx.load_cert_chain(paths.cert, paths.key)
        self._runner = web.AppRunner(
            self.http.app(), access_log=None, handle_signals=False, shutdown_timeout=1.0
        )
        await self._runner.setup()
        if ssl_ctx is not None:
            # A TLS handshake in progress when kubesim stops is aborted, not left to outlive it.
            assert self._runner.server is not None
            self._https = HttpsSite(self._runner.server, self.host, self.port,
                                    ssl_context=ssl_ctx, backlog=1024,
                                    handshake_timeout=self.tls_handshake_timeout)
            await self._https.start()
            self.port = self._https.port
        else:
            sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            self.port = sock.getsockname()[1]
            await web.SockSite(self._runner, sock, backlog=1024).start()
        scheme = "https" if self.tls else "http"
        shown = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        shown = f"[{shown}]" if ":" in shown else shown
        self.url = f"{scheme}://{shown}:{self.port}"
        self.http.server_address = f"{shown}:{self.port}"
        if self.state_file is not None:
            self._save_task = asyncio.create_task(self._autosave())
        for b in self.behaviours:
            await b.start(self.api)

    async def _autosave(self) -> None:
        assert self.state_file is not None
        saved = self.api.store.rv
        while True:
            await asyncio.sleep(2.0)
            if self.api.store.rv != saved:
                saved = self.api.store.rv
                state.save(self.api, self.state_file)

    async def stop(self) -> None:
        for b in reversed(self.behaviours):
            with contextlib.suppress(Exception):
                await b.stop()
        if self._save_task is not None:
            self._save_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._save_task
        await self.http.close_streams()
        if self._https is not None:
            await self._https.stop()
            self._https = None
        if self._runner is not None:
            # the graceful shutdown closes each connection, but a TLS one first waits for the
            # client's close_notify, which may never come before the loop stops: abort whatever
            # is still open so no socket outlives the server
            server = self._runner.server
            transports = [
                h.transport for h in (server.connections if server else ()) if h.transport
            ]
            await self._runner.cleanup()
            self._runner = None
            for transport in transports:
                transport.abort()
            for _ in range(3):  # let the aborted transports' connection_lost run
                await asyncio.sleep(0)
        await self.api.stop()
        if self.state_file is not None:
            state.save(self.api, self.state_file)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def kubeconfig(self) -> dict[str, Any]:
        cluster: dict[str, Any] = {"server": self.url}
        if self.ca_file:
            cluster["certificate-authority-data"] = _b64(Path(self.ca_file).read_bytes())
        user: dict[str, Any] = {"token": self.token} if self.token else {}
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "kubesim", "cluster": cluster}],
            "users": [{"name": "kubesim", "user": user}],
            "contexts": [
                {
                    "name": "kubesim",
                    "context": {"cluster": "kubesim", "user": "kubesim", "namespace": "default"},
                }
            ],
            "current-context": "kubesim",
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | Path) -> Path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        # it holds the bearer token
        write_secret(p, yaml.safe_dump(self.kubeconfig(), sort_keys=False).encode())
        return p

    def kube_configuration(self) -> Any:
        """A ``kubernetes.client.Configuration`` for this server (CA-verified, with the token)."""
        from kubernetes import client

        cfg = client.Configuration()
        cfg.host = self.url
        if self.ca_file:
            cfg.ssl_ca_cert = self.ca_file
            cfg.verify_ssl = True
        if self.token:
            cfg.api_key = {"authorization": self.token}
            cfg.api_key_prefix = {"authorization": "Bearer"}
        return cfg


def _b64(raw: bytes) -> str:
    import base64

    return base64.b64encode(raw).decode()


class KubeSimThread:
    """:class:`KubeSim` on a private event loop in a daemon thread, for synchronous callers."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="kubesim", daemon=True)
        self.sim: KubeSim | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def start(self) -> KubeSimThread:
        self._thread.start()

        async def boot() -> KubeSim:
            sim = KubeSim(**self._kwargs)
            await sim.start()
            return sim

        self.sim = self.call(boot())
        return self

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = 60.0) -> T:
        """Run ``coro`` on kubesim's loop and wait for its result."""
        fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return fut.result(timeout)

    def stop(self) -> None:
        if self.sim is not None:
            self.call(self.sim.stop())
            self.sim = None
        if self._thread.is_alive():

            async def drain() -> None:
                tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

            with contextlib.suppress(Exception):
                self.call(drain(), timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        if not self._loop.is_running() and not self._loop.is_closed():
            self._loop.close()

    def __enter__(self) -> KubeSimThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _sim(self) -> KubeSim:
        if self.sim is None:
            raise RuntimeError("kubesim is not running")
        return self.sim

    @property
    def url(self) -> str:
        return self._sim().url

    @property
    def ca_file(self) -> str | None:
        return self._sim().ca_file

    @property
    def token(self) -> str | None:
        return self._sim().token

    @property
    def cluster(self) -> Cluster:
        return self._sim().cluster

    @property
    def api(self) -> ApiServer:
        return self._sim().api

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def write_kubeconfig(self, path: str | Path) -> Path:
        return self._sim().write_kubeconfig(path)

    def kube_configuration(self) -> Any:
        return self._sim().kube_configuration()

    def now(self) -> datetime:
        return self._sim().api.clock()
