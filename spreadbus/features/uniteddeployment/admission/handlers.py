"""The UnitedDeployment webhook handlers: defaulting, validation and deletion protection.

- ``/mutate-uniteddeployment`` (CREATE, UPDATE): the defaults of
  :mod:`..core.defaulting` as a JSON Patch against the object the API server sent.
- ``/validate-uniteddeployment`` (CREATE, UPDATE, DELETE; fails closed): the errors of
  :mod:`..core.validation` as a 422 ``Invalid`` answer whose message is the errors' aggregate, as
  Kruise answers (one error as is, several in brackets, a repeated line once) and whose causes
  name every field, repeats included; a DELETE is refused while
  the object carries Kruise's deletion protection label (``policy.kruise.io/delete-protection``:
  ``Always``, or ``Cascading`` while ``spec.replicas`` is above 0).

The handlers read the request, and validation the Cluster objects the replica has observed (a
subset's ``targetCluster`` must be among those its ``clusterRegistry`` finds, once a Cluster of
that kind was seen); a UnitedDeployment's validity depends on nothing else. Requests on a
subresource (``/status``, ``/scale``) are allowed untouched: Kruise registers neither.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from kubesemantics.field_errors import FieldError, describe
from kubesemantics.intstr import is_int
from spreadbus.engine.admission_chain import ALLOW, Verdict, deny
from spreadbus.engine.review import AdmissionRequest
from spreadbus.features.uniteddeployment.core.defaulting import defaulting_patch
from spreadbus.features.uniteddeployment.core.validation import validate_uniteddeployment

DELETE_PROTECTION: Final = "policy.kruise.io/delete-protection"
PROTECT_ALWAYS: Final = "Always"
PROTECT_CASCADING: Final = "Cascading"


def invalid_answer(errors: list[FieldError]) -> Verdict:
    lines = list(dict.fromkeys(describe(e) for e in errors))
    message = lines[0] if len(lines) == 1 else "[" + ", ".join(lines) + "]"
    causes = [
        {"field": e.field, "reason": f"Field{e.type}", "message": e.to_dict()["message"]}
        for e in errors
    ]
    return deny(message, code=422, reason="Invalid", causes=causes)


def deletion_refusal(obj: Mapping[str, Any]) -> str | None:
    """Kruise's ``ValidateWorkloadDeletion``: why a DELETE is refused, or ``None``."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    if meta.get("deletionTimestamp"):
        return None
    labels = meta.get("labels")
    value = labels.get(DELETE_PROTECTION) if isinstance(labels, Mapping) else None
    if value == PROTECT_ALWAYS:
        return f"forbidden by ResourcesProtectionDeletion for {DELETE_PROTECTION}={value}"
    if value == PROTECT_CASCADING:
        spec = obj.get("spec")
        replicas = spec.get("replicas") if isinstance(spec, Mapping) else None
        if isinstance(replicas, int) and is_int(replicas) and replicas > 0:
            return (f"forbidden by ResourcesProtectionDeletion for {DELETE_PROTECTION}={value} "
                    f"and replicas {replicas}>0")
    return None


async def mutate(request: AdmissionRequest) -> Verdict:
    if request.operation not in ("CREATE", "UPDATE") or request.sub_resource:
        return ALLOW
    if request.object is None:
        return deny("request.object: required", code=400, reason="BadRequest")
    old = request.old_object if request.operation == "UPDATE" else None
    return Verdict(patch=defaulting_patch(request.object, old=old))


def _no_clusters() -> list[dict[str, Any]]:
    return []


async def validate(request: AdmissionRequest, *,
                   clusters: Callable[[], list[dict[str, Any]]] = _no_clusters,
                   control_plane: bool = False) -> Verdict:
    if request.sub_resource:
        return ALLOW
    if request.operation == "DELETE":
        if request.old_object is None:
            return ALLOW
        reason = deletion_refusal(request.old_object)
        return ALLOW if reason is None else deny(reason, code=403, reason="Forbidden")
    if request.operation not in ("CREATE", "UPDATE"):
        return ALLOW
    obj = request.object
    if obj is None:
        return deny("request.object: required", code=400, reason="BadRequest")
    old = request.old_object if request.operation == "UPDATE" else None
    if request.operation == "UPDATE" and old is None:
        return deny("request.oldObject: required for an UPDATE", code=400, reason="BadRequest")
    errors = validate_uniteddeployment(obj, old=old, clusters=clusters(),
                                       control_plane=control_plane)
    return ALLOW if not errors else invalid_answer(errors)
