"""A NATS client whose chosen subscriptions hand each message's raw parts to a plain function.

nats-py delivers every message the same way: it parses the headers into a dict, builds a
``Msg``, puts it on the subscription's queue, and a task per subscription takes it off and
awaits the callback. For the stream followers, which receive every observation of the cluster
and read nothing of a data message but its subject, reply subject and payload, that path cost
about as much as folding the message (measured in a 1,000-pod rollout: 7-10% of the webhook's
and the planner's CPU went away without it). :meth:`RawDeliveryClient.subscribe_raw` skips
it: the read loop calls ``handler(subject, reply, data, headers)`` synchronously, with the
parts as they came off the wire (``headers`` is the raw header block, or empty).

The hooks are nats-py's ``Client._process_msg(sid, subject, reply, data, headers)``, which its
protocol parser calls for every message, and ``Client._remove_sub(sid)``, which unsubscribing
calls; they are not public API, so the version is pinned
(``constraints.txt``) and ``tests/backbone/test_raw_delivery.py`` fails if they stop being
called. Every other subscription, request and publish is nats-py's own.

Each raw subscription is also an ordinary one whose callback hands the parts to the handler, so
a nats-py that no longer calls the hook (renamed, or gone) still delivers every message, through
its public subscription API: slower, from the subscription's task rather than the read loop,
and once logged as a warning. The header block is then rebuilt from nats-py's parsed headers:
the status line and every header, in their order.

A handler must not block or raise: it runs inside the client's read loop. One that raises
anyway has the exception logged and handed to the client's error callback, and the loop goes on
with the next message.

Signatures::

    RawHandler = Callable[[bytes, bytes, bytes, bytes], None]   # subject, reply, data, headers
    RawDeliveryClient()                                          # then await .connect(...)
        async .subscribe_raw(subject: str, handler: RawHandler) -> Subscription
    status_of(headers: bytes) -> tuple[str, str]   # ("404", "No Messages"); ("", "") for none
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

log = logging.getLogger(__name__)

RawHandler = Callable[[bytes, bytes, bytes, bytes], None]
_VERSION_LINE: Final = b"NATS/1.0"
_STATUS: Final = "Status"
_DESCRIPTION: Final = "Description"
"""Where nats-py's parsed headers keep an inline status line's code and description."""


class RawDeliveryClient(Client):
    def __init__(self) -> None:
        super().__init__()
        self._raw: dict[int, RawHandler] = {}
        self.hook_missed = False
        """Whether a raw message came through the public subscription API instead of the hook."""

    async def subscribe_raw(self, subject: str, handler: RawHandler) -> Subscription:
        """Subscribe ``subject`` with ``handler`` called for each message, in the read loop;
        unsubscribing the returned subscription ends it."""

        async def public(msg: Msg) -> None:
            if not self.hook_missed:
                self.hook_missed = True
                log.warning("nats-py did not call the raw delivery hook: messages come through "
                            "its public subscription API", extra={"subject": subject})
            try:
                handler(msg.subject.encode(), msg.reply.encode(), msg.data,
                        header_block(msg.headers))
            except Exception as exc:
                log.exception("raw subscription handler failed", extra={"sid": msg.sid})
                await self._error_cb(exc)

        sub = await self.subscribe(subject, cb=public)
        self._raw[sub._id] = handler
        return sub

    def _remove_sub(self, sid: int, max_msgs: int = 0) -> None:
        self._raw.pop(sid, None)
        super()._remove_sub(sid, max_msgs)

    async def _process_msg(
        self, sid: int, subject: bytes, reply: bytes, data: bytes, headers: bytes
    ) -> None:
        handler = self._raw.get(sid)
        if handler is None:
            await super()._process_msg(sid, subject, reply, data, headers)
            return
        self.stats["in_msgs"] += 1
        self.stats["in_bytes"] += len(data)
        try:
            handler(subject, reply, data, headers or b"")
        except Exception as exc:
            log.exception("raw subscription handler failed", extra={"sid": sid})
            await self._error_cb(exc)


def header_block(headers: dict[str, str] | None) -> bytes:
    """nats-py's parsed headers as the block they came in: the version and status line, then
    each header (a header named ``Status`` or ``Description`` reads as the status line's)."""
    if not headers:
        return b""
    rest = dict(headers)
    status, description = rest.pop(_STATUS, ""), rest.pop(_DESCRIPTION, "")
    misread = ""
    if description.startswith("\n"):
        # nats-py 2.16 reads the header lines after a bare status (``NATS/1.0 503``) as its
        # description: they are headers.
        description, misread = "", description.strip()
    line = " ".join(part for part in (status, description) if part)
    lines = [_VERSION_LINE + (b" " + line.encode() if line else b"")]
    lines += [misread.encode()] if misread else []
    lines += [f"{key}: {value}".encode() for key, value in rest.items()]
    return b"\r\n".join(lines) + b"\r\n\r\n"


def status_of(headers: bytes) -> tuple[str, str]:
    """The inline status of a header block (``NATS/1.0 408 Request Timeout``) and its
    description; ``("", "")`` for a block without one."""
    if not headers.startswith(_VERSION_LINE):
        return "", ""
    line = headers[len(_VERSION_LINE):].split(b"\r\n", 1)[0].strip()
    code, _, description = line.partition(b" ")
    return code.decode("latin-1"), description.strip().decode("latin-1")
