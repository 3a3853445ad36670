"""Whether what a plan writes follows from its UnitedDeployment as the API server holds it.

The actuator asks this of every subset workload a plan creates or patches and every
ControllerRevision it creates (``PlanGrant.follows``, see
:mod:`spreadbus.engine.governor_check`), with the UD it has just read. A forged plan or a forged
observation behind an honest planner can then write nothing the real UD does not ask for:

- a subset workload is of the template's kind, in the UD's namespace, controlled by the UD (name
  and uid) and by nothing else, labelled with a subset of the UD; its spec is what
  :func:`~.rendering.render_workload` makes of that subset from the UD (the template, with the
  subset's node selector term, tolerations and patch, and the UD's selector), except for what
  the rendering takes from elsewhere: ``replicas``, the partition and ``maxUnavailable`` (from
  the allocation, the partitions and the reservation override) and the revision label (taken
  from the written pod template; the revision only names a template). A patch of such a
  workload is judged on the whole object it leaves;
- its replicas are at most the UD's ``spec.replicas`` (without one: the sum of the fixed subset
  replicas, Kruise's rule then) and at most the subset's ``maxReplicas`` when it has one, or, for
  a patch, no more than the workload already has: the allocation never asks a subset for more
  than the UD, and a patch that does not scale up scales nothing beyond it;
- a ControllerRevision is in the UD's namespace, controlled by the UD, and records the UD's
  template (:func:`~.revision.revision_data`).

Every answer is ``""`` (it follows) or why not, naming the field. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from events.messages import Plan
from kubesemantics import label_selector, merge_patch
from kubesemantics.group_version import api_group
from kubesemantics.lenient_json import as_map, as_str
from kubesemantics.owner_refs import owner_references
from spreadbus.features.uniteddeployment.core.allocation import (
    specified_replicas,
    subset_bounds,
)
from spreadbus.features.uniteddeployment.core.member_workloads import (
    CLUSTER_LABEL,
    IDENTITY_ANNOTATION,
    UID_LABEL,
    identity_of,
)
from spreadbus.features.uniteddeployment.core.model import (
    API_VERSION,
    KIND,
    UnitedDeployment,
    from_object,
)
from spreadbus.features.uniteddeployment.core.rendering import (
    REVISION_LABEL,
    PatchError,
    render_workload,
)
from spreadbus.features.uniteddeployment.core.replicas import INT32_MAX
from spreadbus.features.uniteddeployment.core.revision import revision_data
from spreadbus.features.uniteddeployment.core.subset_workloads import (
    SUBSET_NAME_LABEL,
    workload_kind,
)

JSON = Mapping[str, Any]

ALLOCATED: Final = (
    ("replicas",),
    ("updateStrategy", "rollingUpdate", "partition"),
    ("updateStrategy", "partition"),
    ("updateStrategy", "rollingUpdate", "maxUnavailable"),
    ("updateStrategy", "maxUnavailable"),
    ("strategy", "rollingUpdate", "maxUnavailable"),
)
"""Spec fields a subset workload gets from the allocation, partitions and reservation, not from
the UD's template: compared apart (replicas) or not at all."""


