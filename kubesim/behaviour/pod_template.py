"""Pods stamped from a workload's pod template, and the status facts controllers count."""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from kubesim.behaviour.pod_ranking import ready_condition
from kubesim.behaviour.timestamps import parse_time
from kubesim.interface import JsonObject

# upstream rand.SafeEncodeString alphabet: no vowels, no look-alike characters
_SAFE = "bcdfghjklmnpqrstvwxz2456789"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def owner_reference(owner: JsonObject) -> JsonObject:
    return {
        "apiVersion": owner.get("apiVersion", "apps/v1"),
        "kind": owner.get("kind"),
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_from_template(
    template: JsonObject,
    owner: JsonObject,
    *,
    name: str | None = None,
    extra_labels: dict[str, str] | None = None,
) -> JsonObject:
    meta = template.get("metadata") or {}
    metadata: JsonObject = {
        "namespace": owner["metadata"].get("namespace"),
        "labels": {**(meta.get("labels") or {}), **(extra_labels or {})},
        "ownerReferences": [owner_reference(owner)],
    }
    if meta.get("annotations"):
        metadata["annotations"] = dict(meta["annotations"])
    if meta.get("finalizers"):
        metadata["finalizers"] = list(meta["finalizers"])
    if name:
        metadata["name"] = name
    else:
        metadata["generateName"] = f"{owner['metadata']['name']}-"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


def template_hash(template: JsonObject, collisions: int = 0) -> str:
    """A short, stable, DNS-safe hash of a pod template (the ``pod-template-hash`` label)."""
    canonical = json.dumps(template, sort_keys=True, separators=(",", ":"))
    if collisions:
        canonical += str(collisions)
    digest = int.from_bytes(hashlib.sha256(canonical.encode()).digest()[:4], "big")
    return "".join(_SAFE[int(b) % len(_SAFE)] for b in str(digest).encode())


def is_active(pod: JsonObject) -> bool:
    """Counted by its controller: not terminating and not finished."""
    return not (pod.get("metadata") or {}).get("deletionTimestamp") and (
        pod.get("status") or {}
    ).get("phase") not in ("Succeeded", "Failed")


def available_since(pod: JsonObject) -> datetime | None:
    """When the pod became Ready, if it is Ready now (the epoch if the time is unreadable)."""
    condition = ready_condition(pod)
    if condition is None or condition.get("status") != "True":
        return None
    return parse_time(condition.get("lastTransitionTime")) or _EPOCH


def availability(pod: JsonObject, min_ready_seconds: int, now: datetime) -> tuple[bool, float]:
    """(available now, seconds until it will be) for a Ready pod; (False, -1) if not Ready."""
    since = available_since(pod)
    if since is None:
        return False, -1.0
    remaining = since.timestamp() + min_ready_seconds - now.timestamp()
    return remaining <= 0, max(remaining, 0.0)


def int_field(obj: Any, default: int) -> int:
    try:
        return int(obj) if obj is not None else default
    except (TypeError, ValueError):
        return default
