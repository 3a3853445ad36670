"""Built-in kinds served in more than one version, and how their objects move between them.

A kind listed here is stored in one version (its storage ResourceType) and converted on every
read and write in another, as upstream's API server converts through its internal types. Kinds
served in one version, and custom resources (whose conversion is the CRD's), are not listed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesim import horizontalpodautoscaler
from kubesim.registry import ResourceType

Convert = Callable[[dict[str, Any], str], dict[str, Any]]
"""``(object in any served version, wanted apiVersion) -> object in that version``."""

CONVERTERS: dict[tuple[str, str], Convert] = {
    ("autoscaling", "horizontalpodautoscalers"): horizontalpodautoscaler.convert,
}


def converter(rt: ResourceType) -> Convert | None:
    """The conversion of a built-in kind served in several versions; None otherwise."""
    if rt.custom:
        return None
    return CONVERTERS.get(rt.storage_key)