def workload_follows(governor: JSON, written: JSON, before: JSON | None) -> str:
    """Why ``written`` (a subset workload created, or left by a patch of ``before``) is not what
    the UD ``governor`` asks for; ``""`` when it is."""
    ud = from_object(governor)
    kind = workload_kind(ud)
    if kind is None:
        return "the UnitedDeployment has no workload template"
    if not kind.holds(written):
        return (f"kind: a {as_str(written.get('kind'))} of "
                f"{api_group(as_str(written.get('apiVersion'))) or 'the core group'}, the "
                f"template makes a {kind.kind} of {kind.group}")
    why = _placed(ud, governor, written)
    if why:
        return why
    metadata = as_map(written.get("metadata"))
    name = as_str(as_map(metadata.get("labels")).get(SUBSET_NAME_LABEL))
    subset = ud.subset(name) if name else None
    if subset is None:
        return (f"metadata.labels[{SUBSET_NAME_LABEL}]: {name!r} is no subset of the "
                "UnitedDeployment")
    spec = as_map(written.get("spec"))
    replicas = spec.get("replicas")
    if type(replicas) is not int or replicas < 0:
        return f"spec.replicas: {replicas!r} is not a count of replicas"
    bound = _replica_bound(ud, name)
    if before is not None:
        had = as_map(before.get("spec")).get("replicas")
        if type(had) is int:
            bound = max(bound, had)
    if replicas > bound:
        return f"spec.replicas: {replicas} is more than the UnitedDeployment asks of subset " \
               f"{name!r} ({bound})"
    template = as_map(as_map(spec.get("template")).get("metadata"))
    revision = as_str(as_map(template.get("labels")).get(REVISION_LABEL))
    try:
        rendered = render_workload(ud, subset, existing=None, revision=revision,
                                   replicas=replicas, partition=0)
    except (PatchError, ValueError) as exc:
        return f"subset {name!r} cannot be rendered from the UnitedDeployment: {exc}"
    expected, found = _template_part(rendered["spec"]), _template_part(spec)
    for key in sorted(expected.keys() | found.keys()):
        if expected.get(key) != found.get(key):
            return (f"spec.{key} is not what the UnitedDeployment's template makes of subset "
                    f"{name!r}")
    return ""


def revision_follows(governor: JSON, written: JSON, before: JSON | None) -> str:
    """Why ``written`` (a ControllerRevision) does not record the UD ``governor``; ``""``."""
    ud = from_object(governor)
    if (api_group(as_str(written.get("apiVersion"))), as_str(written.get("kind"))) != (
            "apps", "ControllerRevision"):
        return "kind: not a ControllerRevision of apps"
    why = _placed(ud, governor, written)
    if why:
        return why
    data = written.get("data")
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError:
            return "data: not JSON"
    if _settled(data) != _settled(json.loads(revision_data(ud.template))):
        return "data: not the UnitedDeployment's template"
    return ""


def _placed(ud: UnitedDeployment, governor: JSON, written: JSON) -> str:
    """Why ``written`` is not in the UD's namespace under the UD as its one controller."""
    namespace = as_str(as_map(governor.get("metadata")).get("namespace"))
    metadata = as_map(written.get("metadata"))
    if as_str(metadata.get("namespace")) != namespace:
        return (f"metadata.namespace: {as_str(metadata.get('namespace'))!r}, the "
                f"UnitedDeployment is in {namespace!r}")
    controllers = [r for r in owner_references(written) if r.get("controller") is True]
    identity = identity_of(written)
    if identity is not None:
        # In another cluster: it names the UD instead, and no controller may claim it.
        if controllers or (identity.namespace, identity.name, identity.uid) != (
                namespace, ud.name, ud.uid):
            return (f"metadata.annotations[{IDENTITY_ANNOTATION}]: it must name the "
                    f"UnitedDeployment {ud.name!r} (uid {ud.uid!r}) and no controller")
        return ""
    mine = [r for r in controllers
            if api_group(as_str(r.get("apiVersion"))) == api_group(API_VERSION)
            and r.get("kind") == KIND and r.get("name") == ud.name and r.get("uid") == ud.uid]
    if len(controllers) != 1 or len(mine) != 1:
        return (f"metadata.ownerReferences: its controller must be the UnitedDeployment "
                f"{ud.name!r} (uid {ud.uid!r})")
    return ""


def _replica_bound(ud: UnitedDeployment, subset_name: str) -> int:
    """The most replicas the UD may ask of one subset."""
    total = ud.replicas
    if total is None:
        total = sum(specified_replicas(ud).values())
    subset = ud.subset(subset_name)
    maximum = INT32_MAX
    if subset is not None and subset.max_replicas is not None:
        maximum = subset_bounds(total, subset).maximum
    return max(0, min(total, maximum))


