"""How the host's actuator checks a binding it creates or patches against its template.

The planner's binding writes name the template they serve as their governor; the actuator
reads the template from the host's API server and asks :func:`binding_follows` whether the
binding it is about to leave is that template's: ``spec.resource`` names it (apiVersion, kind,
namespace, name and uid), the binding carries its replicas as Karmada's interpreter reads them
and the digest of its content (which its copies in the members are checked against), and it is
named as Karmada names the template's binding. Where the replicas go
(``spec.clusters``) is the scheduler's decision over the Clusters and is not judged here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesemantics.karmada_binding import binding_name, template_namespace
from kubesemantics.lenient_json import as_int, as_map, as_str
from spreadbus.features.propagation.core.interpreter import is_workload, replicas_of
from spreadbus.features.propagation.core.member_copy import (
    TEMPLATE_DIGEST_ANNOTATION,
    template_digest,
)


def binding_follows(template: Mapping[str, Any], written: Mapping[str, Any],
                    before: Mapping[str, Any] | None) -> str:
    """Why ``written`` is not ``template``'s binding; ``""`` when it is."""
    metadata = as_map(template.get("metadata"))
    name = as_str(metadata.get("name"))
    kind = as_str(template.get("kind"))
    namespace = template_namespace(template)
    mine = as_map(written.get("metadata"))
    if as_str(mine.get("name")) != binding_name(kind, name):
        return f"a binding of {kind} {name} is named {binding_name(kind, name)!r}"
    if as_str(mine.get("namespace")) != namespace:
        return f"a binding of {kind} {name} is in {namespace!r}"
    resource = as_map(as_map(written.get("spec")).get("resource"))
    for key, want in (("apiVersion", as_str(template.get("apiVersion"))), ("kind", kind),
                      ("namespace", namespace), ("name", name),
                      ("uid", as_str(metadata.get("uid")))):
        if as_str(resource.get(key)) != want:
            return f"spec.resource.{key} is {as_str(resource.get(key))!r}, not {want!r}"
    digest = as_str(as_map(mine.get("annotations")).get(TEMPLATE_DIGEST_ANNOTATION))
    if digest and digest != template_digest(template, as_str(mine.get("name")), namespace):
        return "its template digest is not the template's"
    replicas = as_int(as_map(written.get("spec")).get("replicas"))
    want_replicas = replicas_of(template) if is_workload(template) else None
    if (replicas or None) != (want_replicas or None):
        return f"spec.replicas is {replicas}, the template's are {want_replicas}"
    return ""
