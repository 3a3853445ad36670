"""Encode and decode bus messages; unknown or malformed input becomes a value, never an exception.

Decoding is one pass through a reused ``msgspec.json.Decoder`` over the tagged union, the fast path
every service takes. Only when that pass fails, or the message is older than the version this code
writes, does the slow path run: decode the envelope (``type``, ``v``), then either report an
unknown type (the caller logs it and acks it away), upcast an old version step by step to the
current shape, or report the validation error with its field path (msgspec's ``at `$.path```).

A message *newer* than this code decodes on the fast path: new fields are ignored by design.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

import msgspec

from events.messages import SCHEMA_VERSION, TAGS, Event

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
"""Rewrites the JSON object of one message from version ``n`` into version ``n+1``."""


class Undecodable(msgspec.Struct, frozen=True, kw_only=True):
    """Why a message could not be turned into an event; the consumer skips it."""

    kind: Literal["unknown_type", "invalid", "not_json"]
    type: str = ""
    v: int = 0
    error: str = ""


class _Envelope(msgspec.Struct):
    type: str = ""
    v: int = SCHEMA_VERSION


_ENCODER: Final = msgspec.json.Encoder()
_ANY: Final = msgspec.json.Decoder()
_ENVELOPE: Final = msgspec.json.Decoder(_Envelope)


def encode(event: Event) -> bytes:
    """JSON bytes of one message, as published."""
    return _ENCODER.encode(event)


class Codec:
    """Decodes the union, upcasting old versions with the registered steps.

    ``versions`` maps a type tag to the version this code writes; ``upcasters`` maps
    ``(type, n)`` to the step from ``n`` to ``n+1``.
    """

    def __init__(
        self,
        *,
        versions: Mapping[str, int] | None = None,
        upcasters: Mapping[tuple[str, int], Upcaster] | None = None,
    ) -> None:
        self._decoder: msgspec.json.Decoder[Event] = msgspec.json.Decoder(Event)
        self._versions = dict(versions or {})
        self._upcasters = dict(upcasters or {})

    def current_version(self, tag: str) -> int:
        return self._versions.get(tag, SCHEMA_VERSION)

    def decode(self, data: bytes | memoryview) -> Event | Undecodable:
        try:
            event = self._decoder.decode(data)
        except msgspec.DecodeError as exc:
            return self._slow(data, exc)
        if event.v < self.current_version(_tag(event)):
            return self._slow(data, None)
        return event

    def _slow(
        self, data: bytes | memoryview, exc: msgspec.DecodeError | None
    ) -> Event | Undecodable:
        try:
            head = _ENVELOPE.decode(data)
        except msgspec.DecodeError as env_exc:
            return Undecodable(kind="not_json", error=str(env_exc))
        if head.type not in TAGS:
            return Undecodable(kind="unknown_type", type=head.type, v=head.v)
        current = self.current_version(head.type)
        if head.v >= current:
            return Undecodable(kind="invalid", type=head.type, v=head.v, error=str(exc))
        body = _ANY.decode(data)
        if not isinstance(body, dict):
            return Undecodable(kind="invalid", type=head.type, v=head.v, error="not an object")
        version = head.v
        while version < current:
            step = self._upcasters.get((head.type, version))
            if step is None:
                return Undecodable(
                    kind="invalid",
                    type=head.type,
                    v=head.v,
                    error=f"no upcaster from version {version} of {head.type!r}",
                )
            body = step(body)
            version += 1
            body["v"] = version
        try:
            converted: Event = msgspec.convert(body, Event)
            return converted
        except msgspec.ValidationError as conv_exc:
            return Undecodable(kind="invalid", type=head.type, v=head.v, error=str(conv_exc))


def _tag(event: Event) -> str:
    tag = type(event).__struct_config__.tag
    assert isinstance(tag, str)
    return tag


DEFAULT_CODEC: Final = Codec()


def decode(data: bytes | memoryview) -> Event | Undecodable:
    """Decode with the upcasters this release ships."""
    return DEFAULT_CODEC.decode(data)
