"""The copy of a template a member cluster holds, how it is brought up to date, and how a member
checks that a write of it is what the host's binding asks for.

The copy is :func:`~.interpreter.work` (the template with the cluster's share of replicas,
naming its binding) marked with the template generation it was made from and a digest of
everything in it but the replicas (:func:`content_digest`), which the binding carries too. A
copy whose digest is current only has its replicas set; a stale one has its body replaced
(:func:`copy_patch`). Comparing digests instead of fields keeps what the member's API server
defaults (a container's ``imagePullPolicy``) from ever looking like a difference.

:func:`follows` is the check a member's actuator runs before it creates or patches a copy
(``PlanGrant.follows``), on the host's binding as the host's API server holds it: the binding
names the copy's apiVersion, kind, namespace and name, the copy names the binding, and the
cluster the copy is for is one of the binding's ``spec.clusters`` with exactly its share of
replicas (or, for a copy already there, the count the binding holds it at while its replicas
move in steps, :mod:`.stepped_replicas`), and what the copy holds is the template's (its digest
is the one the binding carries, which the host's actuator checked against the template
itself), or, for a patch that changes only the replicas, what it held before. A plan the
binding does not ask for (a forged one, or one decided on a schedule since replaced) writes
nothing.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from kubesemantics.lenient_json import as_int, as_map, as_str
from spreadbus.features.propagation.core.aggregation import TEMPLATE_GENERATION_ANNOTATION
from spreadbus.features.propagation.core.interpreter import (
    BINDING_NAME_ANNOTATION,
    BINDING_NAMESPACE_ANNOTATION,
    CLUSTER_ANNOTATION,
    has_replicas,
    work,
)
from spreadbus.features.propagation.core.stepped_replicas import recorded

JSON = dict[str, Any]

DIGEST_ANNOTATION: Final = "propagation.spreadbus.io/template-digest"
"""On a member copy, and on the template's binding: :func:`content_digest` of the copy."""
TEMPLATE_DIGEST_ANNOTATION: Final = DIGEST_ANNOTATION
_FRAME: Final = ("apiVersion", "kind", "metadata", "status")
_MARKS: Final = frozenset({CLUSTER_ANNOTATION, TEMPLATE_GENERATION_ANNOTATION,
                           "propagation.spreadbus.io/template-digest"})
_CANONICAL: Final = msgspec.json.Encoder(order="sorted")


def _replicas_field(obj: Mapping[str, Any]) -> str:
    api_version = as_str(obj.get("apiVersion"))
    return "parallelism" if (api_version.startswith("batch/")
                             and obj.get("kind") == "Job") else "replicas"


def replicas_in(obj: Mapping[str, Any]) -> int | None:
    """The copy's replicas (None: the kind has none, or they are unset)."""
    if not has_replicas(obj):
        return None
    return as_int(as_map(obj.get("spec")).get(_replicas_field(obj)))


def content_digest(obj: Mapping[str, Any]) -> str:
    """A digest of what a copy holds of its template: its kind, labels, annotations (but the
    cluster's and the marks of this module) and body, without its replicas, name, namespace,
    what the API server keeps in ``metadata``, and status. The same for every cluster's copy,
    and for the template's binding (:data:`TEMPLATE_DIGEST_ANNOTATION`)."""
    metadata = as_map(obj.get("metadata"))
    body: JSON = {k: copy.deepcopy(v) for k, v in obj.items() if k not in _FRAME}
    body["apiVersion"] = obj.get("apiVersion")
    body["kind"] = obj.get("kind")
    body["labels"] = dict(as_map(metadata.get("labels")))
    body["annotations"] = {k: v for k, v in as_map(metadata.get("annotations")).items()
                           if k not in _MARKS}
    if has_replicas(obj):
        spec = dict(as_map(body.get("spec")))
        spec.pop(_replicas_field(obj), None)
        body["spec"] = spec
    return hashlib.sha256(_CANONICAL.encode(body)).hexdigest()[:32]


def template_digest(template: Mapping[str, Any], binding: str, binding_namespace: str) -> str:
    """The digest every copy of ``template`` has (:func:`content_digest`)."""
    return content_digest(work(template, "", 0, binding, binding_namespace))


def member_copy(template: Mapping[str, Any], cluster: str, replicas: int, binding: str,
                binding_namespace: str) -> JSON:
    """The object ``cluster`` should hold for ``template`` with ``replicas`` of it."""
    out = work(template, cluster, replicas, binding, binding_namespace)
    annotations = out["metadata"]["annotations"]
    generation = as_int(as_map(template.get("metadata")).get("generation"))
    annotations[TEMPLATE_GENERATION_ANNOTATION] = str(generation or 0)
    annotations[DIGEST_ANNOTATION] = content_digest(out)
    return out


def _pointer(*keys: str) -> str:
    return "".join("/" + k.replace("~", "~0").replace("/", "~1") for k in keys)


