"""Reading the bus in tests: what a stream holds now, and what passed through it.

``KUBE`` keeps only each subject's latest message, so reading it back by sequence after the
fact shows each object's last observation, not its history. A test that checks the history
(every observation the watcher published, the observation a plan names as its cause) records
it while it happens:

- :func:`tap`: a plain NATS subscription, for tests on an event loop; it sees every message
  published under a subject, in publish order, whether or not a stream kept it;
- :class:`KubeRecorder`: a :class:`StreamFollower` on ``KUBE`` from its start, in a thread of its
  own, for tests that drive processes synchronously; it keeps stream sequences, and survives a
  nats-server restart (what was replaced while it was away is missed, never invented).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any

import nats
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.errors import NotFoundError

from events import codec
from events.streams import KUBE
from spreadbus.runtime.follower import StreamFollower
from spreadbus.runtime.server_barrier import processed
from spreadbus.runtime.stream_setup import ensure_streams


async def read_stream(url: str, stream: str, **options: Any) -> list[tuple[int, Any]]:
    """(sequence, decoded message) of everything the stream holds now, oldest first.

    ``options`` are ``nats.connect``'s: a local stack's reader credentials
    (:meth:`~spreadbus.cli.local_stack.Stack.bus_options`); ``url`` may list a cluster's
    servers, comma-separated."""
    nc = await nats.connect(url.split(","), **options)
    try:
        js = nc.jetstream()
        info = await js.stream_info(stream)
        out = []
        for seq in range(info.state.first_seq or 1, info.state.last_seq + 1):
            try:
                msg = await js.get_msg(stream, seq)
            except NotFoundError:
                continue  # replaced by a newer message on its subject, or expired
            out.append((seq, codec.decode(msg.data or b"")))
        return out
    finally:
        await nc.close()


class Tap:
    """(subject, decoded message, headers) of every message seen, in the order seen."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, Any, dict[str, str]]] = []

    async def on_message(self, msg: Msg) -> None:
        self.messages.append((msg.subject, codec.decode(msg.data), dict(msg.headers or {})))


@contextlib.asynccontextmanager
async def tap(nc: Client, subject: str = "kube.>") -> AsyncIterator[Tap]:
    taken = Tap()
    sub = await nc.subscribe(subject, cb=taken.on_message)
    await processed(nc, timeout=10)  # subscribed on the server before anything else is published
    try:
        yield taken
    finally:
        await sub.unsubscribe()


class KubeRecorder:
    """Every ``KUBE`` message a live follower is given, by stream sequence.

    Start it before anything is published. The follower keeps up with the stream, so an
    observation is recorded before a newer observation of its object replaces it.
    """

    def __init__(self, url: str, **options: Any) -> None:
        self.url = url
        self.options = options
        self._messages: dict[int, Any] = {}
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._follower: StreamFollower | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True,
                                        name="kube-recorder")

    def __enter__(self) -> KubeRecorder:
        self._thread.start()
        if not self._ready.wait(30):
            raise AssertionError("the KUBE recorder did not start within 30 s")
        if self._error is not None:
            raise AssertionError(f"the KUBE recorder failed: {self._error!r}") from self._error
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._loop is not None and self._follower is not None:
            self._loop.call_soon_threadsafe(self._follower.stop)
        self._thread.join(30)

    async def _main(self) -> None:
        try:
            nc = await nats.connect(self.url, max_reconnect_attempts=-1, reconnect_time_wait=0.2,
                                    **self.options)
            try:
                if not self.options:  # a bare server; a stack's reader may not configure streams
                    await ensure_streams(nc.jetstream())
                self._loop = asyncio.get_running_loop()
                self._follower = StreamFollower(nc, stream=KUBE.name, sink=self._record,
                                                heartbeat_seconds=0.5)
                self._ready.set()
                await self._follower.run()
            finally:
                await nc.close()
        except BaseException as exc:  # reported to the test thread by __enter__
            self._error = exc
            self._ready.set()

    def _record(self, seq: int, subject: str, data: bytes) -> None:
        decoded = codec.decode(data)
        with self._lock:
            self._messages[seq] = decoded

    @property
    def last_seq(self) -> int:
        with self._lock:
            return max(self._messages, default=0)

    def messages(self) -> list[tuple[int, Any]]:
        with self._lock:
            return sorted(self._messages.items())


async def last_seq(url: str, stream: str, **options: Any) -> int:
    nc = await nats.connect(url, **options)
    try:
        return int((await nc.jetstream().stream_info(stream)).state.last_seq)
    finally:
        await nc.close()
