"""Development TLS: a throw-away CA and server certificates signed by it.

kubesim serves HTTPS with these, and the spreadbus webhook uses the same functions for the
certificate the API server verifies against a ``caBundle``. Keys are ECDSA P-256 (fast to
generate, accepted by every client). Everything is in memory until :meth:`CertKeyPair.write`.
"""

from spreadbus.tls.certs import CertKeyPair, PemPaths, issue_server_cert, make_ca

__all__ = ["CertKeyPair", "PemPaths", "issue_server_cert", "make_ca"]
