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

from kubesemantics.json_type import json_type

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


class WhitelistError(ValueError):
    """The whitelist cannot be used; ``problems`` names every bad field (``workloads[1].kind``)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def _get(raw: Mapping[str, Any], *names: str) -> Any:
    """Go decodes JSON keys case-insensitively; so does this."""
    lowered = {k.lower(): v for k, v in raw.items() if isinstance(k, str)}
    for name in names:
        if name.lower() in lowered:
            return lowered[name.lower()]
    return None


def _text(item: Mapping[str, Any], name: str, path: str, problems: list[str]) -> str:
    """A string field; ``null`` or absent is empty, as Go leaves a string at its zero value."""
    value = _get(item, name)
    if value is None:
        return ""
    if not isinstance(value, str):
        problems.append(f"{path}.{name}: expected string, got {json_type(value)}")
        return ""
    return value


def _objects(
    parent: Mapping[str, Any], name: str, path: str, problems: list[str]
) -> list[tuple[str, Mapping[str, Any]]]:
    """The objects of an array field, each with its path; ``null`` or absent is empty."""
    value = _get(parent, name)
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append(f"{path}: expected array, got {json_type(value)}")
        return []
    out = []
    for i, item in enumerate(value):
        if isinstance(item, Mapping):
            out.append((f"{path}[{i}]", item))
        else:
            problems.append(f"{path}[{i}]: expected object, got {json_type(item)}")
    return out


def parse_whitelist(raw: str | Mapping[str, Any] | None) -> Whitelist:
    """Decode the whitelist JSON (text or decoded); raises :class:`WhitelistError`.

    The shape is checked as Go's ``json.Unmarshal`` into Kruise's types checks it: a JSON object
    whose ``workloads`` is an array of objects, string fields strings, ``subResources`` an array of
    objects. Every problem is reported with its field; a service given such a setting refuses to
    start rather than run with some custom workloads silently missing.
    """
    if raw is None or raw == "":
        return Whitelist()
    doc: Any
    if isinstance(raw, str):
        try:
            doc = json.loads(raw)
        except ValueError as exc:
            raise WhitelistError([f"not valid JSON: {exc}"]) from exc
    else:
        doc = raw
    if not isinstance(doc, Mapping):
        raise WhitelistError([f"expected a JSON object, got {json_type(doc)}"])
    problems: list[str] = []
    workloads: list[CustomWorkload] = []
    for path, item in _objects(doc, "workloads", "workloads", problems):
        subs = _objects(item, "subResources", f"{path}.subResources", problems)
        workloads.append(
            CustomWorkload(
                group=_text(item, "group", path, problems),
                kind=_text(item, "kind", path, problems),
                version=_text(item, "version", path, problems),
                replicas_path=_text(item, "replicasPath", path, problems),
                sub_resources=tuple(
                    GroupKind(
                        _text(sub, "group", sub_path, problems),
                        _text(sub, "kind", sub_path, problems),
                    )
                    for sub_path, sub in subs
                ),
            )
        )
    if problems:
        raise WhitelistError(problems)
    return Whitelist(tuple(workloads))
