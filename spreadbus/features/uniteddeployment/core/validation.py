"""Admission validation of a UnitedDeployment: every error, Kruise's paths, messages and order.

The checks run in the order of Kruise's validating webhook: object metadata; ``spec.replicas``;
the selector; reservation mode against stateful templates; the template (how many are given, its
labels against the selector, the workload's own rules, the pod template); the subsets' replica
fields; each subset's name, node selector term, tolerations and Adaptive rule; the update
strategy. An UPDATE then adds the update rules: metadata immutability, the template fields a
StatefulSet or Advanced StatefulSet may change, and subsets whose ``nodeSelectorTerm`` or
``tolerations`` changed (the tolerations error twice, as Kruise emits it).

Where Kruise v1.9.0 and its later fixes differ, this follows the fixes, as the reference does: a
bad ``minReplicas``/``maxReplicas`` is reported on its own field, a minimum above the maximum
reads "must be less than or equal to maxReplicas", an unknown ``updateStrategy.type`` is
NotSupported at ``spec.updateStrategy.type``, an unknown partition key is reported at
``spec.updateStrategy.manualUpdate.partitions``, and a StatefulSet template is checked as a
StatefulSet spec (with the UnitedDeployment's selector). Kruise prints a Go pointer where its
sum messages mean ``spec.replicas``; these print the number.

Beyond Kruise: a JSON value of the wrong type is an error naming its field (Kruise's decoder
would refuse the whole request), the pod templates of StatefulSet and Advanced StatefulSet
templates get the container checks a Deployment template gets, and ``spec.namespace`` is not
required (the API server fills it in before any webhook sees the object). The input is the
decoded object as received; nothing here raises, whatever it is given.

Limits that stop an absurd object before it costs anything: at most :data:`MAX_SUBSETS` subsets
(a longer list is one TooMany error, its items are not judged one by one); ``spec.replicas``,
``revisionHistoryLimit`` and the partitions within int32, as Kruise's types hold them; and the
annotations each subset's workload and pod template would carry (the template's, the
``apps.kruise.io/subset-patch`` annotation, the patch's) within the API server's 256 KiB, since
every write of that subset would be refused otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from kubesemantics import label_selector
from kubesemantics.annotation_size import annotations_size, annotations_size_errors
from kubesemantics.field_errors import (
    FieldError,
    Path,
    forbidden,
    invalid,
    not_supported,
    required,
    too_many,
)
from kubesemantics.intstr import is_int
from kubesemantics.lenient_json import as_map, as_str
from kubesemantics.nesting import MAX_DEPTH, shorten, too_deep
from kubesemantics.qualified_names import is_dns1123_label, is_dns1123_subdomain
from kubesemantics.scheduling_validation import (
    type_error,
    validate_node_selector_term,
    validate_tolerations,
)
from kubesemantics.update_validation import old_object_errors
from kubesemantics.workload_template_validation import (
    SELECTOR_MISMATCH,
    nonnegative,
    selects,
    validate_labels,
    validate_statefulset_spec,
    validate_template_for_replicaset,
    validate_template_for_statefulset,
)
from spreadbus.features.uniteddeployment.core.model import ADAPTIVE, FIXED, MANUAL, TEMPLATE_KINDS
from spreadbus.features.uniteddeployment.core.rendering import SUBSET_PATCH_ANNOTATION
from spreadbus.features.uniteddeployment.core.replicas import (
    INT32_MAX,
    INT32_MIN,
    SubsetReplicasError,
    parse_subset_replicas,
)
from spreadbus.features.uniteddeployment.core.revision import go_json
from spreadbus.features.uniteddeployment.core.target_clusters import (
    cluster_errors,
    control_plane_errors,
)

SPEC = Path("spec")
METADATA = Path("metadata")
UNLIMITED_MAX = 1_000_000
"""What an unset ``maxReplicas`` counts as in the sum of maxima."""
MAX_SUBSETS: Final = 100
"""Subsets one UnitedDeployment may have. Each subset is a workload the planner creates, sizes
and watches, so the list is what one object costs; a subset is a failure or cost domain (a zone,
a node pool, a cluster), and 100 is far above the domains one workload spreads over. Neither
Kruise nor Kubernetes sets a number here; the planner's bound on outstanding creates is above it,
so a valid UnitedDeployment creates all its workloads in one round."""

_ONE_TEMPLATE = (
    "statefulSetTemplate, advancedStatefulSetTemplate, cloneSetTemplate, or deploymentTemplate"
)
_STATEFUL_SPEC_MUTABLE = (
    "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy", "minReadySeconds",
    "ordinals",
)


def _object_field(parent: Mapping[str, Any], key: str, path: Path,
                  errors: list[FieldError]) -> Mapping[str, Any]:
    """An optional object field; another JSON type is reported and read as absent."""
    value = parent.get(key)
    if value is not None and not isinstance(value, Mapping):
        errors.append(type_error(path, "object", value))
        return {}
    return value or {}


def _int32_errors(value: object, path: Path) -> list[FieldError]:
    """An integer Kruise holds as int32: its decoder refuses any other, so it is refused here
    with the bound it broke (a negative one has its own rule where Kruise has one)."""
    if not is_int(value):
        return []
    assert isinstance(value, int)
    if value > INT32_MAX:
        return [invalid(path, f"must be less than or equal to {INT32_MAX}")]
    if value < INT32_MIN:
        return [invalid(path, f"must be greater than or equal to {INT32_MIN}")]
    return []


# -- metadata ----------------------------------------------------------------------------------

def _metadata_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateObjectMeta`` as far as a client controls it: a name (or generateName) that is a
    DNS subdomain, and valid labels."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        if meta is None:
            return [required(METADATA.child("name"), "name or generateName is required")]
        return [type_error(METADATA, "object", meta)]
    errors: list[FieldError] = []
    name, generate = meta.get("name"), meta.get("generateName")
    if name is not None and not isinstance(name, str):
        errors.append(type_error(METADATA.child("name"), "string", name))
    elif generate is not None and not isinstance(generate, str):
        errors.append(type_error(METADATA.child("generateName"), "string", generate))
    elif name:
        errors.extend(invalid(METADATA.child("name"), m) for m in is_dns1123_subdomain(name))
    elif generate:
        prefix = generate[:-1] if generate.endswith("-") else generate
        errors.extend(
            invalid(METADATA.child("generateName"), m) for m in is_dns1123_subdomain(prefix))
    else:
        errors.append(required(METADATA.child("name"), "name or generateName is required"))
    errors.extend(validate_labels(meta.get("labels"), METADATA.child("labels")))
    return errors


def _metadata_update_errors(obj: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    new_meta, old_meta = as_map(obj.get("metadata")), as_map(old.get("metadata"))
    return [
        invalid(METADATA.child(key), "field is immutable")
        for key in ("name", "namespace")
        if (new_meta.get(key) or "") != (old_meta.get(key) or "")
    ]


# -- selector and template ---------------------------------------------------------------------

def _selector_error(path: Path, detail: str) -> FieldError:
    """``ValidateLabelSelector``'s reasons: values missing for In/NotIn are Required, values
    given to Exists/DoesNotExist Forbidden, the rest Invalid."""
    if detail.startswith("must be specified"):
        return required(path, detail)
    if detail.startswith("may not be specified"):
        return forbidden(path, detail)
    return invalid(path, detail)


def _selector_errors(selector: object, path: Path) -> list[FieldError]:
    if selector is None:
        return [required(path, "")]
    if not isinstance(selector, Mapping):
        return [type_error(path, "object", selector)]
    errors = [
        _selector_error(Path(where), detail)
        for where, detail in label_selector.validate_label_selector(selector, str(path))
    ]
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        errors.append(invalid(path, "empty selector is invalid for statefulset"))
    return errors


def _selector_compiles(selector: object) -> bool:
    if selector is None:
        return True  # ``LabelSelectorAsSelector(nil)`` is the selector of nothing, not an error
    if not isinstance(selector, Mapping):
        return False
    try:
        label_selector.from_label_selector(selector)
    except (label_selector.SelectorError, AttributeError, TypeError):
        return False
    return True


def _kind_rules(workload: Mapping[str, Any], kind: str, path: Path,
                errors: list[FieldError]) -> Mapping[str, Any]:
    """The replicas and partition a UnitedDeployment would override; the workload spec."""
    spec = _object_field(workload, "spec", path.child("spec"), errors)
    replicas = spec.get("replicas")
    if replicas is not None:
        errors.append(invalid(path.child("spec", "replicas"),
                              f"replicas in {kind} will not be used"))
    if kind == "deploymentTemplate":
        return spec
    strategy = as_map(spec.get("updateStrategy"))
    rolling = strategy.get("rollingUpdate")
    if (strategy.get("type") == "RollingUpdate" and isinstance(rolling, Mapping)
            and rolling.get("partition") is not None):
        errors.append(invalid(path.child("spec", "updateStrategy", "rollingUpdate", "partition"),
                              f"partition in {kind} will not be used"))
    return spec


def _template_errors(template: object, selector: Mapping[str, Any] | None,
                     path: Path) -> list[FieldError]:
    if template is not None and not isinstance(template, Mapping):
        return [type_error(path, "object", template)]
    template = as_map(template)
    errors: list[FieldError] = []
    given = []
    for kind in TEMPLATE_KINDS:
        value = template.get(kind)
        if value is None:
            continue
        if not isinstance(value, Mapping):
            errors.append(type_error(path.child(kind), "object", value))
            continue
        given.append(kind)
    if not given and not errors:
        errors.append(required(path, f"should provide one of {_ONE_TEMPLATE}"))
    elif len(given) > 1:
        errors.append(invalid(path, f"should provide only one of {_ONE_TEMPLATE}"))
    # Kruise validates the first of StatefulSet, Advanced StatefulSet and Deployment given;
    # a CloneSet template is left to the CloneSet's own webhook.
    checked = next((k for k in given if k != "cloneSetTemplate"), None)
    if checked is None:
        return errors
    kind = checked
    workload = template[kind]
    labels = as_map(workload.get("metadata")).get("labels")
    if not selects(selector, labels):
        # Kruise reports an Advanced StatefulSet's mismatch under ``statefulSetTemplate``.
        shown = "deploymentTemplate" if kind == "deploymentTemplate" else "statefulSetTemplate"
        errors.append(invalid(path.child(shown, "metadata", "labels"), SELECTOR_MISMATCH))
    wp = path.child(kind)
    spec = _kind_rules(workload, kind, wp, errors)
    if kind == "statefulSetTemplate":
        errors.extend(validate_statefulset_spec(spec, selector, wp.child("spec")))
    elif kind == "advancedStatefulSetTemplate":
        errors.extend(validate_template_for_statefulset(
            spec.get("template"), selector, wp.child("spec", "template")))
    else:
        errors.extend(validate_template_for_replicaset(
            spec.get("template"), selector, wp.child("spec", "template")))
    return errors


# -- annotations the subsets' writes carry -----------------------------------------------------

def _string_keys(value: object) -> dict[str, object]:
    return {str(k): v for k, v in value.items()} if isinstance(value, Mapping) else {}


class _TemplateAnnotations:
    """The annotations every subset's workload and pod template start from (the one template
    given; none when it is not one)."""

    def __init__(self, template: object) -> None:
        template = as_map(template)
        kind = next((k for k in TEMPLATE_KINDS if isinstance(template.get(k), Mapping)), "")
        workload = as_map(template.get(kind))
        self.workload_path = SPEC.child("template", kind, "metadata", "annotations")
        self.pod_path = SPEC.child("template", kind, "spec", "template", "metadata",
                                   "annotations")
        self.workload = _string_keys(as_map(workload.get("metadata")).get("annotations"))
        pod_template = as_map(as_map(workload.get("spec")).get("template"))
        self.pod = _string_keys(as_map(pod_template.get("metadata")).get("annotations"))
        self.workload_size = annotations_size(self.workload)

    def errors(self) -> list[FieldError]:
        """The template's own annotations beyond the limit (then no subset is judged)."""
        return [*annotations_size_errors(self.workload_size, self.workload_path),
                *annotations_size_errors(annotations_size(self.pod), self.pod_path)]


