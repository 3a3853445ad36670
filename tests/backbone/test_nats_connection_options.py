"""The services' NATS connection: TLS, an nkey seed, a credentials file, several URLs."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import nats
import nats.errors
import nkeys
import pytest
from nats.aio.client import Client

from events.streams import ALL
from spreadbus.runtime.health import ReadinessGate
from spreadbus.runtime.nats_connection import NatsOptions, connect_nats
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.settings import ServiceSettings
from spreadbus.runtime.stream_setup import ensure_streams
from tlsserving.certs import issue_server_cert, make_ca


async def refused_without_credentials(url: str) -> None:
    """The server refuses a client without credentials; the refused client is closed."""
    refused = Client()
    try:
        with pytest.raises(nats.errors.Error, match="Authorization Violation"):
            await refused.connect(url, allow_reconnect=False, max_reconnect_attempts=0,
                                  connect_timeout=2)
    finally:
        await refused.close()


async def test_a_tls_only_server_is_reached_through_the_configured_ca(tmp_path: Path) -> None:
    ca = make_ca("bus test CA")
    ca_paths = ca.write(tmp_path, "ca")
    server_paths = issue_server_cert(ca, ["127.0.0.1", "localhost"]).write(tmp_path, "server")
    server = NatsServer(
        store_dir=tmp_path / "nats",
        extra_args=["--tls", "--tlscert", str(server_paths.cert), "--tlskey",
                    str(server_paths.key)],
    ).start()
    try:
        settings = ServiceSettings(
            nats_url=("nats://127.0.0.1:1", f"tls://127.0.0.1:{server.port}"),
            nats_tls_ca=str(ca_paths.cert),
        )
        gate = ReadinessGate("nats")
        options = NatsOptions.from_settings(settings, name="tls-test")
        nc: Client = await connect_nats(options, gate=gate)
        try:
            assert nc.is_connected
            assert gate.conditions == {"nats": True}
            await nc.publish("hello", b"x")
            await nc.flush()
        finally:
            await nc.close()
        assert gate.conditions == {"nats": False}
    finally:
        server.stop()


async def test_a_server_requiring_an_nkey_is_reached_with_the_seed_file(tmp_path: Path) -> None:
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    user = nkeys.from_seed(bytearray(seed)).public_key.decode()
    seed_path = tmp_path / "user.nk"
    seed_path.write_bytes(seed)
    config = tmp_path / "nats.conf"
    config.write_text(f'authorization {{ users = [ {{ nkey: "{user}" }} ] }}\n')
    server = NatsServer(store_dir=tmp_path / "nats", extra_args=["-c", str(config)]).start()
    try:
        await refused_without_credentials(server.url)  # the server does require the nkey
        gate = ReadinessGate("nats")
        settings = ServiceSettings(nats_url=(server.url,), nats_nkey_seed=str(seed_path))
        nc: Client = await connect_nats(NatsOptions.from_settings(settings, name="nkey-test"),
                                        gate=gate)
        try:
            assert nc.is_connected
            reply = await nc.request("$JS.API.INFO", b"", timeout=5)  # the server answers us
            assert reply.data
        finally:
            await nc.close()
    finally:
        server.stop()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _keypair(prefix: int) -> tuple[bytes, Any, str]:
    seed = nkeys.encode_seed(os.urandom(32), prefix)
    pair = nkeys.from_seed(bytearray(seed))
    return seed, pair, pair.public_key.decode()


def _jwt(issuer: Any, issuer_key: str, subject: str, claims: dict[str, Any]) -> str:
    """A decentralized-auth JWT signed by ``issuer`` (operator for accounts, account for users)."""
    body: dict[str, Any] = {"iat": int(time.time()), "iss": issuer_key, "sub": subject,
                            "name": subject[:8], "nats": claims}
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()
    body["jti"] = base64.b32encode(digest).decode().rstrip("=")
    head = _b64(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode())
    payload = _b64(json.dumps(body).encode())
    return f"{head}.{payload}.{_b64(issuer.sign(f'{head}.{payload}'.encode()))}"


async def test_an_operator_mode_server_is_reached_with_the_credentials_file(
    tmp_path: Path,
) -> None:
    _, operator, operator_key = _keypair(nkeys.PREFIX_BYTE_OPERATOR)
    _, account, account_key = _keypair(nkeys.PREFIX_BYTE_ACCOUNT)
    _, _, system_key = _keypair(nkeys.PREFIX_BYTE_ACCOUNT)
    user_seed, _, user_key = _keypair(nkeys.PREFIX_BYTE_USER)
    unlimited = {"mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1,
                 "subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
                 "wildcards": True, "conn": -1, "leaf": -1}
    operator_jwt = _jwt(operator, operator_key, operator_key, {"type": "operator", "version": 2})
    account_jwt = _jwt(operator, operator_key, account_key,
                       {"type": "account", "version": 2, "limits": unlimited})
    system_jwt = _jwt(operator, operator_key, system_key, {"type": "account", "version": 2})
    user_jwt = _jwt(account, account_key, user_key,
                    {"type": "user", "version": 2, "pub": {}, "sub": {}, "subs": -1,
                     "data": -1, "payload": -1})
    (tmp_path / "operator.jwt").write_text(operator_jwt)
    config = tmp_path / "nats.conf"
    config.write_text(
        f'operator: "{tmp_path / "operator.jwt"}"\nresolver: MEMORY\n'
        f"system_account: {system_key}\n"
        f'resolver_preload: {{ {account_key}: "{account_jwt}", {system_key}: "{system_jwt}" }}\n')
    creds = tmp_path / "user.creds"
    creds.write_text(
        f"-----BEGIN NATS USER JWT-----\n{user_jwt}\n------END NATS USER JWT------\n\n"
        f"-----BEGIN USER NKEY SEED-----\n{user_seed.decode()}\n------END USER NKEY SEED------\n")
    server = NatsServer(store_dir=tmp_path / "nats", extra_args=["-c", str(config)]).start()
    try:
        await refused_without_credentials(server.url)  # no credentials, no entry
        settings = ServiceSettings(nats_url=(server.url,), nats_creds=str(creds))
        nc: Client = await connect_nats(NatsOptions.from_settings(settings, name="creds-test"),
                                        gate=ReadinessGate("nats"))
        try:
            assert nc.is_connected
            await ensure_streams(nc.jetstream())  # JetStream in the user's account works
            assert (await nc.jetstream().account_info()).streams == len(ALL)
        finally:
            await nc.close()
    finally:
        server.stop()