def copy_patch(wanted: Mapping[str, Any], observed: Mapping[str, Any]) -> list[JSON] | None:
    """The JSON patch that brings ``observed`` to ``wanted``; None when it holds already.

    A copy of the current template only has its replicas set. Otherwise the template's fields
    replace the copy's whole (a JSON patch, not a merge: what the member's API server defaulted
    in the old body does not survive into the new one, so the copy's content is exactly the
    template's and the member's actuator can tell), its labels are replaced and its
    annotations set one by one (the member's controllers keep theirs)."""
    mark = as_str(as_map(as_map(wanted.get("metadata")).get("annotations")).get(
        DIGEST_ANNOTATION))
    observed_meta = as_map(observed.get("metadata"))
    have = as_str(as_map(observed_meta.get("annotations")).get(DIGEST_ANNOTATION))
    replicas = replicas_in(wanted)
    guard: JSON = {"op": "test", "path": _pointer("metadata", "resourceVersion"),
                   "value": as_str(observed_meta.get("resourceVersion"))}
    if mark == have:
        if replicas is None or replicas == replicas_in(observed):
            return None
        return [guard, {"op": "add", "path": _pointer("spec", _replicas_field(wanted)),
                        "value": replicas}]
    metadata = as_map(wanted.get("metadata"))
    ops: list[JSON] = [guard]
    for key in observed:
        if key not in _FRAME and key not in wanted:
            ops.append({"op": "remove", "path": _pointer(key)})
    for key, value in wanted.items():
        if key not in _FRAME:
            ops.append({"op": "add", "path": _pointer(key), "value": copy.deepcopy(value)})
    ops.append({"op": "add", "path": _pointer("metadata", "labels"),
                "value": dict(as_map(metadata.get("labels")))})
    annotations = as_map(metadata.get("annotations"))
    if not isinstance(observed_meta.get("annotations"), Mapping):
        ops.append({"op": "add", "path": _pointer("metadata", "annotations"),
                    "value": dict(annotations)})
    else:
        ops.extend({"op": "add", "path": _pointer("metadata", "annotations", key),
                    "value": value} for key, value in annotations.items())
    return ops


def names_binding(binding: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    """Is ``obj`` a copy of ``binding``'s (it names the binding back)? A member's object that
    merely has the template's name is not patched or deleted for it."""
    metadata = as_map(binding.get("metadata"))
    annotations = as_map(as_map(obj.get("metadata")).get("annotations"))
    return (bool(as_str(metadata.get("name")))
            and as_str(annotations.get(BINDING_NAME_ANNOTATION)) == as_str(metadata.get("name"))
            and as_str(annotations.get(BINDING_NAMESPACE_ANNOTATION))
            == as_str(metadata.get("namespace")))


def follows(binding: Mapping[str, Any], written: Mapping[str, Any],
            before: Mapping[str, Any] | None) -> str:
    """Why the host's ``binding`` does not ask for ``written`` in the cluster it names; ``""``
    when it does."""
    metadata = as_map(binding.get("metadata"))
    spec = as_map(binding.get("spec"))
    resource = as_map(spec.get("resource"))
    mine = as_map(written.get("metadata"))
    annotations = as_map(mine.get("annotations"))
    name = as_str(metadata.get("name"))
    namespace = as_str(metadata.get("namespace"))
    if as_str(annotations.get(BINDING_NAME_ANNOTATION)) != name or as_str(
            annotations.get(BINDING_NAMESPACE_ANNOTATION)) != namespace:
        return f"it does not name the binding {namespace + '/' if namespace else ''}{name}"
    for key, have in (("apiVersion", as_str(written.get("apiVersion"))),
                      ("kind", as_str(written.get("kind"))),
                      ("namespace", as_str(mine.get("namespace"))),
                      ("name", as_str(mine.get("name")))):
        if as_str(resource.get(key)) != have:
            return f"the binding's spec.resource.{key} is {as_str(resource.get(key))!r}, " \
                   f"not {have!r}"
    cluster = as_str(annotations.get(CLUSTER_ANNOTATION))
    targets = spec.get("clusters")
    share = next((as_map(t) for t in targets if as_str(as_map(t).get("name")) == cluster),
                 None) if isinstance(targets, list) else None
    held = recorded(binding).get(cluster) if before is not None else None
    if not cluster or (share is None and held is None):
        return f"the binding does not schedule it to cluster {cluster!r}"
    replicas = replicas_in(written)
    wanted = as_int(share.get("replicas")) or 0 if share is not None else None
    if has_replicas(written) and replicas not in (wanted, held):
        return (f"the binding gives cluster {cluster} {wanted or 0} replicas"
                f"{f' (holds it at {held} for now)' if held is not None else ''}, not {replicas}")
    content = content_digest(written)
    template = as_str(as_map(metadata.get("annotations")).get(TEMPLATE_DIGEST_ANNOTATION))
    if content != template and (before is None or content != content_digest(before)):
        return "what it holds is not the template the binding was made for"
    return ""