def _subset_annotation_errors(patch: object, p: Path,
                              template: _TemplateAnnotations) -> list[FieldError]:
    """The subset's workload carries the template's annotations and the subset-patch annotation
    (the patch as JSON); its pod template the template's pod annotations with the patch's."""
    if not isinstance(patch, Mapping):
        return []
    try:
        patch_text = go_json(patch)
    except (TypeError, ValueError, OverflowError):  # not JSON: its type error is reported
        return []
    workload = dict(template.workload)
    workload[SUBSET_PATCH_ANNOTATION] = patch_text
    pod = dict(template.pod)
    for key, value in _string_keys(as_map(patch.get("metadata")).get("annotations")).items():
        if value is None:
            pod.pop(key, None)
        else:
            pod[key] = value
    over = max(annotations_size(workload), annotations_size(pod))
    return annotations_size_errors(over, p.child("patch"))


# -- subsets -----------------------------------------------------------------------------------

def _parsed(total: int, value: object, path: Path, errors: list[FieldError]) -> int:
    try:
        return parse_subset_replicas(total, value)
    except SubsetReplicasError as exc:
        errors.append(invalid(path, str(exc)))
        return 0


def _subset_replicas_errors(replicas: int | None, subsets: Sequence[Mapping[str, Any]],
                            path: Path) -> list[FieldError]:
    """Kruise's ``validateSubsetReplicas``: parse errors per field, then the mode's sums."""
    total = -1 if replicas is None else replicas
    errors: list[FieldError] = []
    sum_fixed = sum_min = sum_max = 0
    count_fixed = count_max = 0
    fixed_mode = elastic_mode = False
    for i, subset in enumerate(subsets):
        p = path.index(i)
        fixed = 0
        if subset.get("replicas") is not None:
            count_fixed += 1
            fixed_mode = True
            fixed = _parsed(total, subset["replicas"], p.child("replicas"), errors)
        sum_fixed += fixed
        minimum = 0
        if subset.get("minReplicas") is not None:
            elastic_mode = True
            minimum = _parsed(total, subset["minReplicas"], p.child("minReplicas"), errors)
        sum_min += minimum
        maximum = UNLIMITED_MAX
        if subset.get("maxReplicas") is not None:
            count_max += 1
            elastic_mode = True
            maximum = _parsed(total, subset["maxReplicas"], p.child("maxReplicas"), errors)
        sum_max += maximum
        if minimum > maximum:
            errors.append(invalid(p.child("minReplicas"),
                                  f"subset[{i}].minReplicas must be less than or equal to "
                                  "maxReplicas"))
    if fixed_mode and elastic_mode:
        errors.append(invalid(path, "subset.Replicas and subset.MinReplicas/subset.MaxReplicas "
                                    "are mutually exclusive in a UnitedDeployment"))
        return errors
    if elastic_mode:
        if total == -1:
            errors.append(invalid(path, "spec.replicas must be not empty if you set "
                                        "subset.minReplicas/maxReplicas"))
        if count_max >= len(subsets):
            errors.append(invalid(path, "at least one subset.maxReplicas must be empty"))
        if sum_min > sum_max:
            errors.append(invalid(path, "sum of indicated subset.minReplicas should not be "
                                        "greater than sum of indicated subset.maxReplicas"))
    elif total != -1:
        if sum_fixed > total:
            errors.append(invalid(path, f"sum of indicated subset replicas {sum_fixed} should "
                                        f"not be greater than UnitedDeployment replicas "
                                        f"{total}"))
        if 0 < count_fixed == len(subsets) and sum_fixed != total:
            errors.append(invalid(path, "if replicas of all subsets are provided, the sum of "
                                        f"indicated subset replicas {sum_fixed} should equal "
                                        f"UnitedDeployment replicas {total}"))
    elif count_fixed != len(subsets):
        errors.append(invalid(path, "if UnitedDeployment replicas is not provided, replicas of "
                                    "all subsets should be provided"))
    return errors


