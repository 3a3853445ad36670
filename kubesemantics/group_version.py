"""An ``apiVersion``'s API group, as ``schema.ParseGroupVersion`` reads it."""

from __future__ import annotations


def api_group(api_version: str) -> str:
    """The group of ``group/version`` (``v1`` is the core group ``""``)."""
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def api_version_valid(api_version: str) -> bool:
    """``schema.ParseGroupVersion`` accepts ``""``, ``v`` and ``g/v``, nothing with two slashes."""
    return api_version.count("/") <= 1
