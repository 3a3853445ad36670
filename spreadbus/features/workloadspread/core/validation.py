"""Admission validation of a WorkloadSpread: every error, Kruise's paths and messages.

The checks follow Kruise's WorkloadSpread webhook in order (targetRef, subsets, scheduleStrategy,
adaptive, targetFilter, then conflicts with other WorkloadSpreads, then the update rules), and
reuse its exact messages, including its quirks: the maxReplicas checks stop the subset loop at the
first failure, and the percentage-sum rule is reported on ``spec.subsets[0]``. A subset's node
constraints are named in field paths as the object names them: ``requiredNodeSelectorTerm`` and
``preferredNodeSelectorTerms`` in a v1alpha1 object, as Kruise's v1alpha1 webhook named them,
``requiredNodeSelector`` and ``preferredNodeSelector`` in a v1beta1 one. An invalid
``maxReplicas`` carries its value, which Kruise's error shows as well.

Two deliberate additions: ``minReplicas`` (integer >= 0, not above an integer maxReplicas; a
percentage maxReplicas is only known at run time, where the minimum is capped by it), and type
errors for JSON values of the wrong type, which Kubernetes would reject while decoding. The input is
the decoded object as received; nothing here raises, whatever it is given.

Patch validation builds the target workload's pod template as Kruise does (a StatefulSet's or
CloneSet's one volume per volumeClaimTemplate added), merges the patch onto it with the real
strategic merge rules (so a container without its ``name`` merge key fails as in Kruise), then
checks the result as a pod spec, at ``spec.subsets[i].patch``: its containers
(:func:`~kubesemantics.workload_template_validation.validate_pod_spec`) and its volumes and
volume mounts (:mod:`kubesemantics.volume_validation`), so a mount naming no volume is refused;
narrower than Kruise's full ``ValidatePodSpec`` where those modules say so. The labels and
annotations a patch gives its pods are checked whether or not the workload exists yet, with the
API server's rules for a pod's metadata (qualified keys, label values, the annotations' total
size), since every pod of the subset would carry them; so
are the ``resources`` of each container the patch names, merged with that container's template
resources when the workload is known (quantities parse, requests within limits, ...), since a
pod the API server refuses for them would refuse every pod of the subset. A patch is at most
:data:`MAX_PATCH_BYTES` of JSON: every pod of the subset carries it, and the WorkloadSpread
travels whole on the bus.

Limits beyond Kruise, so an absurd object is refused before it costs anything: at most
:data:`MAX_SUBSETS` subsets (a longer list is one TooMany error, its items are not judged one by
one), and a subset name that is a valid label value (at most 63 characters, alphanumerics with
inner ``-``, ``_`` and ``.``): the name is written into every pod of the subset (the
``matched-workloadspread`` annotation) and is what tools select those pods by, Kruise's own
examples (``subset-a``, ``ACK``, ``ECI``) all follow the rule, and a name with a ``/`` can never
be taken for the controller's fake subset ``kruise.io/workloadspread-fake-subset-name``. The
annotations a patch gives its pods are counted with the ones every pod of the subset carries
anyway (the matched annotation; the template's, when the workload is known).

The module is long because the checks are one ordered pass that shares state (the first
maxReplicas type, the running percentage sum, early returns), as Kruise's single function does;
the Kubernetes scheduling-field checks it calls live in :mod:`.scheduling_validation`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubesemantics import strategic_merge
from kubesemantics.annotation_size import annotations_size, annotations_size_errors
from kubesemantics.field_errors import (
    FieldError,
    Path,
    invalid,
    required,
    too_many,
)
from kubesemantics.intstr import IntOrStrError, is_int, scaled_value
from kubesemantics.lenient_json import as_str
from kubesemantics.nesting import MAX_DEPTH, shorten, too_deep
from kubesemantics.qualified_names import is_qualified_name, is_valid_label_value
from kubesemantics.resource_requirements import validate_resource_requirements
from kubesemantics.scheduling_validation import (
    label_selector_error,
    type_error,
    validate_node_selector_term,
    validate_preferred_scheduling_terms,
    validate_tolerations,
)
from kubesemantics.update_validation import old_object_errors
from kubesemantics.volume_validation import validate_pod_volumes
from kubesemantics.workload_template_validation import validate_pod_spec
from spreadbus.features.workloadspread.core.custom_workloads import BUILTIN_KINDS, Whitelist
from spreadbus.features.workloadspread.core.model import (
    JSON,
    MATCHED_ANNOTATION,
    api_group,
    api_version_valid,
)
from spreadbus.features.workloadspread.core.pod_state import Matched

MAX_SCHEDULED_FAILED_SECONDS = 300
_INT32_MAX = 2**31 - 1
MAX_SUBSETS: Final = 100
"""Subsets one WorkloadSpread may have: each pod admitted is judged against every subset, and
each subset's status is written and kept; 100 is far above the domains one workload spreads
over (Kruise sets no number), while 10,000 would make every pod admission pay for them."""
_UID_SHAPE: Final = "00000000-0000-0000-0000-000000000000"
"""A uid as long as the API server's, the longest the matched annotation may carry."""

