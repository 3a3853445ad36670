"""tlsserving: a CA and server certificates that real TLS clients accept."""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

import pytest
from cryptography import x509

from tlsserving import issue_server_cert, make_ca


def test_server_certificate_names_every_host_and_chains_to_the_ca(tmp_path: Path) -> None:
    ca = make_ca("test-ca")
    server = issue_server_cert(ca, ["127.0.0.1", "webhook.spreadbus.svc"])
    cert = server.certificate()
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert sans.get_values_for_type(x509.DNSName) == ["webhook.spreadbus.svc"]
    assert cert.issuer == ca.certificate().subject
    cert.verify_directly_issued_by(ca.certificate())


def test_write_puts_pem_files_with_a_private_key_only_the_owner_reads(tmp_path: Path) -> None:
    paths = issue_server_cert(make_ca("test-ca"), ["localhost"]).write(tmp_path / "certs", "hook")
    assert paths.cert.read_bytes().startswith(b"-----BEGIN CERTIFICATE-----")
    assert paths.key.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert stat.S_IMODE(paths.key.stat().st_mode) == 0o600


def test_a_server_certificate_needs_a_host() -> None:
    with pytest.raises(ValueError, match="at least one host"):
        issue_server_cert(make_ca("test-ca"), [])
