"""The copy of a template a member cluster holds, how it is brought up to date, and how a member
checks that a write of it is what the host's binding asks for.

The copy is :func:`~.interpreter.work` (the template with the cluster's share of replicas,
naming its binding) marked with the template generation it was made from and a digest of
everything in it but the replicas. A copy whose digest is current only has its replicas set; a
stale one is patched whole (top-level fields the template no longer has are removed). Comparing
digests instead of fields keeps what the member's API server defaults (a container's
``imagePullPolicy``) from ever looking like a difference.

:func:`follows` is the check a member's actuator runs before it creates or patches a copy
(``PlanGrant.follows``), on the host's binding as the host's API server holds it: the binding
names the copy's apiVersion, kind, namespace and name, the copy names the binding, and the
cluster the copy is for is one of the binding's ``spec.clusters`` with exactly its share of
replicas. A plan the binding does not ask for (a forged one, or one decided on a schedule since
replaced) writes nothing.
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

JSON = dict[str, Any]

DIGEST_ANNOTATION: Final = "propagation.spreadbus.io/template-digest"
"""On a member copy: the digest of the copy without its replicas."""
_FRAME: Final = ("apiVersion", "kind", "metadata", "status")
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


def digest(obj: Mapping[str, Any]) -> str:
    body: JSON = copy.deepcopy(dict(obj))
    body.pop("status", None)
    metadata = dict(as_map(body.get("metadata")))
    annotations = {k: v for k, v in as_map(metadata.get("annotations")).items()
                   if k != DIGEST_ANNOTATION}
    metadata["annotations"] = annotations
    body["metadata"] = metadata
    if has_replicas(obj):
        spec = dict(as_map(body.get("spec")))
        spec.pop(_replicas_field(obj), None)
        body["spec"] = spec
    return hashlib.sha256(_CANONICAL.encode(body)).hexdigest()[:16]


def member_copy(template: Mapping[str, Any], cluster: str, replicas: int, binding: str,
                binding_namespace: str) -> JSON:
    """The object ``cluster`` should hold for ``template`` with ``replicas`` of it."""
    out = work(template, cluster, replicas, binding, binding_namespace)
    metadata = out["metadata"]
    generation = as_int(as_map(template.get("metadata")).get("generation"))
    annotations = metadata["annotations"]
    annotations[TEMPLATE_GENERATION_ANNOTATION] = str(generation or 0)
    annotations[DIGEST_ANNOTATION] = digest(out)
    return out


def copy_patch(wanted: Mapping[str, Any], observed: Mapping[str, Any]) -> JSON:
    """The merge patch that brings ``observed`` to ``wanted`` (already true when it holds)."""
    mark = as_str(as_map(as_map(wanted.get("metadata")).get("annotations")).get(
        DIGEST_ANNOTATION))
    have = as_str(as_map(as_map(observed.get("metadata")).get("annotations")).get(
        DIGEST_ANNOTATION))
    replicas = replicas_in(wanted)
    if mark == have:
        patch: JSON = {"metadata": {"annotations": {DIGEST_ANNOTATION: mark}}}
        if replicas is not None:
            patch["spec"] = {_replicas_field(wanted): replicas}
        return patch
    metadata = as_map(wanted.get("metadata"))
    patch = {"metadata": {"labels": dict(as_map(metadata.get("labels"))) or None,
                          "annotations": dict(as_map(metadata.get("annotations")))}}
    for key in observed:
        if key not in _FRAME and key not in wanted:
            patch[key] = None
    for key, value in wanted.items():
        if key not in _FRAME:
            patch[key] = copy.deepcopy(value)
    return patch


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
    if not cluster or share is None:
        return f"the binding does not schedule it to cluster {cluster!r}"
    replicas = replicas_in(written)
    if has_replicas(written) and replicas != (as_int(share.get("replicas")) or 0):
        return (f"the binding gives cluster {cluster} {as_int(share.get('replicas')) or 0} "
                f"replicas, not {replicas}")
    return ""
