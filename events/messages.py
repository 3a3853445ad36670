"""Every message on the bus: frozen msgspec structs in one tagged union, JSON on the wire.

Each message carries ``type`` (the union tag) and ``v`` (its schema version). Evolution follows
msgspec's rules so old and new services can share a stream:

- a new field always has a default, a field never changes type, a removed field is only ever
  ignored; unknown fields are ignored on decode, so a ``v+1`` message decodes as ``v``;
- a breaking change bumps ``v`` and registers an upcaster in :mod:`events.codec` that rewrites the
  old shape into the new one at decode time.

Time is data: the watcher stamps observations, the planner plans, the actuator outcomes (``ts`` in
Unix seconds). Consumers copy ``ts`` and never read their own clock for state.

Observation objects are kept exactly as the API served them (minus ``metadata.managedFields``) so
subscribers in any language see the Kubernetes JSON they already know.
"""

from __future__ import annotations

from typing import Any, Final, Literal, get_args

import msgspec

SCHEMA_VERSION: Final = 1

WatchEventType = Literal["ADDED", "MODIFIED", "DELETED"]
Verb = Literal["patch", "patch_status", "evict", "create", "delete"]
VERBS: Final[frozenset[str]] = frozenset(get_args(Verb))
PropagationPolicy = Literal["Background", "Foreground", "Orphan"]
PatchType = Literal["merge", "strategic", "json"]
Result = Literal["applied", "failed", "skipped"]