SPEC = Path("spec")
NO_CUSTOM_WORKLOADS = Whitelist()


def _subset_field(raw: Mapping[str, Any], beta: str, alpha: str) -> tuple[str, Any]:
    """The subset's value under either version's name, and the name it was given under, which
    its errors' paths then name."""
    return (alpha, raw[alpha]) if alpha in raw and beta not in raw else (beta, raw.get(beta))


def _target_ref_errors(
    ref: object, path: Path, whitelist: Whitelist
) -> tuple[list[FieldError], Mapping[str, Any] | None]:
    if ref is None:
        return [required(path, "no targetRef defined in WorkloadSpread")], None
    if not isinstance(ref, Mapping):
        return [type_error(path, "object", ref)], None
    errors: list[FieldError] = []
    fields = {}
    for name in ("apiVersion", "kind", "name"):
        value = ref.get(name)
        if value is not None and not isinstance(value, str):
            errors.append(type_error(path.child(name), "string", value))
            value = ""
        fields[name] = value or ""
    api_version, kind = fields["apiVersion"], fields["kind"]
    if not api_version or not fields["name"] or not kind:
        errors.append(invalid(path, "empty TargetReference is not valid for WorkloadSpread."))
        return errors, None
    group = api_group(api_version)
    if kind in BUILTIN_KINDS:
        if not api_version_valid(api_version) or group not in BUILTIN_KINDS[kind]:
            errors.append(invalid(path, f"TargetReference is not valid for {kind}."))
    elif not api_version_valid(api_version) or whitelist.find(group, kind) is None:
        errors.append(invalid(path, "TargetReference's GroupKind is not permitted."))
    return errors, fields


def _pod_template(workload: Mapping[str, Any]) -> JSON:
    """The workload's pod template as a Pod, plus one PVC volume per volumeClaimTemplate."""
    spec = workload.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    template = spec.get("template")
    template = template if isinstance(template, Mapping) else {}
    pod: JSON = {
        "metadata": copy.deepcopy(template.get("metadata") or {}),
        "spec": copy.deepcopy(template.get("spec") or {}),
    }
    claims = spec.get("volumeClaimTemplates")
    if workload.get("kind") in ("CloneSet", "StatefulSet") and isinstance(claims, list):
        volumes = pod["spec"].setdefault("volumes", [])
        for claim in claims:
            name = (claim.get("metadata") or {}).get("name") if isinstance(claim, Mapping) else None
            if isinstance(name, str) and isinstance(volumes, list):
                volumes.append({"name": name, "persistentVolumeClaim": {"claimName": name}})
    return pod


def _template_annotations(workload: Mapping[str, Any] | None) -> dict[str, object]:
    """The annotations of the workload's pod template (none while the workload is unknown)."""
    spec = workload.get("spec") if workload is not None else None
    template = spec.get("template") if isinstance(spec, Mapping) else None
    meta = template.get("metadata") if isinstance(template, Mapping) else None
    given = meta.get("annotations") if isinstance(meta, Mapping) else None
    return {str(k): v for k, v in given.items()} if isinstance(given, Mapping) else {}


