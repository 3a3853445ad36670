"""OpenAPI v3 documents, shaped for what kubectl reads from them.

kubectl uses OpenAPI v3 for three things, and kubesim serves exactly enough for each:

1. Field validation: it looks for a PATCH operation tagged with the object's
   ``x-kubernetes-group-version-kind`` that declares a ``fieldValidation`` query parameter. If
   found, it sends ``?fieldValidation=Strict`` and lets the server validate (kubesim rejects
   unknown fields of custom resources with a schema and accepts built-ins). Without it kubectl
   would fall back to client-side validation against ``/openapi/v2``, which kubesim does not
   serve, and ``apply`` would fail without ``--validate=false``.
2. Client-side apply: the PATCH operation's ``requestBody`` lists the accepted patch types.
   Built-in kinds do not list strategic merge here, so kubectl computes the strategic merge
   patch from its compiled-in Go types (with the real merge keys) instead of from a schema;
   custom resources list only JSON and merge patches, so kubectl sends a merge patch, as it
   does against a real server.
3. ``kubectl explain``: component schemas carry ``x-kubernetes-group-version-kind``. CRDs get
   their ``openAPIV3Schema``; built-in kinds get a shallow schema (top-level fields only).

``/openapi/v2`` is an empty Swagger 2.0 document (no definitions), in JSON or in the
protobuf encoding kubectl asks for. kubectl needs it to exist: for a kind that no served group
version knows (``autoscaling/v2beta1`` on a 1.32 server) it validates client-side against v2,
finds no schema, and then reports the missing REST mapping exactly as against a real cluster.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from kubesim.registry import ResourceType

if TYPE_CHECKING:
    from kubesim.apiserver import ApiServer

JsonObject = dict[str, Any]


def _gv_path(rt: ResourceType) -> str:
    return f"apis/{rt.group}/{rt.version}" if rt.group else f"api/{rt.version}"


def _schema_name(rt: ResourceType) -> str:
    rev = ".".join(reversed(rt.group.split("."))) if rt.group else "core"
    prefix = "io.k8s.api" if not rt.custom else rev
    if not rt.custom:
        g = rt.group.split(".")[0] if rt.group else "core"
        return f"{prefix}.{g}.{rt.version}.{rt.kind}"
    return f"{prefix}.{rt.version}.{rt.kind}"


def _gvk(rt: ResourceType) -> list[JsonObject]:
    return [{"group": rt.group, "version": rt.version, "kind": rt.kind}]


_QUERY = [
    {"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}, "description": d}
    for n, d in (
        ("dryRun", "When present, indicates that modifications should not be persisted."),
        (
            "fieldManager",
            (
                "fieldManager is a name associated with the actor or entity "
                "that is making these changes."
            ),
        ),
        (
            "fieldValidation",
            (
                "fieldValidation instructs the server on how to handle "
                "objects in the request containing unknown or duplicate "
                "fields."
            ),
        ),
        ("force", 'Force is going to "force" Apply requests.'),
    )
]


def _operation(rt: ResourceType, verb: str, action: str) -> JsonObject:
    op: JsonObject = {
        "operationId": f"{verb}{rt.kind}",
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {
            "group": rt.group,
            "version": rt.version,
            "kind": rt.kind,
        },
        "parameters": list(_QUERY),
        "responses": {
            "200": {
                "description": "OK",
                "content": {
                    "application/json": {
                        "schema": {"$ref": f"#/components/schemas/{_schema_name(rt)}"}
                    }
                },
            }
        },
    }
    if verb == "patch":
        types = [
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ]
        op["requestBody"] = {"content": {t: {"schema": {"type": "object"}} for t in types}}
    elif verb in ("create", "replace"):
        op["requestBody"] = {
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{_schema_name(rt)}"}}
            }
        }
    return op


_OBJECT_META: JsonObject = {
    "description": (
        "ObjectMeta is metadata that all persisted resources must "
        "have, which includes all objects users must create."
    ),
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Name must be unique within a namespace."},
        "namespace": {
            "type": "string",
            "description": "Namespace defines the space within which each name must be unique.",
        },
        "labels": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": (
                "Map of string keys and values that can be used to organize and categorize objects."
            ),
        },
        "annotations": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "Annotations is an unstructured key value map stored with a resource.",
        },
        "generateName": {
            "type": "string",
            "description": (
                "GenerateName is an optional prefix, used by the server, to generate a unique name."
            ),
        },
        "uid": {
            "type": "string",
            "description": "UID is the unique in time and space value for this object.",
        },
        "resourceVersion": {
            "type": "string",
            "description": "An opaque value that represents the internal version of this object.",
        },
        "generation": {
            "type": "integer",
            "format": "int64",
            "description": (
                "A sequence number representing a specific generation of the desired state."
            ),
        },
        "creationTimestamp": {
            "type": "string",
            "format": "date-time",
            "description": (
                "CreationTimestamp is a timestamp representing the server "
                "time when this object was created."
            ),
        },
        "deletionTimestamp": {
            "type": "string",
            "format": "date-time",
            "description": (
                "DeletionTimestamp is RFC 3339 date and time at which this "
                "resource will be deleted."
            ),
        },
        "finalizers": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Must be empty before the object is deleted from the registry.",
        },
        "ownerReferences": {
            "type": "array",
            "items": {"type": "object"},
            "description": "List of objects depended by this object.",
        },
    },
}


def _builtin_schema(rt: ResourceType) -> JsonObject:
    props: JsonObject = {
        "apiVersion": {
            "type": "string",
            "description": (
                "APIVersion defines the versioned schema of this representation of an object."
            ),
        },
        "kind": {
            "type": "string",
            "description": (
                "Kind is a string value representing the REST resource this object represents."
            ),
        },
        "metadata": {
            "allOf": [
                {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
            ],
            "description": "Standard object's metadata.",
        },
    }
    if rt.kind not in (
        "ConfigMap",
        "Secret",
        "Event",
        "ControllerRevision",
        "ClusterRole",
        "Role",
        "ClusterRoleBinding",
        "RoleBinding",
    ):
        props["spec"] = {
            "type": "object",
            "description": f"Specification of the desired behavior of the {rt.kind}.",
        }
    if rt.status:
        props["status"] = {
            "type": "object",
            "description": f"Most recently observed status of the {rt.kind}.",
        }
    return {
        "description": f"{rt.kind} is served by kubesim; only its top-level fields are described.",
        "type": "object",
        "properties": props,
        "x-kubernetes-group-version-kind": _gvk(rt),
    }


def _custom_schema(rt: ResourceType) -> JsonObject:
    base = dict(rt.schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    props = dict(base.get("properties") or {})
    props.setdefault(
        "apiVersion",
        {
            "type": "string",
            "description": (
                "APIVersion defines the versioned schema of this representation of an object."
            ),
        },
    )
    props.setdefault(
        "kind",
        {
            "type": "string",
            "description": (
                "Kind is a string value representing the REST resource this object represents."
            ),
        },
    )
    props["metadata"] = {
        "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
        "description": "Standard object's metadata.",
    }
    base["properties"] = props
    base["x-kubernetes-group-version-kind"] = _gvk(rt)
    return base


def group_version_doc(server: ApiServer, group: str, version: str) -> JsonObject | None:
    rts = [rt for rt in server.registry if rt.group == group and rt.version == version]
    if not rts:
        return None
    paths: JsonObject = {}
    schemas: JsonObject = {"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": _OBJECT_META}
    for rt in rts:
        base = "/" + _gv_path(rt)
        coll = (
            f"{base}/namespaces/{{namespace}}/{rt.plural}"
            if rt.namespaced
            else f"{base}/{rt.plural}"
        )
        paths[coll] = {
            "get": _operation(rt, "list", "list"),
            "post": _operation(rt, "create", "post"),
        }
        paths[f"{coll}/{{name}}"] = {
            "get": _operation(rt, "read", "get"),
            "put": _operation(rt, "replace", "put"),
            "patch": _operation(rt, "patch", "patch"),
            "delete": _operation(rt, "delete", "delete"),
        }
        schemas[_schema_name(rt)] = _custom_schema(rt) if rt.custom else _builtin_schema(rt)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _proto_string(field: int, value: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(value)) + value


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


INFO = {"title": "Kubernetes", "version": "v1.32.0"}

V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def v2_document(accept: str) -> tuple[bytes, str]:
    """The empty Swagger 2.0 document as (body, content type), protobuf when asked for.

    The protobuf form is gnostic's ``openapi_v2.Document``: ``swagger`` (field 1) and ``info``
    (field 2: ``title`` 1, ``version`` 2)."""
    if "protobuf" in accept:
        info = _proto_string(1, INFO["title"].encode()) + _proto_string(2, INFO["version"].encode())
        return _proto_string(1, b"2.0") + _proto_string(2, info), V2_PROTOBUF
    doc = {"swagger": "2.0", "info": INFO, "paths": {}, "definitions": {}}
    return msgspec.json.encode(doc), "application/json"


def _hash(doc: Any) -> str:
    return hashlib.sha512(msgspec.json.encode(doc)).hexdigest()[:32].upper()


def document(server: ApiServer, path: str, query: Mapping[str, str]) -> JsonObject | None:
    if path == "/openapi/v3":
        out: JsonObject = {}
        seen = set()
        for rt in server.registry:
            gv = (rt.group, rt.version)
            if gv in seen:
                continue
            seen.add(gv)
            doc = group_version_doc(server, *gv)
            out[_gv_path(rt)] = {
                "serverRelativeURL": f"/openapi/v3/{_gv_path(rt)}?hash={_hash(doc)}"
            }
        return {"paths": out}
    if path.startswith("/openapi/v3/"):
        rest = path[len("/openapi/v3/") :].split("/")
        if rest[0] == "api" and len(rest) == 2:
            return group_version_doc(server, "", rest[1])
        if rest[0] == "apis" and len(rest) == 3:
            return group_version_doc(server, rest[1], rest[2])
    return None
