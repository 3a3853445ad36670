"""Defaulting and validation of the built-in kinds, following the upstream v1 defaults.

Only what clients can observe is modelled: the defaults ``kubectl get -o yaml`` shows on a
fresh object (restartPolicy, imagePullPolicy, the rolling-update strategy, the default
tolerations the DefaultTolerationSeconds admission plugin adds, ...) and the validation errors
spreadbus or its users can trigger (names, required fields, selectors that do not match the
template, immutable fields). Functions take and return plain dicts and mutate the fresh copy
they are given (never a stored object).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kubesemantics import label_selector
from kubesim import errors
from kubesim.errors import FieldError

JsonObject = dict[str, Any]

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_PATH_SEGMENT_BAD = ("/", "%")

LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)

# Kinds whose names must be DNS labels rather than subdomains.
_LABEL_NAMED = {"Namespace", "Service", "Deployment", "StatefulSet"}
# Kinds whose names need only be valid path segments.
_PATH_NAMED = {"Event", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Node"}


def validate_name(kind: str, name: str) -> list[FieldError]:
    if kind in _PATH_NAMED:
        if name in (".", "..") or any(c in name for c in _PATH_SEGMENT_BAD):
            return [errors.invalid("metadata.name", name, "may not contain '/' or '%'")]
        return []
    if kind in _LABEL_NAMED:
        if len(name) > 63 or not _DNS1123_LABEL.match(name):
            return [errors.invalid("metadata.name", name, LABEL_MSG)]
        return []
    if len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        return [errors.invalid("metadata.name", name, SUBDOMAIN_MSG)]
    return []


def validate_metadata(meta: JsonObject) -> list[FieldError]:
    errs: list[FieldError] = []
    for field_name in ("labels", "annotations"):
        value = meta.get(field_name)
        if value is None:
            continue
        if not isinstance(value, dict):
            errs.append(errors.invalid(f"metadata.{field_name}", value, "must be a map"))
            continue
        for k, v in value.items():
            if not label_selector.is_valid_key(k):
                errs.append(
                    errors.invalid(
                        f"metadata.{field_name}",
                        k,
                        "name part must consist of alphanumeric characters, '-', '_' or '.', "
                        "and must start and end with an alphanumeric character",
                    )
                )
            if not isinstance(v, str):
                errs.append(errors.invalid(f"metadata.{field_name}.{k}", v, "must be a string"))
            elif field_name == "labels" and not label_selector.is_valid_value(v):
                errs.append(
                    errors.invalid(
                        "metadata.labels",
                        v,
                        "a valid label must be an empty string or consist of alphanumeric "
                        "characters, '-', '_' or '.', and must start and end with an "
                        "alphanumeric character",
                    )
                )
    for i, ref in enumerate(meta.get("ownerReferences") or []):
        p = f"metadata.ownerReferences[{i}]"
        for f in ("apiVersion", "kind", "name", "uid"):
            if not isinstance(ref, dict) or not ref.get(f):
                errs.append(
                    errors.invalid(
                        f"{p}.{f}",
                        (ref or {}).get(f, "") if isinstance(ref, dict) else ref,
                        "must not be empty" if f != "uid" else "uid must not be empty",
                    )
                )
    controllers = [
        r for r in meta.get("ownerReferences") or [] if isinstance(r, dict) and r.get("controller")
    ]
    if len(controllers) > 1:
        errs.append(
            errors.invalid(
                "metadata.ownerReferences",
                meta["ownerReferences"],
                "Only one reference can have Controller set to true",
            )
        )
    return errs


# --- Pods --------------------------------------------------------------------------------------

DEFAULT_TOLERATION_SECONDS = 300
"""Upstream's ``--default-not-ready-toleration-seconds`` and ``...-unreachable-...``."""
DEFAULT_TOLERATION_KEYS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def default_tolerations(seconds: float) -> list[JsonObject]:
    """What the DefaultTolerationSeconds admission plugin adds, at the configured time.

    Fractional seconds are kept so tests can run fast; whole numbers are served as integers.
    """
    value: float = int(seconds) if float(seconds).is_integer() else seconds
    return [
        {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": value}
        for key in DEFAULT_TOLERATION_KEYS
    ]


def default_container(c: JsonObject) -> None:
    if not isinstance(c, dict):
        return
    image = c.get("image")
    if "imagePullPolicy" not in c and isinstance(image, str):
        tag = image.rsplit("/", 1)[-1]
        has_tag = ":" in tag and "@" not in image
        latest = tag.endswith(":latest")
        c["imagePullPolicy"] = (
            "Always" if (not has_tag and "@" not in image) or latest else "IfNotPresent"
        )
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    c.setdefault("resources", {})
    for p in c.get("ports") or ():
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")


def default_pod_spec(
    spec: JsonObject, *, for_pod: bool, toleration_seconds: float = DEFAULT_TOLERATION_SECONDS
) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for c in spec.get("initContainers") or ():
        default_container(c)
    for c in spec.get("containers") or ():
        default_container(c)
    if for_pod:
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        spec.setdefault("priority", 0)
        tolerations = spec.setdefault("tolerations", [])
        if isinstance(tolerations, list):
            present = {(t.get("key"), t.get("effect")) for t in tolerations if isinstance(t, dict)}
            for t in default_tolerations(toleration_seconds):
                if (t["key"], t["effect"]) not in present and ("", "NoExecute") not in present:
                    tolerations.append(t)


def _qos(spec: JsonObject) -> str:
    containers = [
        c
        for c in (spec.get("containers") or []) + (spec.get("initContainers") or [])
        if isinstance(c, dict)
    ]
    any_set = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            any_set = True
        for r in ("cpu", "memory"):
            if r not in lim or (r in req and req[r] != lim[r]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def default_pod(pod: JsonObject, *, toleration_seconds: float = DEFAULT_TOLERATION_SECONDS) -> None:
    spec = pod.setdefault("spec", {})
    if isinstance(spec, dict):
        default_pod_spec(spec, for_pod=True, toleration_seconds=toleration_seconds)


def initial_pod_status(pod: JsonObject) -> None:
    """What the pod strategy's PrepareForCreate leaves in ``status``."""
    spec = pod.get("spec")
    pod["status"] = {"phase": "Pending", "qosClass": _qos(spec if isinstance(spec, dict) else {})}


def validate_pod_spec(spec: Any, path: str) -> list[FieldError]:
    if not isinstance(spec, dict):
        return [errors.required(path)]
    errs: list[FieldError] = []
    containers = spec.get("containers")
    if not containers:
        errs.append(errors.required(f"{path}.containers"))
    names: set[str] = set()
    for list_name in ("initContainers", "containers"):
        items = spec.get(list_name) or []
        if not isinstance(items, list):
            errs.append(errors.invalid(f"{path}.{list_name}", items, "must be a list"))
            continue
        for i, c in enumerate(items):
            p = f"{path}.{list_name}[{i}]"
            if not isinstance(c, dict):
                errs.append(errors.invalid(p, c, "must be an object"))
                continue
            name = c.get("name")
            if not name:
                errs.append(errors.required(f"{p}.name"))
            elif not isinstance(name, str) or not _DNS1123_LABEL.match(name) or len(name) > 63:
                errs.append(errors.invalid(f"{p}.name", name, LABEL_MSG))
            elif name in names:
                errs.append(errors.duplicate(f"{p}.name", name))
            else:
                names.add(name)
            if not c.get("image"):
                errs.append(errors.required(f"{p}.image"))
    restart = spec.get("restartPolicy")
    if restart is not None and restart not in ("Always", "OnFailure", "Never"):
        errs.append(
            errors.not_supported(f"{path}.restartPolicy", restart, ["Always", "Never", "OnFailure"])
        )
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or grace < 0):
        errs.append(
            errors.invalid(
                f"{path}.terminationGracePeriodSeconds", grace, "must be greater than or equal to 0"
            )
        )
    for i, t in enumerate(spec.get("tolerations") or []):
        if isinstance(t, dict):
            op = t.get("operator", "Equal")
            if op not in ("Equal", "Exists"):
                errs.append(
                    errors.not_supported(
                        f"{path}.tolerations[{i}].operator", op, ["Equal", "Exists"]
                    )
                )
            if op == "Exists" and t.get("value"):
                errs.append(
                    errors.invalid(
                        f"{path}.tolerations[{i}].operator",
                        t.get("value"),
                        "value must be empty when `operator` is 'Exists'",
                    )
                )
            effect = t.get("effect")
            if effect and effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                errs.append(
                    errors.not_supported(
                        f"{path}.tolerations[{i}].effect",
                        effect,
                        ["NoExecute", "NoSchedule", "PreferNoSchedule"],
                    )
                )
    return errs


_POD_MUTABLE = (
    "activeDeadlineSeconds",
    "tolerations",
    "schedulingGates",
    "terminationGracePeriodSeconds",
)


def validate_pod_update(new: JsonObject, old: JsonObject) -> list[FieldError]:
    """Upstream allows only images, activeDeadlineSeconds, added tolerations and removed
    scheduling gates to change in a running pod's spec."""
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}

    def comparable(spec: JsonObject) -> JsonObject:
        out = {k: v for k, v in spec.items() if k not in _POD_MUTABLE}
        for list_name in ("containers", "initContainers"):
            if isinstance(out.get(list_name), list):
                out[list_name] = [
                    {k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c
                    for c in out[list_name]
                ]
        return out

    errs: list[FieldError] = []
    if comparable(ns) != comparable(os_):
        errs.append(
            errors.forbidden_field(
                "spec",
                "pod updates may not change fields other than `spec.containers[*].image`,"
                "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
                "`spec.tolerations` (only additions to existing tolerations),"
                "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
                "previously negative)",
            )
        )
    old_tol = os_.get("tolerations") or []
    new_tol = ns.get("tolerations") or []
    if any(t not in new_tol for t in old_tol):
        errs.append(
            errors.forbidden_field(
                "spec.tolerations",
                "existing toleration can not be modified except its tolerationSeconds",
            )
        )
    old_gates = {g.get("name") for g in os_.get("schedulingGates") or [] if isinstance(g, dict)}
    new_gates = {g.get("name") for g in ns.get("schedulingGates") or [] if isinstance(g, dict)}
    if new_gates - old_gates:
        errs.append(
            errors.forbidden_field(
                "spec.schedulingGates", "only deletion is allowed, but found new scheduling gate"
            )
        )
    return errs


# --- Workloads ---------------------------------------------------------------------------------


def default_workload(kind: str, obj: JsonObject) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if kind in ("Deployment", "ReplicaSet", "StatefulSet"):
        spec.setdefault("replicas", 1)
    if kind in ("Deployment", "StatefulSet", "DaemonSet"):
        spec.setdefault("revisionHistoryLimit", 10)
    if kind == "Deployment":
        spec.setdefault("progressDeadlineSeconds", 600)
        strategy = spec.setdefault("strategy", {})
        if isinstance(strategy, dict):
            strategy.setdefault("type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                ru = strategy.setdefault("rollingUpdate", {})
                if isinstance(ru, dict):
                    ru.setdefault("maxUnavailable", "25%")
                    ru.setdefault("maxSurge", "25%")
    if kind == "StatefulSet":
        spec.setdefault("podManagementPolicy", "OrderedReady")
        us = spec.setdefault("updateStrategy", {"type": "RollingUpdate"})
        if isinstance(us, dict) and us.get("type", "RollingUpdate") == "RollingUpdate":
            us.setdefault("type", "RollingUpdate")
            us.setdefault("rollingUpdate", {"partition": 0})
        spec.setdefault(
            "persistentVolumeClaimRetentionPolicy",
            {"whenDeleted": "Retain", "whenScaled": "Retain"},
        )
    if kind == "CloneSet":
        default_cloneset(spec)
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        default_pod_spec(template["spec"], for_pod=False)
        template.setdefault("metadata", {})


def default_cloneset(spec: JsonObject) -> None:
    """What Kruise's defaulting webhook sets on a CloneSet (``SetDefaultsCloneSet``)."""
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("scaleStrategy", {})
    strategy = spec.setdefault("updateStrategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "ReCreate")
        if strategy["type"] in ("InPlaceIfPossible", "InPlaceOnly"):
            strategy.setdefault("inPlaceUpdateStrategy", {})
        strategy.setdefault("partition", 0)
        strategy.setdefault("maxUnavailable", "20%")
        strategy.setdefault("maxSurge", 0)


# Status fields the upstream Go types serialise without ``omitempty``: a real server sends them
# (as 0) on every read of a workload, and the official client's typed models require them.
_REQUIRED_STATUS: dict[str, tuple[str, ...]] = {
    "ReplicaSet": ("replicas",),
    "StatefulSet": ("replicas", "availableReplicas"),
    "CloneSet": (
        "replicas",
        "readyReplicas",
        "availableReplicas",
        "updatedReplicas",
        "updatedReadyReplicas",
    ),
    "DaemonSet": (
        "currentNumberScheduled",
        "numberMisscheduled",
        "desiredNumberScheduled",
        "numberReady",
    ),
    "HorizontalPodAutoscaler": ("desiredReplicas",),
}


def default_workload_status(kind: str, obj: JsonObject) -> None:
    """Fill the always-serialised status counts of a workload, as upstream's encoding does."""
    required = _REQUIRED_STATUS.get(kind)
    if not required:
        return
    status = obj.get("status")
    if status is None:
        status = obj["status"] = {}
    if isinstance(status, dict):
        for field_name in required:
            status.setdefault(field_name, 0)


def validate_workload(kind: str, obj: JsonObject) -> list[FieldError]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [errors.required("spec")]
    errs: list[FieldError] = []
    replicas = spec.get("replicas")
    if replicas is not None and (
        not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0
    ):
        errs.append(errors.invalid("spec.replicas", replicas, "must be greater than or equal to 0"))
    selector = spec.get("selector")
    template = spec.get("template")
    if selector is None:
        errs.append(errors.required("spec.selector"))
    else:
        for path, msg in label_selector.validate_label_selector(selector, "spec.selector"):
            errs.append(errors.invalid(path, selector, msg))
        if (
            isinstance(selector, dict)
            and not selector.get("matchLabels")
            and not selector.get("matchExpressions")
        ):
            errs.append(
                errors.invalid(
                    "spec.selector",
                    selector,
                    "empty selector is invalid for deployment"
                    if kind == "Deployment"
                    else "empty selector is invalid for cloneset"
                    if kind == "CloneSet"
                    else "empty selector is invalid",
                )
            )
    if not isinstance(template, dict):
        errs.append(errors.required("spec.template"))
        return errs
    labels = (template.get("metadata") or {}).get("labels") or {}
    if selector is not None and not errs:
        try:
            if not label_selector.from_label_selector(selector).matches(labels):
                errs.append(
                    errors.invalid(
                        "spec.template.metadata.labels",
                        labels,
                        "`selector` does not match template `labels`",
                    )
                )
        except label_selector.SelectorError as e:
            errs.append(errors.invalid("spec.selector", selector, str(e)))
    errs.extend(validate_pod_spec(template.get("spec"), "spec.template.spec"))
    restart = (template.get("spec") or {}).get("restartPolicy")
    if restart not in (None, "Always"):
        errs.append(errors.not_supported("spec.template.spec.restartPolicy", restart, ["Always"]))
    if kind == "CloneSet":
        errs.extend(_validate_cloneset_strategies(spec))
    return errs


_CLONESET_UPDATE_TYPES = ("ReCreate", "InPlaceIfPossible", "InPlaceOnly")


def _int_or_percent(raw: Any, total: int, *, round_up: bool) -> int | None:
    """An IntOrString scaled against ``total`` (None when it is neither form)."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and re.fullmatch(r"-?[0-9]+%", raw.strip()):
        exact = int(raw.strip()[:-1]) * total
        return -(-exact // 100) if round_up else exact // 100
    return None


def _validate_cloneset_strategies(spec: JsonObject) -> list[FieldError]:
    """Kruise's validating webhook on ``updateStrategy`` and ``scaleStrategy``."""
    errs: list[FieldError] = []
    replicas = spec.get("replicas", 1)
    replicas = replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 1
    if ((spec.get("template") or {}).get("spec") or {}).get("activeDeadlineSeconds") is not None:
        errs.append(
            errors.forbidden_field(
                "spec.template.spec.activeDeadlineSeconds",
                "activeDeadlineSeconds in cloneset is not Supported",
            )
        )
    strategy = spec.get("updateStrategy") or {}
    if not isinstance(strategy, dict):
        return [*errs, errors.invalid("spec.updateStrategy", strategy, "must be an object")]
    kind = strategy.get("type", "ReCreate")
    if kind not in _CLONESET_UPDATE_TYPES:
        errs.append(
            errors.invalid(
                "spec.updateStrategy.type",
                kind,
                "must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'",
            )
        )
    values: dict[str, int] = {}
    for name in ("partition", "maxUnavailable", "maxSurge"):
        if strategy.get(name) is None:
            continue
        value = _int_or_percent(strategy[name], replicas, round_up=True)
        if value is None:
            errs.append(
                errors.invalid(
                    f"spec.updateStrategy.{name}",
                    str(strategy[name]),
                    f"failed getValueFromIntOrPercent for {name}: invalid value for IntOrString",
                )
            )
            continue
        values[name] = value
    if values.get("partition", 0) < 0:
        errs.append(
            errors.invalid(
                "spec.updateStrategy.partition",
                values["partition"],
                "must be greater than or equal to 0",
            )
        )
    if kind == "InPlaceOnly" and values.get("maxSurge", 0) > 0:
        errs.append(
            errors.invalid(
                "spec.updateStrategy.maxSurge",
                str(strategy.get("maxSurge")),
                "can not use maxSurge with strategy type InPlaceOnly",
            )
        )
    if replicas > 0 and values.get("maxUnavailable", 0) < 1 and values.get("maxSurge", 0) < 1:
        errs.append(
            errors.invalid(
                "spec.updateStrategy.maxUnavailable",
                strategy.get("maxUnavailable"),
                "maxUnavailable and maxSurge should not both be less than 1",
            )
        )
    scale = spec.get("scaleStrategy") or {}
    if (
        isinstance(scale, dict)
        and scale.get("maxUnavailable") is not None
        and _int_or_percent(scale["maxUnavailable"], replicas, round_up=True) is None
    ):
        errs.append(
            errors.invalid(
                "spec.scaleStrategy.maxUnavailable",
                str(scale["maxUnavailable"]),
                "failed getValueFromIntOrPercent for maxUnavailable: invalid value for IntOrString",
            )
        )
    return errs


def validate_pods_to_delete(
    obj: JsonObject, old: JsonObject | None, find_pod: Callable[[str], JsonObject | None]
) -> list[FieldError]:
    """Kruise's check of ``scaleStrategy.podsToDelete``: no duplicates, and every newly listed
    pod exists, is not terminating and is controlled by this CloneSet."""
    path = "spec.scaleStrategy.podsToDelete"
    names = ((obj.get("spec") or {}).get("scaleStrategy") or {}).get("podsToDelete") or []
    if not isinstance(names, list):
        return [errors.invalid(path, names, "must be a list")]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        return [errors.invalid(path, names, f"duplicated items [{' '.join(duplicated)}]")]
    before = ((old or {}).get("spec") or {}).get("scaleStrategy") or {}
    uid = obj["metadata"].get("uid")
    errs: list[FieldError] = []
    for name in sorted(set(names) - set(before.get("podsToDelete") or ())):
        pod = find_pod(str(name))
        if pod is None:
            detail = f'find pod {name} failed: pods "{name}" not found'
        elif pod["metadata"].get("deletionTimestamp"):
            detail = f"find pod {name} already terminating"
        elif not any(
            r.get("controller") and r.get("uid") == uid
            for r in pod["metadata"].get("ownerReferences") or ()
        ):
            detail = f"find pod {name} owner is not this CloneSet"
        else:
            continue
        errs.append(errors.invalid(path, name, detail))
    return errs


def validate_workload_update(kind: str, new: JsonObject, old: JsonObject) -> list[FieldError]:
    errs = validate_workload(kind, new)
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    if ns.get("selector") != os_.get("selector"):
        errs.append(errors.invalid("spec.selector", ns.get("selector"), "field is immutable"))
    if kind == "StatefulSet":
        for f in ("serviceName", "podManagementPolicy", "volumeClaimTemplates"):
            if ns.get(f) != os_.get(f):
                errs.append(
                    errors.forbidden_field(
                        "spec",
                        "updates to statefulset spec for fields other than 'replicas', "
                        "'ordinals', 'template', 'updateStrategy', "
                        "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are "
                        "forbidden",
                    )
                )
                break
    return errs


def validate_pdb(obj: JsonObject) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errs: list[FieldError] = []
    if "minAvailable" in spec and "maxUnavailable" in spec:
        errs.append(
            errors.invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set")
        )
    selector = spec.get("selector")
    if selector is not None:
        for path, msg in label_selector.validate_label_selector(selector, "spec.selector"):
            errs.append(errors.invalid(path, selector, msg))
    return errs


def prepare_namespace_create(obj: JsonObject) -> None:
    obj["spec"] = {"finalizers": ["kubernetes"]}
    obj["status"] = {"phase": "Active"}
    labels = obj["metadata"].setdefault("labels", {})
    labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]


# --- Admission webhook configurations ----------------------------------------------------------

_OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]


def validate_webhook_configuration(obj: JsonObject, *, mutating: bool) -> list[FieldError]:
    """The checks upstream makes on admissionregistration.k8s.io/v1 webhooks."""
    hooks = obj.get("webhooks")
    if hooks is None:
        return []
    if not isinstance(hooks, list):
        return [errors.invalid("webhooks", hooks, "must be a list")]
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, w in enumerate(hooks):
        p = f"webhooks[{i}]"
        if not isinstance(w, dict):
            errs.append(errors.invalid(p, w, "must be an object"))
            continue
        name = w.get("name")
        if not name:
            errs.append(errors.required(f"{p}.name"))
        elif not isinstance(name, str) or name.count(".") < 2:
            errs.append(
                errors.invalid(
                    f"{p}.name",
                    name,
                    "should be a domain with at least three segments separated by dots",
                )
            )
        elif name in names:
            errs.append(errors.duplicate(f"{p}.name", name))
        else:
            names.add(name)
        versions = w.get("admissionReviewVersions")
        if not versions:
            errs.append(
                errors.required(f"{p}.admissionReviewVersions", "must specify one of v1, v1beta1")
            )
        elif not isinstance(versions, list) or not any(v in ("v1", "v1beta1") for v in versions):
            errs.append(
                errors.invalid(
                    f"{p}.admissionReviewVersions",
                    versions,
                    "must include at least one of v1, v1beta1",
                )
            )
        side = w.get("sideEffects")
        if side not in ("None", "NoneOnDryRun"):
            errs.append(errors.not_supported(f"{p}.sideEffects", side, ["None", "NoneOnDryRun"]))
        if w.get("failurePolicy", "Fail") not in ("Fail", "Ignore"):
            errs.append(
                errors.not_supported(
                    f"{p}.failurePolicy", w.get("failurePolicy"), ["Fail", "Ignore"]
                )
            )
        if w.get("matchPolicy", "Equivalent") not in ("Equivalent", "Exact"):
            errs.append(
                errors.not_supported(
                    f"{p}.matchPolicy", w.get("matchPolicy"), ["Equivalent", "Exact"]
                )
            )
        if mutating and w.get("reinvocationPolicy", "Never") not in ("Never", "IfNeeded"):
            errs.append(
                errors.not_supported(
                    f"{p}.reinvocationPolicy", w.get("reinvocationPolicy"), ["IfNeeded", "Never"]
                )
            )
        timeout = w.get("timeoutSeconds", 10)
        if not isinstance(timeout, int) or isinstance(timeout, bool) or not 1 <= timeout <= 30:
            errs.append(
                errors.invalid(
                    f"{p}.timeoutSeconds",
                    timeout,
                    "the timeout value must be between 1 and 30 seconds",
                )
            )
        cc = w.get("clientConfig")
        if not isinstance(cc, dict):
            errs.append(errors.required(f"{p}.clientConfig"))
        else:
            url, svc = cc.get("url"), cc.get("service")
            if bool(url) == bool(svc):
                errs.append(
                    errors.required(
                        f"{p}.clientConfig", "exactly one of url or service is required"
                    )
                )
            elif url and (not isinstance(url, str) or not url.startswith("https://")):
                errs.append(
                    errors.invalid(
                        f"{p}.clientConfig.url", url, "'https' is the only allowed URL scheme"
                    )
                )
            elif svc and (
                not isinstance(svc, dict) or not svc.get("name") or not svc.get("namespace")
            ):
                errs.append(
                    errors.required(
                        f"{p}.clientConfig.service", "service name and namespace are required"
                    )
                )
            bundle = cc.get("caBundle")
            if bundle is not None and not isinstance(bundle, str):
                errs.append(
                    errors.invalid(f"{p}.clientConfig.caBundle", bundle, "must be base64 data")
                )
        rules = w.get("rules") or []
        if not isinstance(rules, list):
            errs.append(errors.invalid(f"{p}.rules", rules, "must be a list"))
            rules = []
        for j, r in enumerate(rules):
            rp = f"{p}.rules[{j}]"
            if not isinstance(r, dict):
                errs.append(errors.invalid(rp, r, "must be an object"))
                continue
            for list_field in ("operations", "apiGroups", "apiVersions", "resources"):
                value = r.get(list_field)
                if (
                    not isinstance(value, list)
                    or not value
                    or not all(isinstance(v, str) for v in value)
                ):
                    errs.append(errors.required(f"{rp}.{list_field}"))
            for op in r.get("operations") or ():
                if op not in _OPERATIONS:
                    errs.append(errors.not_supported(f"{rp}.operations", op, _OPERATIONS))
            if r.get("scope", "*") not in ("*", "Cluster", "Namespaced"):
                errs.append(
                    errors.not_supported(
                        f"{rp}.scope", r.get("scope"), ["*", "Cluster", "Namespaced"]
                    )
                )
        for sel_field in ("namespaceSelector", "objectSelector"):
            sel = w.get(sel_field)
            if sel is not None:
                for path, msg in label_selector.validate_label_selector(sel, f"{p}.{sel_field}"):
                    errs.append(errors.invalid(path, sel, msg))
    return errs


# --- Services ----------------------------------------------------------------------------------


def default_service(obj: JsonObject) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("type", "ClusterIP")
    if spec["type"] != "ExternalName":
        spec.setdefault("sessionAffinity", "None")
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
    for p in spec.get("ports") or ():
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")
            if "port" in p:
                p.setdefault("targetPort", p["port"])


def allocate_cluster_ip(obj: JsonObject, taken: set[str]) -> None:
    """A free address from 10.96.0.0/12 for a Service that asked for none (upstream's
    allocator); ``None`` (headless) and ExternalName services get none."""
    spec = obj.get("spec")
    if not isinstance(spec, dict) or spec.get("type") == "ExternalName" or spec.get("clusterIP"):
        if isinstance(spec, dict) and spec.get("clusterIP") and "clusterIPs" not in spec:
            spec["clusterIPs"] = [spec["clusterIP"]]
        return
    for n in range(10, 1 << 20):
        ip = f"10.{96 + (n >> 16)}.{(n >> 8) & 0xFF}.{n & 0xFF}"
        if ip not in taken:
            spec["clusterIP"] = ip
            spec["clusterIPs"] = [ip]
            return


def validate_immutable_data(new: JsonObject, old: JsonObject) -> list[FieldError]:
    """ConfigMaps and Secrets marked ``immutable`` keep their data and the mark for good."""
    errs: list[FieldError] = []
    if not new.get("immutable"):
        errs.append(
            errors.forbidden_field("immutable", "field is immutable when `immutable` is set")
        )
    for f in ("data", "binaryData"):
        if (new.get(f) or {}) != (old.get(f) or {}):
            errs.append(errors.forbidden_field(f, "field is immutable when `immutable` is set"))
    return errs
