"""Encode and decode bus messages; unknown or malformed input becomes a value, never an exception.

Decoding is one pass through a reused ``msgspec.json.Decoder`` over the tagged union, the fast path
every service takes. Only when that pass fails, or the message is older than the version this code
writes, does the slow path run: decode the envelope (``type``, ``v``), then either report an
unknown type (the caller logs it and acks it away), upcast an old version step by step to the
current shape, or report the validation error with its field path (msgspec's ``at `$.path```).

A plan or outcome whose ``verb`` this code does not know (a newer planner's verb) is reported as
``unknown_verb`` rather than ``invalid``; for a plan it comes with the :class:`PlanHead` that
every plan has whatever its verb, so a consumer can answer it without being able to apply it.

A message *newer* than this code decodes on the fast path: new fields are ignored by design.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

import msgspec

from events.messages import SCHEMA_VERSION, TAGS, VERBS, Event, ObjectRef

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
"""Rewrites the JSON object of one message from version ``n`` into version ``n+1``."""


class PlanHead(msgspec.Struct, frozen=True, kw_only=True):
    """What every plan names, whatever its verb: enough to answer one this code cannot apply."""

    id: str
    cluster: str
    verb: str
    target: ObjectRef


class Undecodable(msgspec.Struct, frozen=True, kw_only=True):
    """Why a message could not be turned into an event; the consumer skips it."""

    kind: Literal["unknown_type", "unknown_verb", "invalid", "not_json"]
    type: str = ""
    v: int = 0
    error: str = ""
    verb: str = ""
    """The verb this code does not know (``unknown_verb``)."""
    plan: PlanHead | None = None
    """The plan's head, when an ``unknown_verb`` message is a plan."""


class _Envelope(msgspec.Struct):
    type: str = ""
    v: int = SCHEMA_VERSION


class _VerbOnly(msgspec.Struct):
    verb: str = ""


_ENCODER: Final = msgspec.json.Encoder()
_ANY: Final = msgspec.json.Decoder()
_ENVELOPE: Final = msgspec.json.Decoder(_Envelope)
_VERB: Final = msgspec.json.Decoder(_VerbOnly)
_PLAN_HEAD: Final = msgspec.json.Decoder(PlanHead)
_VERBED: Final = frozenset({"plan", "outcome"})


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
            unknown = _unknown_verb(head, data, str(exc))
            if unknown is not None:
                return unknown
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


def _unknown_verb(head: _Envelope, data: bytes | memoryview, error: str) -> Undecodable | None:
    """The report of a plan or outcome refused only for a verb this code does not know."""
    if head.type not in _VERBED:
        return None
    try:
        verb = _VERB.decode(data).verb
    except msgspec.DecodeError:
        return None
    if not verb or verb in VERBS:
        return None
    plan = None
    if head.type == "plan":
        try:
            plan = _PLAN_HEAD.decode(data)
        except msgspec.DecodeError:
            plan = None
    return Undecodable(kind="unknown_verb", type=head.type, v=head.v, error=error, verb=verb,
                       plan=plan)


def _tag(event: Event) -> str:
    tag = type(event).__struct_config__.tag
    assert isinstance(tag, str)
    return tag


DEFAULT_CODEC: Final = Codec()


def decode(data: bytes | memoryview) -> Event | Undecodable:
    """Decode with the upcasters this release ships."""
    return DEFAULT_CODEC.decode(data)
