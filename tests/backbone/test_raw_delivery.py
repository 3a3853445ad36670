"""The raw delivery of the services' NATS client, against a real nats-server: each message's
parts reach the handler in order, nothing else changes, and a failing handler stops nothing;
alike through nats-py's private hook and through the public subscription API it falls back to
when the hook is not called (forced here)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from nats.aio.client import Client

from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.raw_delivery import RawDeliveryClient, header_block, status_of
from tests.fixtures.polling import wait_until_async

Parts = tuple[bytes, bytes, bytes, bytes]


class HookNeverCalled(RawDeliveryClient):
    """A client whose nats-py no longer calls the message hook: its own path runs instead."""

    _process_msg = Client._process_msg


@pytest.fixture(params=[RawDeliveryClient, HookNeverCalled], ids=["hook", "public"])
async def raw_client(
    nats_server: NatsServer, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[RawDeliveryClient, list[Exception]]]:
    errors: list[Exception] = []

    async def on_error(exc: Exception) -> None:
        errors.append(exc)

    nc: RawDeliveryClient = request.param()
    await nc.connect(nats_server.url, error_cb=on_error)
    try:
        yield nc, errors
        assert nc.hook_missed is (request.param is HookNeverCalled)
    finally:
        await nc.drain()


async def test_each_message_reaches_the_handler_as_it_came_off_the_wire(
    raw_client: tuple[RawDeliveryClient, list[Exception]],
) -> None:
    nc, _ = raw_client
    got: list[Parts] = []
    await nc.subscribe_raw("obs.>", lambda *parts: got.append(parts))
    plain: list[bytes] = []

    async def keep(msg: object) -> None:
        plain.append(msg.data)  # type: ignore[attr-defined]

    await nc.subscribe("obs.>", cb=keep)
    await nc.publish("obs.a", b"1", reply="back.1")
    await nc.publish("obs.b", b"2", headers={"Nats-Msg-Id": "x"})
    for i in range(3, 200):
        await nc.publish(f"obs.{i}", str(i).encode())
    await nc.flush()
    await wait_until_async(lambda: len(got) == 199 and len(plain) == 199, what="every message")
    assert got[0] == (b"obs.a", b"back.1", b"1", b"")
    subject, reply, data, headers = got[1]
    assert (subject, reply, data) == (b"obs.b", b"", b"2")
    assert headers.startswith(b"NATS/1.0\r\n")
    assert b"Nats-Msg-Id: x" in headers
    assert [int(d) for _, _, d, _ in got] == list(range(1, 200))
    assert plain == [d for _, _, d, _ in got], "an ordinary subscription lost its messages"
    assert nc.stats["in_msgs"] == 2 * 199


async def test_a_failing_handler_is_reported_and_the_next_message_still_arrives(
    raw_client: tuple[RawDeliveryClient, list[Exception]],
) -> None:
    nc, errors = raw_client
    got: list[bytes] = []

    def handler(subject: bytes, reply: bytes, data: bytes, headers: bytes) -> None:
        if data == b"bad":
            raise ValueError("cannot fold this")
        got.append(data)

    await nc.subscribe_raw("obs", handler)
    for data in (b"one", b"bad", b"two"):
        await nc.publish("obs", data)
    await wait_until_async(lambda: got == [b"one", b"two"], what="the messages around the bad one")
    assert [str(e) for e in errors] == ["cannot fold this"]
    assert nc.is_connected


async def test_after_unsubscribing_the_handler_gets_nothing_more(
    raw_client: tuple[RawDeliveryClient, list[Exception]],
) -> None:
    nc, _ = raw_client
    got: list[bytes] = []
    sub = await nc.subscribe_raw("obs", lambda s, r, d, h: got.append(d))
    await nc.publish("obs", b"before")
    await wait_until_async(lambda: got == [b"before"], what="the first message")
    await sub.unsubscribe()
    other: asyncio.Queue[bytes] = asyncio.Queue()

    async def keep(msg: object) -> None:
        await other.put(msg.data)  # type: ignore[attr-defined]

    await nc.subscribe("obs", cb=keep)
    await nc.publish("obs", b"after")
    assert await asyncio.wait_for(other.get(), 5) == b"after"  # it was delivered, elsewhere
    assert got == [b"before"]
    assert nc._raw == {}


async def test_a_status_message_reaches_the_handler_with_its_status_line(
    raw_client: tuple[RawDeliveryClient, list[Exception]],
) -> None:
    nc, _ = raw_client
    got: list[Parts] = []
    await nc.subscribe_raw("back.1", lambda *parts: got.append(parts))
    await nc.publish("nobody.listens", b"?", reply="back.1")  # the server answers 503
    await wait_until_async(lambda: len(got) == 1, what="the no-responders status")
    assert status_of(got[0][3]) == ("503", "")


def test_parsed_headers_become_the_block_they_came_in() -> None:
    assert header_block(None) == b""
    assert header_block({"Status": "408", "Description": "Request Timeout",
                         "Nats-Pending-Messages": "3"}) == (
        b"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 3\r\n\r\n")
    assert header_block({"Nats-Msg-Id": "x"}) == b"NATS/1.0\r\nNats-Msg-Id: x\r\n\r\n"
    assert status_of(header_block({"Status": "409"})) == ("409", "")
    assert header_block({"Status": "503", "Description": "\nNats-Subject: a\r\nB: c"}) == (
        b"NATS/1.0 503\r\nNats-Subject: a\r\nB: c\r\n\r\n"), "nats-py's misread status"


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        (b"NATS/1.0 404 No Messages\r\n\r\n", ("404", "No Messages")),
        (b"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 3\r\n\r\n",
         ("408", "Request Timeout")),
        (b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 0\r\n\r\n",
         ("100", "Idle Heartbeat")),
        (b"NATS/1.0 409\r\n\r\n", ("409", "")),
        (b"NATS/1.0\r\nNats-Msg-Id: x\r\n\r\n", ("", "")),
        (b"", ("", "")),
    ],
)
def test_the_status_of_a_header_block(headers: bytes, status: tuple[str, str]) -> None:
    assert status_of(headers) == status
