"""The whitelist of custom workload kinds a WorkloadSpread may target.

Kruise reads it from the ``WorkloadSpread_Watch_Custom_Workload_WhiteList`` key of the
``kruise-configuration`` ConfigMap; spreadbus accepts the same JSON document as a setting. Each
entry names a group and kind, the dot path of its replica count (``replicasPath``) and the kinds
that sit between it and its pods (``subResources``, e.g. a ReplicaSet under a Deployment-like
kind), so owner chains through them are followed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import msgspec

from spreadbus.core.workloadspread.model import api_group

# Built-in targets: kind -> groups accepted for it (webhook whitelist, workloadspread.go:111-118).
BUILTIN_KINDS: dict[str, tuple[str, ...]] = {
    "CloneSet": ("apps.kruise.io",),
    "Deployment": ("apps",),
    "ReplicaSet": ("apps",),
    "Job": ("batch",),
    "StatefulSet": ("apps", "apps.kruise.io"),
}
WHITELIST_CONFIG_KEY = "WorkloadSpread_Watch_Custom_Workload_WhiteList"


class GroupKind(msgspec.Struct, frozen=True):
    group: str
    kind: str


class CustomWorkload(msgspec.Struct, frozen=True):
    group: str
    kind: str
    version: str = ""
    replicas_path: str = ""
    sub_resources: tuple[GroupKind, ...] = ()


class Whitelist(msgspec.Struct, frozen=True):
    workloads: tuple[CustomWorkload, ...] = ()

    def find(self, group: str, kind: str) -> CustomWorkload | None:
        return next((w for w in self.workloads if w.group == group and w.kind == kind), None)

    def owner_kind_allowed(self, group: str, kind: str) -> bool:
        """Whether pods owned by ``group/kind`` can be steered (built-in, custom or sub-kind)."""
        if group in BUILTIN_KINDS.get(kind, ()):
            return True
        for workload in self.workloads:
            if (workload.group, workload.kind) == (group, kind):
                return True
            if GroupKind(group, kind) in workload.sub_resources:
                return True
        return False


def _get(raw: Mapping[str, Any], *names: str) -> Any:
    """Go decodes JSON keys case-insensitively; so does this."""
    lowered = {k.lower(): v for k, v in raw.items() if isinstance(k, str)}
    for name in names:
        if name.lower() in lowered:
            return lowered[name.lower()]
    return None


def parse_whitelist(raw: str | Mapping[str, Any] | None) -> Whitelist:
    """Decode the whitelist JSON (text or decoded); unusable entries are dropped."""
    if raw is None or raw == "":
        return Whitelist()
    doc: Any = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(doc, Mapping):
        return Whitelist()
    items = _get(doc, "workloads")
    workloads: list[CustomWorkload] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping):
            continue
        subs = _get(item, "subResources")
        workloads.append(
            CustomWorkload(
                group=str(_get(item, "group") or ""),
                kind=str(_get(item, "kind") or ""),
                version=str(_get(item, "version") or ""),
                replicas_path=str(_get(item, "replicasPath") or ""),
                sub_resources=tuple(
                    GroupKind(str(_get(s, "group") or ""), str(_get(s, "kind") or ""))
                    for s in (subs if isinstance(subs, list) else [])
                    if isinstance(s, Mapping)
                ),
            )
        )
    return Whitelist(tuple(workloads))


def group_kind_of(api_version: str, kind: str) -> GroupKind:
    return GroupKind(api_group(api_version), kind)
