"""Certificate generation with ``cryptography``: a CA, and the server and client certificates it
signs."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tlsserving.secret_files import write_secret


@dataclass(frozen=True, slots=True)
class PemPaths:
    cert: Path
    key: Path


@dataclass(frozen=True, slots=True)
class CertKeyPair:
    """A certificate and its private key, both PEM-encoded."""

    cert_pem: bytes
    key_pem: bytes
    name: str = "tls"

    def write(self, directory: Path | str, name: str | None = None) -> PemPaths:
        """Write ``<name>.crt`` and ``<name>.key`` into ``directory``, the key created 0600
        (:func:`~tlsserving.secret_files.write_secret`)."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        base = name or self.name
        cert, key = d / f"{base}.crt", d / f"{base}.key"
        cert.write_bytes(self.cert_pem)
        write_secret(key, self.key_pem)
        return PemPaths(cert, key)

    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)

    def private_key(self) -> ec.EllipticCurvePrivateKey:
        key = serialization.load_pem_private_key(self.key_pem, password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        return key


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _validity(days: int) -> tuple[dt.datetime, dt.datetime]:
    now = dt.datetime.now(dt.UTC)
    return now - dt.timedelta(minutes=5), now + dt.timedelta(days=days)


def make_ca(common_name: str, *, days: int = 365) -> CertKeyPair:
    """A self-signed CA certificate that may sign server certificates."""
    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    not_before, not_after = _validity(days)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CertKeyPair(cert.public_bytes(serialization.Encoding.PEM), _pem_key(key), "ca")


def issue_server_cert(ca: CertKeyPair, hosts: list[str], *, days: int = 365) -> CertKeyPair:
    """A server certificate for ``hosts`` (DNS names or IP addresses) signed by ``ca``."""
    if not hosts:
        raise ValueError("a server certificate needs at least one host")
    key = _key()
    sans: list[x509.GeneralName] = []
    for h in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            sans.append(x509.DNSName(h))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])])
    pem = _signed(ca, subject, key, days, ExtendedKeyUsageOID.SERVER_AUTH, sans)
    return CertKeyPair(pem, _pem_key(key), "server")


def issue_client_cert(
    ca: CertKeyPair, common_name: str, *, organization: str = "", days: int = 365
) -> CertKeyPair:
    """A client certificate for ``common_name`` (and ``organization``, a group as Kubernetes
    reads it) signed by ``ca``: the identity an API server presents to a webhook.

    It may authenticate a client only (``clientAuth``), so a server certificate of the same CA
    can never stand in for it, nor it for a server.
    """
    if not common_name:
        raise ValueError("a client certificate needs a common name")
    key = _key()
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    pem = _signed(ca, x509.Name(attributes), key, days, ExtendedKeyUsageOID.CLIENT_AUTH)
    return CertKeyPair(pem, _pem_key(key), "client")


def _signed(ca: CertKeyPair, subject: x509.Name, key: ec.EllipticCurvePrivateKey, days: int,
            usage: x509.ObjectIdentifier,
            sans: list[x509.GeneralName] | None = None) -> bytes:
    """A leaf certificate signed by ``ca``, good for ``usage`` only (and ``sans``, a server's
    names), as PEM."""
    ca_cert = ca.certificate()
    not_before, not_after = _validity(days)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    )
    if sans is not None:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = (
        builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()),  # type: ignore[arg-type]
            critical=False,
        )
        .sign(ca.private_key(), hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM)
