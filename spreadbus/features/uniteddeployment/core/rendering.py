"""The whole subset workload a UnitedDeployment wants, for each of the four kinds.

Rendering starts from the observed workload (an empty object for a create) and writes what Kruise's
adapters write, in their order, later writes winning:

1. namespace; labels: the observed ones, then the template's, the selector's ``matchLabels``, the
   revision (``apps.kruise.io/controller-revision-hash``) and the subset name; annotations: the
   observed ones, then the template's;
2. ``generateName`` ``<ud>-<subset>-``, or ``<ud>-`` when that is no valid name prefix; the
   controller owner reference to the UD;
3. the spec is the template's spec, whole (every field of the template reaches the subset), with
   the UD's selector plus the subset name, the allocated replicas and the partition
   (:mod:`.partitions`);
4. the pod template gets the subset-name and revision labels, the subset's ``nodeSelectorTerm``
   (its ``matchExpressions`` and, unlike Kruise #1230, its ``matchFields`` appended to every
   required term, since terms are ORed; an empty term leaves the affinity alone, Kruise #807),
   the subset's tolerations after the template's, and then the subset ``patch`` as a strategic
   merge patch of the pod template (containers merge by name);
5. the ``apps.kruise.io/subset-patch`` annotation: the patch as the API server hands it to Kruise
   (compact JSON, keys sorted), ``""`` without a patch.

A subset with a ``targetCluster`` other than the UD's own cluster gets its workload there, where
no owner reference can name the UD: instead of one it carries the UD's identity labels and
annotation (:mod:`.member_workloads`); an owner reference to the UD an observed one still holds
is dropped. The node selector term, tolerations and patch apply alike, in the target cluster.

A create has ``metadata.generateName`` and no ``metadata.name``; an update keeps the observed
metadata (name, uid, resourceVersion, other labels and owners). The status is the workload
controller's, not something the UD wants: it is left out.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubesemantics import strategic_merge
from kubesemantics.lenient_json import as_map
from kubesemantics.qualified_names import is_dns1123_subdomain
from spreadbus.clusterregistry.registry import LOCAL
from spreadbus.features.uniteddeployment.core.member_workloads import (
    IDENTITY_ANNOTATION,
    Identity,
    subset_cluster,
    unmarked,
)
from spreadbus.features.uniteddeployment.core.model import (
    API_VERSION,
    KIND,
    Subset,
    UnitedDeployment,
)
from spreadbus.features.uniteddeployment.core.partitions import write_partition
from spreadbus.features.uniteddeployment.core.revision import go_json
from spreadbus.features.uniteddeployment.core.subset_workloads import (
    KIND_OF_TEMPLATE,
    SUBSET_NAME_LABEL,
    template_key,
)

JSON = dict[str, Any]

REVISION_LABEL = "apps.kruise.io/controller-revision-hash"
SUBSET_PATCH_ANNOTATION = "apps.kruise.io/subset-patch"

PatchError = strategic_merge.PatchError


def subset_prefix(ud_name: str, subset_name: str) -> str:
    """``<ud>-<subset>-`` if it makes valid names once a suffix is added, else ``<ud>-``."""
    prefix = f"{ud_name}-{subset_name}-"
    # NameIsDNSSubdomain(prefix, true) masks the trailing dash as Go does: the last two
    # characters become "a".
    if is_dns1123_subdomain(prefix[:-2] + "a"):
        return f"{ud_name}-"
    return prefix


def patch_text(subset: Subset) -> str:
    """The subset-patch annotation's value: the raw patch as Kruise receives it, or ``""``."""
    return "" if subset.patch is None else go_json(subset.patch)


def controller_reference(ud: UnitedDeployment) -> JSON:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": ud.name,
        "uid": ud.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _owner_references(existing: object, ud: UnitedDeployment) -> list[JSON]:
    mine = controller_reference(ud)
    refs = (
        [dict(r) for r in existing if isinstance(r, Mapping)] if isinstance(existing, list) else []
    )
    for index, ref in enumerate(refs):
        if ref.get("uid") == ud.uid and ref.get("kind") == KIND:
            refs[index] = mine
            return refs
    return [*refs, mine]


def _without_owner(existing: object, ud: UnitedDeployment) -> list[JSON]:
    refs = [dict(r) for r in existing if isinstance(r, Mapping)] if isinstance(existing, list) \
        else []
    return [r for r in refs if not (r.get("kind") == KIND and r.get("uid") == ud.uid)]


