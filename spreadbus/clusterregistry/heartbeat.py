"""A member agent's heartbeat: what it found of its API server, as it is kept on the bus.

The member's watcher probes its API server and puts one heartbeat in the key-value bucket
:data:`BUCKET` under its own key (:func:`heartbeat_key`), replacing the previous one; a member's
users may write only keys that begin with their own cluster, so no member can beat for
another. The bucket keeps one value per member, so the planner replays it whole on every start.
The node and pod inputs of the resource summary are not repeated here: they are the member's
own observations, on the member's own subjects, already in the planner's projection.

``at`` is the member's time of the probe, in seconds since the epoch: the control plane
measures its grace period from it, so replaying the bucket gives the same status.
"""

from __future__ import annotations

from typing import Final

import msgspec

from events.buckets import key_tokens, kv_token
from events.subjects import SubjectError, unescape
from spreadbus.clusterregistry.cluster_health import ApiServerHealth

BUCKET: Final = "spreadbus-cluster-heartbeats"
STREAM: Final = f"KV_{BUCKET}"
ENTRY: Final = "agent"
"""The one key token after the member's own."""


class Heartbeat(msgspec.Struct, frozen=True, kw_only=True):
    health: str
    """An :class:`ApiServerHealth` value."""
    at: float
    kubernetesVersion: str = ""

    @property
    def api_server(self) -> ApiServerHealth:
        """The probe's result; a value this build does not know reads as unreachable."""
        try:
            return ApiServerHealth(self.health)
        except ValueError:
            return ApiServerHealth.UNREACHABLE


_DECODER: Final = msgspec.json.Decoder(Heartbeat)
_ENCODER: Final = msgspec.json.Encoder()


def heartbeat_key(member: str) -> str:
    """The member's key in :data:`BUCKET`."""
    return f"{kv_token(member)}.{ENTRY}"


def heartbeat_subject(member: str) -> str:
    """The subject a put of the member's heartbeat is published on."""
    return f"$KV.{BUCKET}.{heartbeat_key(member)}"


def encode(heartbeat: Heartbeat) -> bytes:
    return _ENCODER.encode(heartbeat)


def member_of(subject: str) -> str | None:
    """The member a message of the bucket's stream is the heartbeat of; None for any other."""
    prefix = f"$KV.{BUCKET}."
    if not subject.startswith(prefix):
        return None
    token, _, entry = subject[len(prefix):].partition(".")
    if entry != ENTRY or not token:
        return None
    try:
        return unescape(key_tokens(token))
    except SubjectError:
        return None


def decode(data: bytes) -> Heartbeat | None:
    """The heartbeat, or None for a deleted entry or one that does not decode."""
    if not data:
        return None
    try:
        return _DECODER.decode(data)
    except msgspec.DecodeError:
        return None
