"""What kubesim serves: one :class:`ResourceType` per group/version/resource.

Built-in types are declared here once; custom resources get theirs from a CRD when it is
created. Storage is keyed by :attr:`ResourceType.storage_key` (group, plural), so every served
version of a CRD reads and writes the same objects (kubesim converts between versions by
rewriting ``apiVersion`` only, the ``None`` conversion strategy).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kubesemantics import strategic_merge

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class ScalePaths:
    """Where the scale subresource reads and writes (``.spec.replicas`` style JSON paths)."""

    spec_replicas: str = ".spec.replicas"
    status_replicas: str = ".status.replicas"
    label_selector: str | None = ".status.selector"


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0
    format: str = ""


@dataclass(slots=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    status: bool = False
    scale: ScalePaths | None = None
    extra_subresources: tuple[str, ...] = ()
    has_generation: bool = True
    strategic: bool = True
    patch_meta: strategic_merge.PatchMeta = strategic_merge.GENERIC
    schema: Mapping[str, Any] | None = None
    printer_columns: tuple[PrinterColumn, ...] = ()
    selectable_fields: tuple[str, ...] = ()
    field_labels: tuple[str, ...] = ()
    return_deleted_object: bool = False
    create_on_update: bool = False
    custom: bool = False
    storage_version: bool = True
    crd_name: str = ""

    def __post_init__(self) -> None:
        if not self.singular:
            self.singular = self.kind.lower()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage_key(self) -> tuple[str, str]:
        return (self.group, self.plural)

    @property
    def gvr(self) -> tuple[str, str, str]:
        return (self.group, self.version, self.plural)

    @property
    def subresources(self) -> tuple[str, ...]:
        subs = list(self.extra_subresources)
        if self.status:
            subs.append("status")
        if self.scale is not None:
            subs.append("scale")
        return tuple(subs)


_META = strategic_merge

_CLONESET_COLUMNS = (
    PrinterColumn("DESIRED", "integer", ".spec.replicas", "The desired number of pods."),
    PrinterColumn("UPDATED", "integer", ".status.updatedReplicas", "The number of pods updated."),
    PrinterColumn(
        "UPDATED_READY",
        "integer",
        ".status.updatedReadyReplicas",
        "The number of pods updated and ready.",
    ),
    PrinterColumn(
        "UPDATED_AVAILABLE",
        "integer",
        ".status.updatedAvailableReplicas",
        "The number of pods updated and available.",
    ),
    PrinterColumn("READY", "integer", ".status.readyReplicas", "The number of pods ready."),
    PrinterColumn("TOTAL", "integer", ".status.replicas", "The number of currently all pods."),
    PrinterColumn(
        "AGE",
        "date",
        ".metadata.creationTimestamp",
        "CreationTimestamp is a timestamp representing the server time when this object was "
        "created. It is not guaranteed to be set in happens-before order across separate "
        "operations. Clients may not set this value. It is represented in RFC3339 form and is "
        "in UTC.",
    ),
    PrinterColumn(
        "CONTAINERS",
        "string",
        ".spec.template.spec.containers[*].name",
        "The containers of currently cloneset.",
        priority=1,
    ),
    PrinterColumn(
        "IMAGES",
        "string",
        ".spec.template.spec.containers[*].image",
        "The images of currently cloneset.",
        priority=1,
    ),
    PrinterColumn(
        "SELECTOR",
        "string",
        ".status.labelSelector",
        "The selector of currently cloneset.",
        priority=1,
    ),
)


def _builtins() -> list[ResourceType]:
    pods_fields = (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    )
    workload_scale = ScalePaths()
    return [
        ResourceType(
            "",
            "v1",
            "namespaces",
            "Namespace",
            False,
            short_names=("ns",),
            status=True,
            has_generation=False,
            patch_meta=_META.NAMESPACE,
            field_labels=("status.phase",),
            extra_subresources=("finalize",),
            return_deleted_object=True,
        ),
        ResourceType(
            "",
            "v1",
            "nodes",
            "Node",
            False,
            short_names=("no",),
            status=True,
            has_generation=False,
            patch_meta=_META.NODE,
            field_labels=("spec.unschedulable",),
            return_deleted_object=True,
        ),
        ResourceType(
            "",
            "v1",
            "pods",
            "Pod",
            True,
            short_names=("po",),
            categories=("all",),
            status=True,
            extra_subresources=("binding", "eviction"),
            patch_meta=_META.POD,
            field_labels=pods_fields,
            return_deleted_object=True,
        ),
        ResourceType(
            "",
            "v1",
            "events",
            "Event",
            True,
            short_names=("ev",),
            has_generation=False,
            field_labels=(
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
            ),
            create_on_update=True,
            return_deleted_object=True,
        ),
        ResourceType(
            "",
            "v1",
            "configmaps",
            "ConfigMap",
            True,
            short_names=("cm",),
            has_generation=False,
            return_deleted_object=True,
        ),
        ResourceType(
            "",
            "v1",
            "secrets",
            "Secret",
            True,
            has_generation=False,
            field_labels=("type",),
            return_deleted_object=True,
        ),
        ResourceType(
            "",
            "v1",
            "serviceaccounts",
            "ServiceAccount",
            True,
            short_names=("sa",),
            has_generation=False,
            return_deleted_object=True,
        ),
        ResourceType(
            "",
            "v1",
            "services",
            "Service",
            True,
            short_names=("svc",),
            categories=("all",),
            status=True,
            has_generation=False,
            return_deleted_object=True,
        ),
        ResourceType(
            "",
            "v1",
            "endpoints",
            "Endpoints",
            True,
            short_names=("ep",),
            has_generation=False,
            return_deleted_object=True,
        ),
        ResourceType(
            "coordination.k8s.io",
            "v1",
            "leases",
            "Lease",
            True,
            has_generation=False,
            create_on_update=True,
        ),
        ResourceType(
            "apps",
            "v1",
            "deployments",
            "Deployment",
            True,
            short_names=("deploy",),
            categories=("all",),
            status=True,
            scale=workload_scale,
            patch_meta=_META.DEPLOYMENT,
        ),
        ResourceType(
            "apps",
            "v1",
            "replicasets",
            "ReplicaSet",
            True,
            short_names=("rs",),
            categories=("all",),
            status=True,
            scale=workload_scale,
            patch_meta=_META.REPLICA_SET,
        ),
        ResourceType(
            "apps",
            "v1",
            "statefulsets",
            "StatefulSet",
            True,
            short_names=("sts",),
            categories=("all",),
            status=True,
            scale=workload_scale,
            patch_meta=_META.STATEFUL_SET,
        ),
        # Kruise's Advanced StatefulSet is built in, but served as Kruise's CRD serves it
        # (custom=True): its printer columns, ``.status.labelSelector`` for scale, no strategic
        # merge patch; both versions are the same object (see advanced_statefulset_spec).
        *_advanced_statefulsets(),
        ResourceType(
            "apps",
            "v1",
            "daemonsets",
            "DaemonSet",
            True,
            short_names=("ds",),
            categories=("all",),
            status=True,
            patch_meta=_META.REPLICA_SET,
        ),
        ResourceType(
            "apps",
            "v1",
            "controllerrevisions",
            "ControllerRevision",
            True,
            has_generation=False,
        ),
        # OpenKruise's CloneSet, served as Kruise's CRD serves it (no strategic merge patch).
        ResourceType(
            "apps.kruise.io",
            "v1alpha1",
            "clonesets",
            "CloneSet",
            True,
            short_names=("clone",),
            status=True,
            scale=ScalePaths(label_selector=".status.labelSelector"),
            strategic=False,
            printer_columns=_CLONESET_COLUMNS,
        ),
        ResourceType(
            "policy",
            "v1",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            True,
            short_names=("pdb",),
            status=True,
            patch_meta=_META.POD_DISRUPTION_BUDGET,
        ),
        ResourceType(
            "scheduling.k8s.io",
            "v1",
            "priorityclasses",
            "PriorityClass",
            False,
            short_names=("pc",),
            has_generation=False,
        ),
        # Stored and served; kubesim's pods have no network to police.
        ResourceType(
            "networking.k8s.io",
            "v1",
            "networkpolicies",
            "NetworkPolicy",
            True,
            short_names=("netpol",),
        ),
        # Stored and served (an installation's one-off steps apply); kubesim runs no job
        # controller, so a Job starts no pod.
        ResourceType(
            "batch",
            "v1",
            "jobs",
            "Job",
            True,
            categories=("all",),
            status=True,
        ),
        ResourceType(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            False,
            short_names=("crd", "crds"),
            categories=("api-extensions",),
            status=True,
        ),
        ResourceType(
            "admissionregistration.k8s.io",
            "v1",
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
            False,
            categories=("api-extensions",),
        ),
        ResourceType(
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
            False,
            categories=("api-extensions",),
        ),
        ResourceType(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterroles",
            "ClusterRole",
            False,
            has_generation=False,
        ),
        ResourceType(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            "ClusterRoleBinding",
            False,
            has_generation=False,
        ),
        ResourceType(
            "rbac.authorization.k8s.io",
            "v1",
            "roles",
            "Role",
            True,
            has_generation=False,
        ),
        ResourceType(
            "rbac.authorization.k8s.io",
            "v1",
            "rolebindings",
            "RoleBinding",
            True,
            has_generation=False,
        ),
        ResourceType(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            True,
            short_names=("hpa",),
            categories=("all",),
            status=True,
        ),
        # autoscaling/v1 is served from the v2 objects (kubesim.horizontalpodautoscaler).
        ResourceType(
            "autoscaling",
            "v1",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            True,
            short_names=("hpa",),
            categories=("all",),
            status=True,
            storage_version=False,
        ),
        # Reviews are answered, never stored: every authenticated request is allowed.
        ResourceType(
            "authorization.k8s.io",
            "v1",
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
            False,
            verbs=("create",),
            has_generation=False,
        ),
        ResourceType(
            "authentication.k8s.io",
            "v1",
            "selfsubjectreviews",
            "SelfSubjectReview",
            False,
            verbs=("create",),
            has_generation=False,
        ),
    ]


def _advanced_statefulsets() -> list[ResourceType]:
    """``statefulsets.apps.kruise.io`` in v1beta1 (stored) and v1alpha1, with the CRD's columns."""
    columns = (
        PrinterColumn("DESIRED", "integer", ".spec.replicas", "The desired number of pods."),
        PrinterColumn(
            "CURRENT", "integer", ".status.replicas", "The number of currently all pods."
        ),
        PrinterColumn(
            "UPDATED", "integer", ".status.updatedReplicas", "The number of pods updated."
        ),
        PrinterColumn("READY", "integer", ".status.readyReplicas", "The number of pods ready."),
        PrinterColumn(
            "AGE",
            "date",
            ".metadata.creationTimestamp",
            "CreationTimestamp is a timestamp representing the server time when this object was "
            "created. It is not guaranteed to be set in happens-before order across separate "
            "operations. Clients may not set this value. It is represented in RFC3339 form and "
            "is in UTC.",
        ),
        PrinterColumn(
            "CONTAINERS",
            "string",
            ".spec.template.spec.containers[*].name",
            "The containers of currently advanced statefulset.",
            priority=1,
        ),
        PrinterColumn(
            "IMAGES",
            "string",
            ".spec.template.spec.containers[*].image",
            "The images of currently advanced statefulset.",
            priority=1,
        ),
    )
    return [
        ResourceType(
            "apps.kruise.io",
            version,
            "statefulsets",
            "StatefulSet",
            True,
            short_names=("asts",),
            status=True,
            scale=ScalePaths(label_selector=".status.labelSelector"),
            strategic=False,
            printer_columns=columns,
            custom=True,
            storage_version=version == "v1beta1",
        )
        for version in ("v1beta1", "v1alpha1")
    ]