def _subset_errors(subset: Mapping[str, Any], p: Path, names: set[str], *,
                   adaptive: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    name = subset.get("name")
    if name is not None and not isinstance(name, str):
        errors.append(type_error(p.child("name"), "string", name))
    else:
        name = name or ""
        if not name:
            errors.append(required(p.child("name"), ""))
        if name in names:
            errors.append(invalid(p.child("name"), f"duplicated subset name {name}"))
        names.add(name)
        problems = is_dns1123_label(name)
        if problems:
            errors.append(invalid(p.child("name"), f"invalid subset name {', '.join(problems)}"))
    term = subset.get("nodeSelectorTerm")
    errors.extend(validate_node_selector_term(
        {} if term is None else term, p.child("nodeSelectorTerm"), allow_invalid_label_value=True))
    if subset.get("tolerations") is not None:
        errors.extend(validate_tolerations(subset["tolerations"], p.child("tolerations")))
    if subset.get("replicas") is not None and adaptive:
        errors.append(forbidden(p.child("replicas"), "specify replicas use "
                                "minReplicas/maxReplicas to enable adaptive strategy"))
    patch = subset.get("patch")
    if patch is not None and not isinstance(patch, Mapping):
        errors.append(type_error(p.child("patch"), "object", patch))
    return errors


def _update_strategy_errors(strategy: Mapping[str, Any], names: set[str],
                            path: Path) -> list[FieldError]:
    errors: list[FieldError] = []
    type_ = strategy.get("type")
    if type_ is not None and not isinstance(type_, str):
        return [type_error(path.child("type"), "string", type_)]
    if (type_ or MANUAL) != MANUAL:
        return [not_supported(path.child("type"), (MANUAL, ""))]
    manual = _object_field(strategy, "manualUpdate", path.child("manualUpdate"), errors)
    pp = path.child("manualUpdate", "partitions")
    partitions = _object_field(manual, "partitions", pp, errors)
    for subset, value in partitions.items():
        if not is_int(value):
            errors.append(type_error(pp.child(str(subset)), "integer", value))
        errors.extend(_int32_errors(value, pp.child(str(subset))))
        if subset not in names:
            errors.append(invalid(pp, f"subset {subset} does not exist"))
    return errors


# -- the whole spec ----------------------------------------------------------------------------

def validate_spec(spec_value: object) -> list[FieldError]:
    """``validateUnitedDeploymentSpec``: every error of the spec, in Kruise's order."""
    if not isinstance(spec_value, Mapping):
        return [type_error(SPEC, "object", spec_value)]
    spec = spec_value
    errors: list[FieldError] = []
    replicas = spec.get("replicas")
    if replicas is not None and not is_int(replicas):
        errors.append(type_error(SPEC.child("replicas"), "integer", replicas))
        replicas = None
    errors.extend(nonnegative(replicas, SPEC.child("replicas")))
    errors.extend(_int32_errors(replicas, SPEC.child("replicas")))
    selector = spec.get("selector")
    errors.extend(_selector_errors(selector, SPEC.child("selector")))
    topology = _object_field(spec, "topology", SPEC.child("topology"), errors)
    strategy = _object_field(topology, "scheduleStrategy",
                             SPEC.child("topology", "scheduleStrategy"), errors)
    adaptive = strategy.get("type") == ADAPTIVE
    reserve = as_map(strategy.get("adaptive")).get("reserveUnschedulablePods") is True
    template = as_map(spec.get("template"))
    if adaptive and reserve and any(
        template.get(k) is not None for k in ("advancedStatefulSetTemplate", "statefulSetTemplate")
    ):
        errors.append(invalid(SPEC.child("topology", "scheduleStrategy"),
                              "only stateless workloads (Deployment and CloneSet) are supported "
                              "by reserved rescheduling"))
    if not _selector_compiles(selector):
        errors.append(invalid(SPEC.child("selector"), ""))
    else:
        errors.extend(_template_errors(
            spec.get("template"), selector if isinstance(selector, Mapping) else None,
            SPEC.child("template")))
    sp = SPEC.child("topology", "subsets")
    raw_subsets = topology.get("subsets")
    subsets: list[tuple[int, Mapping[str, Any]]] = []
    names: set[str] = set()
    if raw_subsets is not None and not isinstance(raw_subsets, list):
        errors.append(type_error(sp, "array", raw_subsets))
    elif isinstance(raw_subsets, list) and len(raw_subsets) > MAX_SUBSETS:
        # One error for the list; its items are not judged one by one.
        errors.append(too_many(sp, MAX_SUBSETS))
        names.update(s["name"] for s in raw_subsets
                     if isinstance(s, Mapping) and isinstance(s.get("name"), str))
        raw_subsets = None
    for i, subset in enumerate(raw_subsets if isinstance(raw_subsets, list) else []):
        if isinstance(subset, Mapping):
            subsets.append((i, subset))
        else:
            errors.append(type_error(sp.index(i), "object", subset))
    errors.extend(_subset_replicas_errors(replicas, [s for _, s in subsets], sp))
    annotations = _TemplateAnnotations(spec.get("template"))
    template_too_big = annotations.errors()
    for i, subset in subsets:
        errors.extend(_subset_errors(subset, sp.index(i), names, adaptive=adaptive))
        if not template_too_big:
            errors.extend(_subset_annotation_errors(subset.get("patch"), sp.index(i), annotations))
    errors.extend(template_too_big)
    update = _object_field(spec, "updateStrategy", SPEC.child("updateStrategy"), errors)
    errors.extend(_update_strategy_errors(update, names, SPEC.child("updateStrategy")))
    revision_limit = spec.get("revisionHistoryLimit")
    if revision_limit is not None and not is_int(revision_limit):
        errors.append(type_error(SPEC.child("revisionHistoryLimit"), "integer", revision_limit))
    errors.extend(_int32_errors(revision_limit, SPEC.child("revisionHistoryLimit")))
    errors.extend(_schedule_strategy_schema_errors(strategy,
                                                   SPEC.child("topology", "scheduleStrategy")))
    return errors


def _schedule_strategy_schema_errors(strategy: Mapping[str, Any], path: Path) -> list[FieldError]:
    """What the CRD's schema refuses in ``scheduleStrategy`` (Kruise's webhook never sees it, the
    API server refuses it first); offline there is no schema, so it is checked here, last."""
    errors: list[FieldError] = []
    type_ = strategy.get("type")
    if type_ is not None and type_ not in (ADAPTIVE, FIXED, ""):
        errors.append(not_supported(path.child("type"), (ADAPTIVE, FIXED, "")))
    adaptive = strategy.get("adaptive")
    if adaptive is not None and not isinstance(adaptive, Mapping):
        return [*errors, type_error(path.child("adaptive"), "object", adaptive)]
    for name in ("rescheduleCriticalSeconds", "unschedulableDuration"):
        value = as_map(adaptive).get(name)
        if value is not None and not is_int(value):
            errors.append(type_error(path.child("adaptive", name), "integer", value))
    reserve = as_map(adaptive).get("reserveUnschedulablePods")
    if reserve is not None and not isinstance(reserve, bool):
        errors.append(type_error(path.child("adaptive", "reserveUnschedulablePods"), "boolean",
                                 reserve))
    return errors


# -- update rules ------------------------------------------------------------------------------

def semantic(value: object) -> object:
    """A value as Kubernetes' semantic equality sees it: unset, null, ``""``, ``[]`` and ``{}``
    are the same (Go's zero values and nil collections compare equal)."""
    if isinstance(value, Mapping):
        kept = {str(k): semantic(v) for k, v in value.items()}
        value = {k: v for k, v in kept.items() if v is not None}
    elif isinstance(value, list):
        value = [semantic(v) for v in value]
    return None if value in ("", [], {}) else value


def _workload_spec(template: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    workload = template.get(kind)
    if not isinstance(workload, Mapping):
        return None
    return as_map(workload.get("spec"))


def _template_update_errors(spec: Mapping[str, Any],
                            old_spec: Mapping[str, Any]) -> list[FieldError]:
    template, old_template = as_map(spec.get("template")), as_map(old_spec.get("template"))
    path = SPEC.child("template")
    for kind, mutable, message in (
        ("statefulSetTemplate", _STATEFUL_SPEC_MUTABLE,
         "updates to statefulsetTemplate spec for fields other than 'template', "
         "'updateStrategy', 'persistentVolumeClaimRetentionPolicy', 'minReadySeconds' and "
         "'ordinals' are forbidden"),
        ("advancedStatefulSetTemplate", ("template", "updateStrategy"),
         "updates to advancedStatefulsetTemplate spec for fields other than 'template', and "
         "'updateStrategy' are forbidden"),
        ("deploymentTemplate", None, ""),
    ):
        new, old = _workload_spec(template, kind), _workload_spec(old_template, kind)
        if new is None or old is None:
            continue
        errors: list[FieldError] = []
        sp = path.child(kind, "spec")
        if mutable is not None:
            ignored = {"replicas", *mutable}
            if semantic({k: v for k, v in new.items() if k not in ignored}) != semantic(
                    {k: v for k, v in old.items() if k not in ignored}):
                errors.append(forbidden(sp, message))
        errors.extend(nonnegative(new.get("replicas") if is_int(new.get("replicas")) else None,
                                  sp.child("replicas")))
        return errors
    return []


def _topology_update_errors(spec: Mapping[str, Any],
                            old_spec: Mapping[str, Any]) -> list[FieldError]:
    def subsets(s: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        value = as_map(s.get("topology")).get("subsets")
        return [x if isinstance(x, Mapping) else {} for x in value] if isinstance(
            value, list) else []

    def name(subset: Mapping[str, Any]) -> str:
        return as_str(subset.get("name"))

    old_by_name = {name(subset): subset for subset in subsets(old_spec)}
    path = SPEC.child("topology", "subsets")
    errors: list[FieldError] = []
    changed_tolerations: list[FieldError] = []
    for i, subset in enumerate(subsets(spec)):
        old = old_by_name.get(name(subset))
        if old is None:
            continue
        if semantic(subset.get("nodeSelectorTerm")) != semantic(old.get("nodeSelectorTerm")):
            errors.append(forbidden(path.index(i).child("nodeSelectorTerm"),
                                    "may not be changed in an update"))
        if semantic(subset.get("tolerations")) != semantic(old.get("tolerations")):
            error = forbidden(path.index(i).child("tolerations"), "may not be changed in an update")
            errors.append(error)
            changed_tolerations.append(error)
    # Kruise checks the tolerations a second time, so each change is reported twice.
    return errors + changed_tolerations


def update_errors(obj: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateUnitedDeploymentUpdate``: what may not change, then ``spec.replicas`` again."""
    spec, old_spec = as_map(obj.get("spec")), as_map(old.get("spec"))
    errors = _metadata_update_errors(obj, old)
    errors.extend(_template_update_errors(spec, old_spec))
    errors.extend(_topology_update_errors(spec, old_spec))
    replicas = spec.get("replicas")
    errors.extend(nonnegative(replicas if is_int(replicas) else None, SPEC.child("replicas")))
    return errors


def validate_uniteddeployment(obj: object, *, old: object | None = None,
                              clusters: Iterable[Mapping[str, Any]] | None = None,
                              control_plane: bool = False,
                              ) -> list[FieldError]:
    """Every error for a UnitedDeployment CREATE (``old`` None) or UPDATE; never raises.
    ``clusters``, when known, are the cluster registry's objects its target clusters are looked
    up in (:mod:`.target_clusters`); ``control_plane``: its cluster runs no workloads."""
    if not isinstance(obj, Mapping):
        return [type_error(Path(""), "object", obj)]
    deep = too_deep(obj)
    if deep is None and old is not None:
        deep = too_deep(old, "oldObject")
    if deep is not None:  # the rules below walk values recursively
        return [invalid(Path(shorten(deep)), f"must not nest deeper than {MAX_DEPTH} levels")]
    errors = _metadata_errors(obj)
    errors.extend(validate_spec(obj.get("spec")))
    subsets = as_map(as_map(obj.get("spec")).get("topology")).get("subsets")
    if not (isinstance(subsets, list) and len(subsets) > MAX_SUBSETS):
        errors.extend(cluster_errors(obj.get("spec"), clusters))
        if control_plane:
            errors.extend(control_plane_errors(obj.get("spec")))
    errors.extend(old_object_errors(obj, old, update_errors))
    return errors