def _pod_annotations(template: Mapping[str, object], ws_name: str,
                     subset_name: str) -> dict[str, object]:
    """The annotations every pod of the subset carries before its patch: the template's and the
    matched annotation the injection adds."""
    annotations = dict(template)
    annotations[MATCHED_ANNOTATION] = Matched(
        name=ws_name, subset=subset_name, uid=_UID_SHAPE).to_annotation()
    return annotations


def _patch_metadata_errors(patch: object, path: Path,
                           base: Mapping[str, object]) -> list[FieldError]:
    """The labels and annotations a subset patch gives its pods, judged as the API server will
    judge the pods: without this a bad key or value is accepted here and every pod created in
    the subset is then refused. ``base`` is what the pods carry besides (see
    :func:`_pod_annotations`)."""
    metadata = patch.get("metadata") if isinstance(patch, Mapping) else None
    if not isinstance(metadata, Mapping):
        return []
    errors: list[FieldError] = []
    labels = metadata.get("labels")
    if isinstance(labels, Mapping):
        lp = path.child("metadata", "labels")
        for key, value in labels.items():
            for message in is_qualified_name(str(key)):
                errors.append(invalid(lp, f"{key!s}: {message}"))
            if value is not None and not isinstance(value, str):
                errors.append(type_error(lp.child(str(key)), "string", value))
            elif isinstance(value, str):
                for message in is_valid_label_value(value):
                    errors.append(invalid(lp, f"{value}: {message}"))
    annotations = metadata.get("annotations")
    if isinstance(annotations, Mapping):
        ap = path.child("metadata", "annotations")
        merged = dict(base)
        for key, value in annotations.items():
            for message in is_qualified_name(str(key).lower()):
                errors.append(invalid(ap, f"{key!s}: {message}"))
            if value is not None and not isinstance(value, str):
                errors.append(type_error(ap.child(str(key)), "string", value))
            if value is None:
                merged.pop(str(key), None)
            else:
                merged[str(key)] = value
        errors.extend(annotations_size_errors(annotations_size(merged), ap))
    return errors


MAX_PATCH_BYTES = 512 * 1024
"""Bytes of compact JSON one subset patch may take: twice the annotations a pod may carry, so
every patch a pod could take fits, and a WorkloadSpread with a few such subsets stays far below
the bus's 8 MB ``max_payload`` (the API server's own object limit, 1.5 MiB, is lower still)."""


def _patch_size_errors(patch: object, path: Path) -> list[FieldError]:
    try:
        size = len(json.dumps(patch, separators=(",", ":"), ensure_ascii=False).encode())
    except (TypeError, ValueError):  # not JSON at all: the other checks name it
        return []
    if size <= MAX_PATCH_BYTES:
        return []
    return [FieldError(str(path), "TooLong",
                       f"may not be more than {MAX_PATCH_BYTES} bytes of JSON (it is {size})")]


def _named_containers(spec: object, list_name: str) -> list[tuple[int, str, Mapping[str, Any]]]:
    items = spec.get(list_name) if isinstance(spec, Mapping) else None
    if not isinstance(items, list):
        return []
    return [
        (i, c["name"], c)
        for i, c in enumerate(items)
        if isinstance(c, Mapping) and isinstance(c.get("name"), str)
    ]


def _patch_resource_errors(
    patch: object, path: Path, workload: Mapping[str, Any] | None
) -> list[FieldError]:
    """The resources of every container the patch names, as the pods will have them: the
    patch merged onto the workload's template (onto nothing when the workload is unknown)."""
    if not isinstance(patch, Mapping):
        return []
    base: JSON = _pod_template(workload) if workload is not None else {"metadata": {}, "spec": {}}
    try:
        merged = strategic_merge.apply(base, patch, strategic_merge.meta_for_kind("Pod"))
    except (strategic_merge.PatchError, TypeError, ValueError, AttributeError):
        return []  # reported by the merge check when the workload is known
    merged_spec = merged.get("spec") if isinstance(merged, Mapping) else None
    errors: list[FieldError] = []
    for list_name in ("initContainers", "containers"):
        result = {name: c for _, name, c in _named_containers(merged_spec, list_name)}
        for i, name, _ in _named_containers(patch.get("spec"), list_name):
            container = result.get(name)
            if container is not None:
                errors.extend(validate_resource_requirements(
                    container.get("resources"),
                    path.child("spec", list_name).index(i).child("resources"),
                ))
    return errors