def _string_map(value: object) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def attach_node_selector_term(pod_spec: JSON, term: Mapping[str, Any] | None) -> None:
    """Add the subset's requirements to every required node selector term of ``pod_spec``."""
    term = as_map(term)
    expressions = [e for e in term.get("matchExpressions") or [] if isinstance(e, Mapping)]
    fields = [f for f in term.get("matchFields") or [] if isinstance(f, Mapping)]
    if not expressions and not fields:
        return
    affinity = pod_spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.get("nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        terms = [{}]
    rendered = []
    for existing in terms:
        one = dict(existing) if isinstance(existing, Mapping) else {}
        if expressions:
            one["matchExpressions"] = [*(one.get("matchExpressions") or []), *expressions]
        if fields:
            one["matchFields"] = [*(one.get("matchFields") or []), *fields]
        rendered.append(one)
    required["nodeSelectorTerms"] = copy.deepcopy(rendered)


def attach_tolerations(pod_spec: JSON, tolerations: tuple[JSON, ...]) -> None:
    if not tolerations:
        return
    pod_spec["tolerations"] = [*(pod_spec.get("tolerations") or []), *copy.deepcopy(tolerations)]


def render_workload(
    ud: UnitedDeployment,
    subset: Subset,
    *,
    existing: Mapping[str, Any] | None,
    revision: str,
    replicas: int,
    partition: int,
    home: str = LOCAL,
) -> JSON:
    """The subset's workload as the UD wants it; raises :class:`PatchError` on a bad patch.
    ``home``: the name of the UD's own cluster, which a member's workload names."""
    key = template_key(ud)
    if key is None:
        raise ValueError("spec.template: no workload template")
    kind = KIND_OF_TEMPLATE[key]
    template = as_map(ud.template[key])
    template_meta = as_map(template.get("metadata"))
    workload: JSON = copy.deepcopy(dict(existing)) if existing is not None else {}
    workload.pop("status", None)
    workload["apiVersion"] = kind.api_version
    workload["kind"] = kind.kind
    meta = _string_map(workload.get("metadata"))
    workload["metadata"] = meta
    meta["namespace"] = ud.namespace

    labels = _string_map(meta.get("labels"))
    labels.update(_string_map(template_meta.get("labels")))
    labels.update(_string_map(as_map(ud.selector).get("matchLabels")))
    labels[REVISION_LABEL] = revision
    labels[SUBSET_NAME_LABEL] = subset.name
    meta["labels"] = labels
    annotations = unmarked(_string_map(meta.get("annotations")))
    annotations.update(_string_map(template_meta.get("annotations")))
    meta["annotations"] = annotations
    meta["generateName"] = subset_prefix(ud.name, subset.name)
    if subset_cluster(subset.target, home) == LOCAL:
        meta["ownerReferences"] = _owner_references(meta.get("ownerReferences"), ud)
    else:
        identity = Identity(home, ud.namespace, ud.name, ud.uid)
        labels.update(identity.labels())
        annotations[IDENTITY_ANNOTATION] = identity.annotation()
        others = _without_owner(meta.get("ownerReferences"), ud)
        if others:
            meta["ownerReferences"] = others
        else:
            meta.pop("ownerReferences", None)

    spec: JSON = copy.deepcopy(dict(as_map(template.get("spec"))))
    workload["spec"] = spec
    selector = copy.deepcopy(dict(as_map(ud.selector)))
    selector["matchLabels"] = {
        **_string_map(selector.get("matchLabels")),
        SUBSET_NAME_LABEL: subset.name,
    }
    spec["selector"] = selector
    spec["replicas"] = replicas
    write_partition(kind, spec, partition)

    pod_template = _string_map(spec.get("template"))
    pod_meta = _string_map(pod_template.get("metadata"))
    pod_meta["labels"] = {
        **_string_map(pod_meta.get("labels")),
        SUBSET_NAME_LABEL: subset.name,
        REVISION_LABEL: revision,
    }
    pod_template["metadata"] = pod_meta
    pod_spec = _string_map(pod_template.get("spec"))
    attach_node_selector_term(pod_spec, subset.node_selector_term)
    attach_tolerations(pod_spec, subset.tolerations)
    pod_template["spec"] = pod_spec
    if subset.patch is not None:
        pod_template = strategic_merge.apply(
            pod_template, subset.patch, strategic_merge.POD_TEMPLATE_SPEC
        )
    spec["template"] = pod_template
    annotations[SUBSET_PATCH_ANNOTATION] = patch_text(subset)
    return workload
