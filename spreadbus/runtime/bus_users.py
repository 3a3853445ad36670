"""The bus users' nkeys: a seed file per user, created once, and the server's user list.

nkey authentication keeps every secret on the client side: the server's configuration holds only
public keys, so it can be shown, logged and committed, and a seed never crosses the network
(the server sends a nonce the client signs). ``spreadbus up`` keeps its seeds in
``<data dir>/credentials/<user>.nk``; ``spreadbus bus-users`` writes the same files for a cluster
(see deploy/README.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import nkeys

from spreadbus.runtime.bus_permissions import USERS


def seed_file(directory: Path, user: str) -> Path:
    return directory / f"{user}.nk"


def local_seed(data_dir: Path, user: str) -> Path:
    """Where a local stack (``spreadbus up --data-dir``) keeps ``user``'s seed."""
    return seed_file(data_dir / "credentials", user)


def local_ca(data_dir: Path) -> Path:
    """The development CA a local stack's NATS certificate is issued from."""
    return data_dir / "tls" / "ca.crt"


def ensure_users(directory: Path, users: Iterable[str] = USERS) -> dict[str, str]:
    """User -> nkey public key; a user without a seed file gets a new one, created 0600 (in a
    directory created 0700)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    keys: dict[str, str] = {}
    for user in users:
        path = seed_file(directory, user)
        if not path.exists():
            seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as out:
                out.write(seed + b"\n")
        keys[user] = public_key(path)
    return keys


def public_key(path: Path) -> str:
    """The public key of the seed in ``path`` (``U...``)."""
    pair = nkeys.from_seed(bytearray(path.read_bytes().strip()))
    return bytes(pair.public_key).decode()
