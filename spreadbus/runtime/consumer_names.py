"""The name of a consumer a client creates for itself alone: unguessable, so no one else can use it.

Every JetStream consumer is created under a name in the request subject
(``$JS.API.CONSUMER.CREATE.<stream>.<name>``): the server refuses the unnamed form to every user,
because a request on it that names an existing consumer in its body changes that consumer
(:mod:`spreadbus.runtime.bus_permissions`). A service's durable consumers have fixed names that
only their user is allowed; any other consumer (a follower's, a snapshot read's, a reader's) is
named here, with 128 random bits after a readable prefix. No user but ``setup`` may list
consumers, so another user can neither guess nor learn the name, and without it cannot read
from, acknowledge on, change or delete the consumer.

Signature::

    private_name(purpose: str) -> str       # "<purpose>-<32 hex digits>"
"""

from __future__ import annotations

import re
import secrets

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def private_name(purpose: str) -> str:
    """A fresh consumer name; ``purpose`` (reduced to letters, digits, ``-`` and ``_``) tells an
    operator listing the consumers what it is for."""
    readable = _UNSAFE.sub("-", purpose).strip("-")[:40] or "consumer"
    return f"{readable}-{secrets.token_hex(16)}"