def _template_part(spec: JSON) -> dict[str, Any]:
    """``spec`` without :data:`ALLOCATED`, settled as a merge patch would leave it."""
    out: dict[str, Any] = _settled(spec)
    for path in ALLOCATED:
        _drop(out, path)
    return out


def _settled(value: Any) -> Any:
    """``value`` with its ``null`` map entries gone, as a merge patch writes it."""
    return merge_patch.apply({}, value) if isinstance(value, Mapping) else value


def _drop(obj: dict[str, Any], path: tuple[str, ...]) -> None:
    """Remove ``path`` and the maps it leaves empty."""
    head, *rest = path
    if not rest:
        obj.pop(head, None)
        return
    child = obj.get(head)
    if isinstance(child, dict):
        _drop(child, tuple(rest))
        if not child:
            del obj[head]


def member_identified(plan: Plan, governor: JSON | None, target: JSON) -> str:
    """Whether a plan for a subset workload in a member is asked for by its UnitedDeployment in
    the host: the target names the plan's governor (cluster, namespace, name, uid), and the UD
    as read has the target's subset in the plan's cluster (a create or patch), or does not (a
    delete: the UD is gone, replaced, being deleted, or its subset moved or went)."""
    identity = identity_of(target)
    ref = plan.governor
    if identity is None or ref is None:
        return (f"metadata.annotations[{IDENTITY_ANNOTATION}]: it names no UnitedDeployment "
                f"(with the labels {UID_LABEL} and {CLUSTER_LABEL} agreeing)")
    if (identity.cluster, identity.namespace, identity.name, identity.uid) != (
            plan.governor_cluster, ref.namespace, ref.name, ref.uid):
        return (f"metadata.annotations[{IDENTITY_ANNOTATION}]: it names the UnitedDeployment "
                f"{identity.namespace}/{identity.name} (uid {identity.uid!r}) of cluster "
                f"{identity.cluster!r}, not the plan's governor")
    subset = as_str(as_map(as_map(target.get("metadata")).get("labels")).get(SUBSET_NAME_LABEL))
    wanted = governor is not None and _asks_here(governor, identity.uid, subset, plan.cluster)
    if plan.verb == "delete":
        return "" if not wanted else (f"the UnitedDeployment still has subset {subset!r} in "
                                      f"cluster {plan.cluster!r}")
    if not wanted:
        return (f"the UnitedDeployment {ref.namespace}/{ref.name} has no subset {subset!r} "
                f"whose targetCluster is {plan.cluster!r}")
    return ""


def member_pod_identified(plan: Plan, governor: JSON | None, target: JSON) -> str:
    """Whether a pod label plan for a pod in a member (reservation's label) is the host's
    UnitedDeployment's: the UD as read is the plan's governor, selects the pod by its selector,
    and has the pod's subset in the plan's cluster."""
    ref = plan.governor
    if governor is None or ref is None:
        return "the governing UnitedDeployment is gone"
    metadata = as_map(governor.get("metadata"))
    labels = as_map(as_map(target.get("metadata")).get("labels"))
    subset = as_str(labels.get(SUBSET_NAME_LABEL))
    if not _asks_here(governor, ref.uid, subset, plan.cluster):
        return (f"the UnitedDeployment {as_str(metadata.get('namespace'))}/"
                f"{as_str(metadata.get('name'))} has no subset {subset!r} whose targetCluster "
                f"is {plan.cluster!r}")
    if not label_selector.matches(as_map(as_map(governor.get("spec")).get("selector")),
                                  {k: v for k, v in labels.items() if isinstance(v, str)}):
        return "metadata.labels: the UnitedDeployment's selector does not select the pod"
    return ""


def _asks_here(governor: JSON, uid: str, subset: str, cluster: str) -> bool:
    metadata = as_map(governor.get("metadata"))
    if as_str(metadata.get("uid")) != uid or metadata.get("deletionTimestamp"):
        return False
    found = from_object(governor).subset(subset) if subset else None
    return found is not None and found.target == cluster
