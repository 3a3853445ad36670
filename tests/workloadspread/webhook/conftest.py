"""The running webhook replica of the webhook service's tests, for the WorkloadSpread tests that
call it over HTTPS."""

from tests.webhook.conftest import webhook, webhook_tls

__all__ = ["webhook", "webhook_tls"]
