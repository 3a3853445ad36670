"""An object's owner references, and its controller: the one with ``controller: true``.

Every controller finds its objects this way (a pod's ReplicaSet, a workload's UnitedDeployment), so
every feature reads the reference here. Read leniently: a reference or list of the wrong type
reads as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def controller_ref(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``metav1.GetControllerOf``: the first owner reference whose ``controller`` is true.

    Runs for every pod of every plan, so decoded JSON's dicts skip the abstract class check."""
    meta = obj.get("metadata")
    if type(meta) is not dict and not isinstance(meta, Mapping):
        return None
    refs = meta.get("ownerReferences")
    if type(refs) is not list:
        return None
    for ref in refs:
        if (type(ref) is dict or isinstance(ref, Mapping)) and ref.get("controller") is True:
            return ref
    return None


def owner_references(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every owner reference that is an object, in order (a reference of the wrong type is
    skipped, a list of the wrong type reads as none)."""
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if isinstance(meta, Mapping) else None
    return [ref for ref in refs if isinstance(ref, Mapping)] if isinstance(refs, list) else []
