"""How long to wait before retrying: one backoff for spreadbus and kubesim alike.

A package of its own because both the product and its test cluster retry, and neither may import
the other.
"""

from retrydelay.backoff import Backoff

__all__ = ["Backoff"]