class Registry:
    """The served resource types, looked up by GVR, by kind, and listed for discovery."""

    def __init__(self) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._builtin: dict[tuple[str, str, str], ResourceType] = {}
        for rt in _builtins():
            self._builtin[rt.gvr] = rt
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        self._by_gvr[rt.gvr] = rt

    def remove_crd(self, crd_name: str) -> list[ResourceType]:
        """Stop serving a CRD's types; a built-in type it had replaced is served again."""
        gone = [rt for rt in self._by_gvr.values() if rt.custom and rt.crd_name == crd_name]
        for rt in gone:
            del self._by_gvr[rt.gvr]
            if rt.gvr in self._builtin:
                self._by_gvr[rt.gvr] = self._builtin[rt.gvr]
        return gone

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, plural))

    def by_kind(self, group: str, version: str, kind: str) -> ResourceType | None:
        for rt in self._by_gvr.values():
            if rt.group == group and rt.version == version and rt.kind == kind:
                return rt
        return None

    def storage_types(self) -> Iterator[ResourceType]:
        """One type per storage key (the storage version where a CRD has several)."""
        seen: set[tuple[str, str]] = set()
        for rt in sorted(self._by_gvr.values(), key=lambda r: not r.storage_version):
            if rt.storage_key not in seen:
                seen.add(rt.storage_key)
                yield rt

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._by_gvr.values()))

    def groups(self) -> dict[str, list[str]]:
        """group -> served versions, in the order upstream prefers (first is preferred)."""
        out: dict[str, list[str]] = {}
        for rt in self._by_gvr.values():
            versions = out.setdefault(rt.group, [])
            if rt.version not in versions:
                versions.append(rt.version)
        for versions in out.values():
            versions.sort(key=_version_priority)
        return out


def _version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes version ordering: GA > beta > alpha, then by numbers, descending."""
    import re

    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not m:
        return (3, 0, 0)
    major = int(m.group(1))
    level = {"alpha": 2, "beta": 1, None: 0}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (level, -major, -minor)
