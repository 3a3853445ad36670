"""The workload kinds a WorkloadSpread can target, and where each one lives in the API.

One table serves every part that must agree on them: the watcher lists and watches exactly these
resources, the webhook's view keeps them to follow a pod's owner chain, and the planner's
projection reads them to find a WorkloadSpread's workload and its replica count. A kind missing
from any one of those places means pods of that kind cannot be steered, so there is one table.

Built-in kinds (Kruise's webhook whitelist): Deployment, ReplicaSet, StatefulSet (``apps`` and
Kruise's Advanced StatefulSet in ``apps.kruise.io``), CloneSet and Job, whose percentages scale
against ``spec.parallelism``. Kruise's own kinds are custom resources: on a cluster without Kruise
their API is absent, and the watcher then simply has nothing to list.

Custom kinds come from the workload whitelist (``--workload-whitelist``): each entry brings its
group, version, kind and ``replicasPath``. The whitelist names kinds, but a watch needs the
resource (plural) name; without API discovery in the pure core it is derived as the API server
derives a CRD's default plural (lower-case kind, ``y`` -> ``ies``, ``s`` -> ``ses``, else ``+s``).
A kind whose CRD declares an irregular plural is therefore not watched under its real name;
its pods are then treated as not governed (see ``docs/workloadspread.md``). A whitelist
``subResources`` entry is a kind between the custom workload and its pods: a built-in kind is
already in the table; one in the custom workload's own group is taken at the same version; any
other cannot be located without discovery and is left out.

Signatures::

    BUILTIN: tuple[WorkloadKind, ...]
    workload_kinds(whitelist: Whitelist) -> WorkloadKinds
    WorkloadKinds.find(group, kind) -> WorkloadKind | None
    WorkloadKinds.resources() -> tuple[str, ...]    # "group/version/resource", watcher syntax
    default_plural(kind: str) -> str
    replicas_path_problem(paths, workload) -> ReplicasPathProblem | None  # which entry is broken
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import msgspec

from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.target import ReplicasPathError, resolve_int_path


class WorkloadKind(msgspec.Struct, frozen=True):
    """One workload kind: its API coordinates and the dot path of its replica count."""

    group: str
    version: str
    kind: str
    resource: str
    replicas_path: str
    """Dot path of the count percentages scale against; empty for a kind that has none."""
    custom: bool = False
    always_served: bool = False
    """Every cluster serves this API, so a consumer may wait for its first list. The others
    (Kruise's and custom CRDs, and Jobs, whose controller kubesim does not run) may be absent:
    use them once listed, never wait for them."""

    @property
    def spec(self) -> str:
        """``group/version/resource`` as the watcher's ``--resources`` setting spells it."""
        return (
            f"{self.group}/{self.version}/{self.resource}"
            if self.group
            else (f"{self.version}/{self.resource}")
        )


BUILTIN: Final = (
    WorkloadKind("apps", "v1", "Deployment", "deployments", "spec.replicas", always_served=True),
    WorkloadKind("apps", "v1", "ReplicaSet", "replicasets", "spec.replicas", always_served=True),
    WorkloadKind("apps", "v1", "StatefulSet", "statefulsets", "spec.replicas", always_served=True),
    WorkloadKind("apps.kruise.io", "v1beta1", "StatefulSet", "statefulsets", "spec.replicas"),
    WorkloadKind("apps.kruise.io", "v1alpha1", "CloneSet", "clonesets", "spec.replicas"),
    WorkloadKind("batch", "v1", "Job", "jobs", "spec.parallelism"),
)


def default_plural(kind: str) -> str:
    """The resource name the API server gives a kind when its CRD declares no other."""
    lower = kind.lower()
    if lower.endswith("s"):
        return lower + "es"
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    return lower + "s"


class WorkloadKinds:
    """The table for one whitelist: built-in kinds first, then the custom ones."""

    def __init__(self, kinds: tuple[WorkloadKind, ...]) -> None:
        self.kinds = kinds
        self._by_kind = {(k.group, k.kind): k for k in kinds}

    def __iter__(self) -> Iterator[WorkloadKind]:
        return iter(self.kinds)

    def find(self, group: str, kind: str) -> WorkloadKind | None:
        return self._by_kind.get((group, kind))

    def resources(self) -> tuple[str, ...]:
        """Each resource once, in table order."""
        return tuple(dict.fromkeys(k.spec for k in self.kinds))


def workload_kinds(whitelist: Whitelist | None = None) -> WorkloadKinds:
    """Built-in kinds plus the whitelist's; an entry without group, version or kind is skipped."""
    table = {(k.group, k.kind): k for k in BUILTIN}
    for custom in whitelist.workloads if whitelist is not None else ():
        if not (custom.version and custom.kind) or (custom.group, custom.kind) in table:
            continue
        table[(custom.group, custom.kind)] = WorkloadKind(
            custom.group,
            custom.version,
            custom.kind,
            default_plural(custom.kind),
            custom.replicas_path,
            custom=True,
        )
        for sub in custom.sub_resources:
            if (sub.group, sub.kind) in table or sub.group != custom.group or not sub.kind:
                continue
            table[(sub.group, sub.kind)] = WorkloadKind(
                sub.group, custom.version, sub.kind, default_plural(sub.kind), "", custom=True
            )
    return WorkloadKinds(tuple(table.values()))


class ReplicasPathProblem(msgspec.Struct, frozen=True):
    """A ``targetFilter.replicasPathList`` entry that does not lead to an integer."""

    field: str
    """``spec.targetFilter.replicasPathList[i]``."""
    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.field}: {self.path!r} does not resolve in the workload: {self.reason}"


def replicas_path_problem(
    paths: Sequence[str], workload: Mapping[str, Any] | None
) -> ReplicasPathProblem | None:
    """The first entry of ``replicasPathList`` that does not resolve, with its field path."""
    if workload is None:
        return None
    for index, path in enumerate(paths):
        try:
            resolve_int_path(workload, path)
        except ReplicasPathError as exc:
            field = f"spec.targetFilter.replicasPathList[{index}]"
            return ReplicasPathProblem(field, path, str(exc))
    return None