class _Message(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Base of every bus message: the tag field is ``type``, the version field is ``v``."""

    v: int = SCHEMA_VERSION


class ResourceRef(msgspec.Struct, frozen=True, kw_only=True):
    """One API resource: ``group`` is ``""`` for the core group (pods, nodes)."""

    group: str
    version: str
    resource: str


class ObjectRef(ResourceRef, frozen=True, kw_only=True):
    """One object of a resource; ``namespace`` is ``""`` for cluster-scoped objects."""

    namespace: str = ""
    name: str
    uid: str = ""


class _OfResource(_Message, frozen=True, kw_only=True):
    """A message about one resource of one cluster (its fields come first, in this order)."""

    cluster: str
    group: str
    version: str
    resource: str


class Observation(_OfResource, frozen=True, kw_only=True, tag="observation"):
    """One Kubernetes watch event (or a difference found by a relist)."""

    event: WatchEventType
    object: dict[str, Any]
    relist: bool = False
    """True when a relist found this difference rather than the watch delivering it."""
    ts: float = 0.0
    oversize: int = 0
    """The object's size in bytes when it was too large for the bus (NATS ``max_payload``);
    ``object`` then holds only its ``apiVersion``, ``kind`` and ``metadata`` identity (name,
    namespace, uid, resourceVersion, generation), so consumers know it exists and changed."""


class SyncMarker(_OfResource, frozen=True, kw_only=True, tag="sync"):
    """A (re)list of one resource started (``complete=False``) or finished (``complete=True``).

    Consumers decide on a resource only while its latest marker is complete: the projection then
    holds everything the list returned plus every watch event after it.
    """

    complete: bool
    resource_version: str = ""
    count: int = 0
    ts: float = 0.0


class Precondition(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What must still hold when the plan is applied; an unmet precondition fails the plan."""

    uid: str = ""
    resource_version: str = ""
    seen_version: str = ""
    """The resourceVersion the plan was decided on, not a condition: a uid-only plan naming it
    that only sets annotations or labels is written without reading the object first (a JSON
    patch testing the uid), and the object is read only if that write is refused."""


class Plan(_Message, frozen=True, kw_only=True, tag="plan"):
    """A change the planner wants made. ``id`` is a hash of what and why, so equal plans collide.

    ``create`` carries the whole object in ``object``, named as ``target`` names it (never by
    ``generateName``); ``delete`` names the object's uid in ``precondition`` and deletes with
    ``propagation_policy``.
    """

    id: str
    cluster: str
    verb: Verb
    target: ObjectRef
    patch_type: PatchType = "merge"
    patch: Any = None
    """A JSON merge or strategic merge patch (an object) or a JSON patch (a list of operations)."""
    precondition: Precondition = Precondition()
    rule: str
    reason: str = ""
    causes: list[int] = []
    """Stream sequences of the observations that made this plan necessary."""
    ts: float = 0.0
    object: dict[str, Any] | None = None
    """The object a ``create`` makes; its controller owner reference tells an object this plan
    (or an equal one) already created from one that someone else holds the name with."""
    propagation_policy: PropagationPolicy = "Background"
    """How a ``delete`` treats the object's dependents (Kubernetes ``DeleteOptions``)."""
    governor: ObjectRef | None = None
    """The object whose decision this plan carries out (a WorkloadSpread, a UnitedDeployment,
    ...). The actuator applies a plan only within what its governor may touch: the governor
    itself, objects of its namespace it controls or governs, or (a cluster-scoped governor)
    the objects it names; a plan without one is refused."""
    governor_generation: int = 0
    """The governor's ``metadata.generation`` the plan was decided on. The actuator reads the
    governor before anything else: a plan whose governor is gone, or has moved on to a later
    generation, is dropped unsent (``failed``, and decided again from the newer state); one
    naming a generation the governor never reached is refused."""
    governor_cluster: str = ""
    """The cluster whose API server holds the governor, when it is not the plan's own (a
    UnitedDeployment in the host, for its subset workload in a member); the actuator reads it
    there and applies the plan only under a grant for objects that name their governor across
    clusters. Empty: the plan's own cluster."""


class ApiError(msgspec.Struct, frozen=True, kw_only=True):
    """The Kubernetes API's answer when it refused a plan."""

    status: int
    reason: str = ""
    message: str = ""


class Outcome(_Message, frozen=True, kw_only=True, tag="outcome"):
    """The single final result of one plan."""

    plan_id: str
    cluster: str
    verb: Verb
    target: ObjectRef
    result: Result
    error: ApiError | None = None
    resource_version: str = ""
    """The object's resourceVersion after the change (applied) or as found (skipped)."""
    attempts: int = 1
    ts: float = 0.0


class SubsetView(msgspec.Struct, frozen=True, kw_only=True):
    """One subset as an admission decision saw it."""

    name: str
    occupancy: int = 0
    """Pods counted in the subset: active, minus those being deleted, plus those being created."""
    limit: int | None = None
    """The subset's limit scaled against the workload's replicas; ``None`` is unlimited."""
    minimum: int = 0
    schedulable: bool = True


class Admission(_Message, frozen=True, kw_only=True, tag="admission"):
    """A webhook decision on a pod being created: the subset it was steered into, and why.

    ``subset`` is empty when no subset had room (the pod is admitted unchanged). The fields from
    ``reason`` on are the decision's evidence; a webhook older than them leaves them empty.
    """

    cluster: str
    namespace: str
    request_uid: str
    pod_name: str = ""
    """The pod's name, or the reservation key the webhook generated for a ``generateName`` pod
    (the key is also written into the pod's ``matched-workloadspread`` annotation)."""
    generate_name: str = ""
    workload: str = ""
    """``<kind>/<name>`` of the spreading resource (e.g. ``WorkloadSpread/ws-a``)."""
    subset: str = ""
    ts: float = 0.0
    reason: str = ""
    """Why this subset (or none), in words, e.g. ``fixed is full (100/100); elastic has room``."""
    subsets: list[SubsetView] = []
    """Every subset of the spreading resource, in spec order, as the decision counted it."""
    target: str = ""
    """``<kind>/<name>`` of the pod's workload (e.g. ``Deployment/web``)."""
    replicas: int = 0
    """The workload's replicas percentages were scaled against."""
    version: str = ""
    """The pod's workload version the loads were counted for."""
    replica: str = ""
    """Which webhook replica decided (its host name)."""
    ledger_revision: int = 0
    """The reservation ledger entry's revision after the decision was recorded (0: unknown)."""


PodPoint = Literal["created", "bound", "ready", "unready", "deleting", "deleted"]


class PodLifecycle(_Message, frozen=True, kw_only=True, tag="pod"):
    """A point in a pod's life, from the watcher: what a placement question needs."""

    cluster: str
    namespace: str
    name: str
    uid: str = ""
    point: PodPoint
    node: str = ""
    owner: str = ""
    """``<kind>/<name>`` of the pod's controller, if any."""
    resource_version: str = ""
    reason: str = ""
    """``status.reason`` and ``status.message`` when the pod has them (e.g. ``Evicted``)."""
    annotations: dict[str, str] = {}
    """The pod's annotations at ``created`` (its placement is written there), else empty."""
    ts: float = 0.0


class StatusChange(_OfResource, frozen=True, kw_only=True, tag="status"):
    """A governing object's ``status`` changed (WorkloadSpread, UnitedDeployment, ...), or, with
    ``deleted``, the object is gone (``status`` then is the last one it had)."""

    namespace: str = ""
    name: str
    uid: str = ""
    generation: int = 0
    resource_version: str = ""
    status: dict[str, Any] = {}
    ts: float = 0.0
    deleted: bool = False


Event = Observation | SyncMarker | Plan | Outcome | Admission | PodLifecycle | StatusChange
EVENT_TYPES: Final[tuple[type[_Message], ...]] = (
    Observation, SyncMarker, Plan, Outcome, Admission, PodLifecycle, StatusChange
)
TAGS: Final[frozenset[str]] = frozenset(
    {"observation", "sync", "plan", "outcome", "admission", "pod", "status"}
)
