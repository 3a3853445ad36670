"""AdmissionReview v1: read a request defensively, build every kind of answer.

The API server sends whatever a client asked for, and a webhook that raises on an odd body
leaves the review unanswered until the API server's timeout. So reading never raises: it
returns either an :class:`AdmissionRequest` or a :class:`Malformed` saying what was wrong
(and the request uid when one could be read, so the answer can still be matched).

Answers echo the request's ``apiVersion`` and ``uid`` as the API server requires. Patches are
RFC 6902 JSON Patch, base64-encoded, with JSON-pointer escaping (``~0``, ``~1``) done by
:func:`pointer`, which annotation keys such as ``apps.kruise.io/matched-workloadspread`` need.

JSON is read and written with msgspec, several times faster than the standard library on every
review. It is also stricter: ``NaN``, ``Infinity``, lone surrogates and numbers beyond the
float range are not JSON, and a body holding them is :class:`Malformed` (no API server sends
them); patches are written as compact UTF-8 rather than ASCII escapes, the same JSON.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

API_VERSION: Final = "admission.k8s.io/v1"
KIND: Final = "AdmissionReview"
OPERATIONS: Final = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
_DECODER: Final = msgspec.json.Decoder()
_ENCODER: Final = msgspec.json.Encoder()


@dataclass(frozen=True)
class AdmissionRequest:
    """The parts of ``request`` the webhook uses; objects stay plain JSON."""

    uid: str
    api_version: str
    operation: str
    group: str
    version: str
    resource: str
    sub_resource: str
    namespace: str
    name: str
    dry_run: bool
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None
    options: dict[str, Any] | None = None
    user: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Malformed:
    """A body that is not a usable AdmissionReview; ``uid`` is set when one could be read."""

    reason: str
    uid: str = ""
    api_version: str = API_VERSION


def parse(body: bytes) -> AdmissionRequest | Malformed:
    """Read an AdmissionReview body; never raises."""
    try:
        review = _DECODER.decode(body)
    except (msgspec.DecodeError, RecursionError) as exc:  # bad UTF-8 is a DecodeError
        return Malformed(f"body is not JSON: {exc}")
    if not isinstance(review, dict):
        return Malformed("body is not a JSON object")
    api_version = review.get("apiVersion")
    echo = api_version if isinstance(api_version, str) and api_version else API_VERSION
    request = review.get("request")
    uid = request.get("uid") if isinstance(request, dict) else None
    uid = uid if isinstance(uid, str) else ""
    if review.get("kind") != KIND:
        return Malformed(f"kind must be {KIND}, got {review.get('kind')!r}", uid, echo)
    if api_version != API_VERSION:
        return Malformed(f"apiVersion must be {API_VERSION}, got {api_version!r}", uid, echo)
    if not isinstance(request, dict):
        return Malformed("request: required object is missing", uid, echo)
    if not uid:
        return Malformed("request.uid: required string is missing", uid, echo)
    problems: list[str] = []
    operation = _string(request, "operation", problems, required=True)
    if operation and operation not in OPERATIONS:
        problems.append(f"request.operation: unknown operation {operation!r}")
    resource = request.get("resource")
    if not isinstance(resource, dict):
        problems.append("request.resource: required object is missing")
        resource = {}
    group = _string(resource, "group", problems, prefix="request.resource.")
    version = _string(resource, "version", problems, prefix="request.resource.")
    resource_name = _string(
        resource, "resource", problems, prefix="request.resource.", required=True
    )
    sub_resource = _string(request, "subResource", problems)
    namespace = _string(request, "namespace", problems)
    name = _string(request, "name", problems)
    dry_run = request.get("dryRun", False)
    if dry_run is None:
        dry_run = False
    if not isinstance(dry_run, bool):
        problems.append("request.dryRun: must be a boolean")
    obj = _object(request, "object", problems)
    old = _object(request, "oldObject", problems)
    options = _object(request, "options", problems)
    user_info = request.get("userInfo")
    user = user_info.get("username", "") if isinstance(user_info, dict) else ""
    if problems:
        return Malformed("; ".join(problems), uid, echo)
    return AdmissionRequest(
        uid=uid,
        api_version=echo,
        operation=operation,
        group=group,
        version=version,
        resource=resource_name,
        sub_resource=sub_resource,
        namespace=namespace,
        name=name,
        dry_run=bool(dry_run),
        object=obj,
        old_object=old,
        options=options,
        user=user if isinstance(user, str) else "",
        raw=request,
    )


def _string(
    data: Mapping[str, Any],
    key: str,
    problems: list[str],
    *,
    prefix: str = "request.",
    required: bool = False,
) -> str:
    value = data.get(key)
    if value is None:
        if required:
            problems.append(f"{prefix}{key}: required string is missing")
        return ""
    if not isinstance(value, str):
        problems.append(f"{prefix}{key}: must be a string")
        return ""
    return value


def _object(data: Mapping[str, Any], key: str, problems: list[str]) -> dict[str, Any] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        problems.append(f"request.{key}: must be an object or null")
        return None
    return value


def pointer(*tokens: str | int) -> str:
    """A JSON pointer from raw tokens, escaping ``~`` and ``/`` as RFC 6901 says."""
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)


def allow(
    uid: str,
    *,
    api_version: str = API_VERSION,
    patch: Sequence[Mapping[str, Any]] = (),
    warnings: Sequence[str] = (),
) -> dict[str, Any]:
    """An allowing answer, with a JSON Patch when there is something to change."""
    response: dict[str, Any] = {"uid": uid, "allowed": True}
    if patch:
        encoded = _ENCODER.encode(list(patch))
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(encoded).decode("ascii")
    if warnings:
        response["warnings"] = list(warnings)
    return {"apiVersion": api_version, "kind": KIND, "response": response}


def deny(
    uid: str,
    message: str,
    *,
    code: int = 400,
    reason: str = "BadRequest",
    api_version: str = API_VERSION,
    causes: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """A denying answer; ``causes`` name the fields at fault (Kubernetes StatusCause shape)."""
    status: dict[str, Any] = {
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    if causes:
        status["details"] = {"causes": [dict(c) for c in causes]}
    return {
        "apiVersion": api_version,
        "kind": KIND,
        "response": {"uid": uid, "allowed": False, "status": status},
    }