def _patch_errors(patch: object, path: Path, workload: Mapping[str, Any]) -> list[FieldError]:
    """Merge the patch onto the workload's pod template (with its claim templates' volumes),
    then check the pod spec it yields as a whole, as Kruise's ``ValidatePodSpec`` call does."""
    if not isinstance(patch, Mapping):
        return [
            invalid(path, "failed to merge patch: a strategic merge patch must be a JSON object")
        ]
    try:
        merged = strategic_merge.apply(
            _pod_template(workload), patch, strategic_merge.meta_for_kind("Pod")
        )
    except (strategic_merge.PatchError, TypeError, ValueError, AttributeError) as exc:
        return [invalid(path, f"failed to merge patch: {exc}")]
    spec = merged.get("spec") if isinstance(merged, Mapping) else None
    return validate_pod_spec(spec, path) + validate_pod_volumes(spec, path)


def _min_replicas_errors(subset: Mapping[str, Any], path: Path) -> list[FieldError]:
    if "minReplicas" not in subset or subset["minReplicas"] is None:
        return []
    minimum = subset["minReplicas"]
    if not is_int(minimum):
        return [invalid(path, "minReplicas must be an integer")]
    if minimum < 0:
        return [invalid(path, "minReplicas must be greater than or equal to 0")]
    maximum = subset.get("maxReplicas")
    if is_int(maximum) and minimum > maximum:
        return [invalid(path, "minReplicas must not be greater than maxReplicas")]
    return []


def _subset_name_errors(name: object, p: Path, names: set[str]) -> list[FieldError]:
    if name is not None and not isinstance(name, str):
        return [type_error(p, "string", name)]
    if not name:
        return [invalid(p, "")]
    errors: list[FieldError] = []
    if name in names:
        errors.append(invalid(p, f"duplicated subset name {name}"))
    names.add(name)
    problems = is_valid_label_value(name)
    if problems:
        errors.append(invalid(p, f"invalid subset name {', '.join(problems)}"))
    return errors


def _subsets_errors(
    subsets: object, path: Path, *, target_kind: str, workload: Mapping[str, Any] | None,
    ws_name: str,
) -> list[FieldError]:
    if subsets is not None and not isinstance(subsets, list):
        return [type_error(path, "array", subsets)]
    if not subsets:
        return [required(path, "subsets number must >= 1 in WorkloadSpread")]
    if len(subsets) > MAX_SUBSETS:
        return [too_many(path, MAX_SUBSETS)]  # one error; the items are not judged one by one
    template_annotations = _template_annotations(workload)
    errors: list[FieldError] = []
    names: set[str] = set()
    percent_sum = 0
    first_type: str | None = None
    raw_subsets = [s if isinstance(s, Mapping) else None for s in subsets]
    for i, subset in enumerate(raw_subsets):
        p = path.index(i)
        if subset is None:
            errors.append(type_error(p, "object", subsets[i]))
            continue
        name = subset.get("name")
        errors.extend(_subset_name_errors(name, p.child("name"), names))
        named, required_term = _subset_field(subset, "requiredNodeSelector",
                                             "requiredNodeSelectorTerm")
        if required_term is not None:
            errors.extend(
                validate_node_selector_term(
                    required_term, p.child(named), allow_invalid_label_value=False
                )
            )
        named, preferred = _subset_field(subset, "preferredNodeSelector",
                                         "preferredNodeSelectorTerms")
        if preferred is not None:
            errors.extend(validate_preferred_scheduling_terms(preferred, p.child(named)))
        if subset.get("tolerations") is not None:
            errors.extend(validate_tolerations(subset["tolerations"], p.child("tolerations")))
        patch = subset.get("patch")
        too_big = _patch_size_errors(patch, p.child("patch")) if patch is not None else []
        errors.extend(too_big)
        if patch is not None and not too_big:
            errors.extend(_patch_metadata_errors(
                patch, p.child("patch"),
                _pod_annotations(template_annotations, ws_name,
                                 name if isinstance(name, str) else "")))
            errors.extend(_patch_resource_errors(patch, p.child("patch"), workload))
            if workload is not None:
                errors.extend(_patch_errors(patch, p.child("patch"), workload))
        errors.extend(_min_replicas_errors(subset, p.child("minReplicas")))

        maximum = subset.get("maxReplicas")
        if maximum is None:
            continue
        mp = p.child("maxReplicas")
        if isinstance(maximum, bool) or not isinstance(maximum, int | str):
            errors.append(invalid(mp, "maxReplicas is not valid for subset", maximum))
            return errors
        this_type = "Int" if is_int(maximum) else "String"
        if first_type is None:
            first_type = this_type
        elif this_type != first_type:
            errors.append(invalid(mp, "the maxReplicas type of all subsets must be the same"))
            return errors
        if target_kind == "StatefulSet" and this_type != "Int":
            errors.append(invalid(mp, "the maxReplicas type must be Int for StatefulSet"))
            return errors
        try:
            value = scaled_value(maximum, 100, round_up=True)
        except IntOrStrError:
            value = -1
        if value < 0 or (this_type == "Int" and value > _INT32_MAX):
            errors.append(invalid(mp, "maxReplicas is not valid for subset", maximum))
            return errors
        if this_type == "String":
            percent_sum += value
            if percent_sum > 100:
                errors.append(
                    invalid(mp, "the sum of all subset's maxReplicas exceeds 100% is no permitted")
                )
                return errors
    last = raw_subsets[-1]
    if (
        first_type == "String"
        and percent_sum < 100
        and last is not None
        and last.get("maxReplicas") is not None
    ):
        errors.append(
            invalid(
                path.index(0).child("maxReplicas"),
                "maxReplicas sum of all subsets must equal 100% when type is specified as percent",
            )
        )
    return errors


