"""Discovery documents: ``/api``, ``/apis``, group and resource lists, ``/version``.

kubectl 1.37 asks for aggregated discovery (``apidiscovery.k8s.io/v2``) first and falls back
to these legacy documents when the response's content type says they are not aggregated, so
serving only the legacy form is enough for REST mapping, ``api-resources`` and DynamicClient.
"""

from __future__ import annotations

from typing import Any

from kubesim.registry import Registry, ResourceType

JsonObject = dict[str, Any]

VERSION_INFO: JsonObject = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-kubesim",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23.4",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def api_versions(server_address: str) -> JsonObject:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _group(name: str, versions: list[str]) -> JsonObject:
    gvs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list(registry: Registry) -> JsonObject:
    groups = registry.groups()
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(g, vs) for g, vs in sorted(groups.items()) if g],
    }


def api_group(registry: Registry, name: str) -> JsonObject | None:
    versions = registry.groups().get(name)
    if not versions or not name:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _resource(rt: ResourceType) -> JsonObject:
    out: JsonObject = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        out["shortNames"] = list(rt.short_names)
    if rt.categories:
        out["categories"] = list(rt.categories)
    return out


def _subresource(rt: ResourceType, sub: str) -> JsonObject:
    kinds = {
        "scale": ("Scale", "autoscaling", "v1"),
        "binding": ("Binding", "", "v1"),
        "eviction": ("Eviction", "policy", "v1"),
    }
    kind, group, version = kinds.get(sub, (rt.kind, "", ""))
    verbs = {
        "status": ["get", "patch", "update"],
        "scale": ["get", "patch", "update"],
        "binding": ["create"],
        "eviction": ["create"],
        "finalize": ["update"],
    }[sub]
    out: JsonObject = {
        "name": f"{rt.plural}/{sub}",
        "singularName": "",
        "namespaced": rt.namespaced,
        "kind": kind,
        "verbs": verbs,
    }
    if group:
        out["group"] = group
        out["version"] = version
    return out


def resource_list(registry: Registry, group: str, version: str) -> JsonObject | None:
    rts = [rt for rt in registry if rt.group == group and rt.version == version]
    if not rts:
        return None
    resources: list[JsonObject] = []
    for rt in sorted(rts, key=lambda r: r.plural):
        resources.append(_resource(rt))
        resources.extend(_subresource(rt, sub) for sub in rt.subresources)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }
