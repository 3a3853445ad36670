"""TLS for the HTTPS servers of spreadbus and kubesim: development certificates and the site.

A package of its own because both the product and its test cluster serve HTTPS the same way, and
neither may import the other.

Certificates: a throw-away CA, and server and client certificates signed by it.

kubesim serves HTTPS with these, and the spreadbus webhook uses the same functions for the
certificate the API server verifies against a ``caBundle``; the local stack's kubesim presents a
client certificate to the webhook, as an API server configured to authenticate to webhooks does.
Keys are ECDSA P-256 (fast to generate, accepted by every client). Everything is in memory until
:meth:`CertKeyPair.write`. Keys and other secrets reach the disk through
:func:`~tlsserving.secret_files.write_secret`, readable by their owner alone.
"""

from tlsserving.certs import CertKeyPair, PemPaths, issue_client_cert, issue_server_cert, make_ca
from tlsserving.secret_files import write_secret

__all__ = ["CertKeyPair", "PemPaths", "issue_client_cert", "issue_server_cert", "make_ca",
           "write_secret"]