def _strategy_errors(strategy: object, subsets: object, path: Path) -> list[FieldError]:
    if strategy is None:
        return []
    if not isinstance(strategy, Mapping):
        return [type_error(path, "object", strategy)]
    errors: list[FieldError] = []
    type_ = strategy.get("type")
    if type_ is not None and not isinstance(type_, str):
        errors.append(type_error(path.child("type"), "string", type_))
        type_ = None
    if type_ not in (None, "", "Fixed", "Adaptive"):
        errors.append(invalid(path.child("type"), "ScheduleStrategy's type is not valid"))
    adaptive = strategy.get("adaptive")
    if adaptive is None:
        return errors
    if not isinstance(adaptive, Mapping):
        return [*errors, type_error(path.child("adaptive"), "object", adaptive)]
    if type_ != "Adaptive":
        errors.append(
            invalid(
                path.child("type"),
                "the scheduleStrategy's type must be adaptive when using adaptive scheduleStrategy",
            )
        )
    count = len(subsets) if isinstance(subsets, list) else 0
    last = subsets[-1] if isinstance(subsets, list) and subsets else None
    if count > 1 and isinstance(last, Mapping) and last.get("maxReplicas") is not None:
        errors.append(
            invalid(
                path.child("adaptive"),
                "the last subset's maxReplicas must be not specified when using adaptive "
                "scheduleStrategy",
            )
        )
    allowed = _INT32_MAX if count <= 1 else (MAX_SCHEDULED_FAILED_SECONDS - 5) // (count - 1)
    seconds = adaptive.get("rescheduleCriticalSeconds")
    sp = path.child("adaptive", "rescheduleCriticalSeconds")
    if seconds is not None and not is_int(seconds):
        errors.append(type_error(sp, "integer", seconds))
    elif seconds is not None and (seconds < 0 or seconds > allowed):
        errors.append(
            invalid(
                sp,
                f"rescheduleCriticalSeconds < 0 or rescheduleCriticalSeconds > {allowed} "
                "is not permitted",
            )
        )
    return errors


