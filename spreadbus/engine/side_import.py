"""A feature's webhook side, imported only when a webhook builds it.

Every command reads every feature's declaration, and a webhook side brings the NATS client with
it (its buckets, its hints between replicas); the offline commands (``validate``, ``admit``,
``plan``) never talk to NATS, so they must not pay for loading it. :func:`webhook_side_in`
stands for the module's ``webhook_side`` factory and imports that module on its first call. It
carries the module's name, so the side still reads as coming from the feature's webhook module.

Signatures::

    webhook_side_in(module: str) -> Callable[[WebhookContext[Any]], Awaitable[WebhookSide]]
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Any

from spreadbus.engine.feature import WebhookContext, WebhookSide

WebhookFactory = Callable[[WebhookContext[Any]], Awaitable[WebhookSide]]


def webhook_side_in(module: str) -> WebhookFactory:
    """``module.webhook_side``, imported when first called."""

    async def webhook_side(ctx: WebhookContext[Any]) -> WebhookSide:
        made: WebhookFactory = importlib.import_module(module).webhook_side
        return await made(ctx)

    webhook_side.__module__ = module
    return webhook_side