def _target_filter_errors(target_filter: object, path: Path) -> list[FieldError]:
    if target_filter is None:
        return []
    if not isinstance(target_filter, Mapping):
        return [type_error(path, "object", target_filter)]
    errors: list[FieldError] = []
    message = label_selector_error(target_filter.get("selector"))
    if message is not None:
        errors.append(invalid(path, message))
    paths = target_filter.get("replicasPathList")
    if paths is not None and (
        not isinstance(paths, list) or not all(isinstance(p, str) for p in paths)
    ):
        errors.append(type_error(path.child("replicasPathList"), "array of strings", paths))
    return errors


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _target_key(obj: object) -> tuple[str, str, str] | None:
    if not isinstance(obj, Mapping):
        return None
    spec = obj.get("spec")
    ref = spec.get("targetRef") if isinstance(spec, Mapping) else None
    if not isinstance(ref, Mapping):
        return None
    api_version, kind, name = (ref.get(k) for k in ("apiVersion", "kind", "name"))
    if not all(isinstance(v, str) for v in (api_version, kind, name)):
        return None
    return (api_group(str(api_version)), str(kind), str(name))


def conflict_errors(obj: Mapping[str, Any], others: Sequence[object]) -> list[FieldError]:
    """The first other WorkloadSpread in the namespace that targets the same workload."""
    mine = _target_key(obj)
    if mine is None:
        return []
    namespace = _meta(obj).get("namespace") or "default"
    name = _meta(obj).get("name")
    for other in others:
        if not isinstance(other, Mapping):
            continue
        meta = _meta(other)
        if (meta.get("namespace") or "default") != namespace or meta.get("name") == name:
            continue
        if _target_key(other) == mine:
            return [
                invalid(
                    SPEC.child("targetRef"),
                    "ws.spec.targetRef is in conflict with other WorkloadSpread "
                    f"{meta.get('name')}",
                )
            ]
    return []


def update_errors(obj: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """Name and namespace are immutable; targetRef may change its version only."""
    errors: list[FieldError] = []
    new_meta, old_meta = _meta(obj), _meta(old)
    for name in ("name", "namespace"):
        if (new_meta.get(name) or "") != (old_meta.get(name) or ""):
            errors.append(invalid(Path("metadata").child(name), "field is immutable"))
    new_key, old_key = _target_key(obj), _target_key(old)
    if new_key is not None and old_key is not None and new_key != old_key:
        errors.append(
            invalid(
                SPEC.child("targetRef"),
                "change TargetReference is not permitted for WorkloadSpread",
            )
        )
    return errors


def validate_spec(
    obj: Mapping[str, Any], *, whitelist: Whitelist, workload: Mapping[str, Any] | None
) -> list[FieldError]:
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return [type_error(SPEC, "object", spec)]
    errors, ref = _target_ref_errors(spec.get("targetRef"), SPEC.child("targetRef"), whitelist)
    errors.extend(
        _subsets_errors(
            spec.get("subsets"),
            SPEC.child("subsets"),
            target_kind=(ref or {}).get("kind", "") if ref else "",
            workload=workload,
            ws_name=as_str(_meta(obj).get("name")),
        )
    )
    errors.extend(
        _strategy_errors(
            spec.get("scheduleStrategy"), spec.get("subsets"), SPEC.child("scheduleStrategy")
        )
    )
    errors.extend(_target_filter_errors(spec.get("targetFilter"), SPEC.child("targetFilter")))
    return errors


def validate_workloadspread(
    obj: object,
    *,
    others: Sequence[object] = (),
    old: object | None = None,
    whitelist: Whitelist = NO_CUSTOM_WORKLOADS,
    workload: Mapping[str, Any] | None = None,
) -> list[FieldError]:
    """Every error for a WorkloadSpread CREATE (``old`` None) or UPDATE; never raises.

    ``others`` are the other WorkloadSpreads (any namespace; only the object's own namespace is
    compared), ``workload`` the target workload if it exists (patches are checked only then, as
    Kruise does).
    """
    if not isinstance(obj, Mapping):
        return [type_error(Path(""), "object", obj)]
    deep = too_deep(obj)
    if deep is not None:  # the rules below walk values recursively
        return [invalid(Path(shorten(deep)), f"must not nest deeper than {MAX_DEPTH} levels")]
    errors = validate_spec(obj, whitelist=whitelist, workload=workload)
    errors.extend(conflict_errors(obj, others))
    errors.extend(old_object_errors(obj, old, update_errors))
    return errors
