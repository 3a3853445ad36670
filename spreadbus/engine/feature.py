"""A feature: one capability's rules, handlers, API needs and offline commands, in one value.

The services, the CLI and the RBAC table know a capability only through its :class:`Feature`,
listed once in :mod:`spreadbus.features`; adding one is a package plus a line there. A feature
brings what each part of the system runs of it, and nothing runs what it does not declare:

- ``bus`` and ``buckets``: what each service's part of it does on NATS, and the key-value buckets
  it keeps (created by ``spreadbus bus-setup``, never by a service);
- ``watches``: the resources the watcher lists and watches for it (``[group/]version/resource``);
- ``kinds``, ``status_history`` and ``audit``: the kinds of the resources it brings (the watcher
  names them on listed objects), the resources whose status transitions the watcher records,
  and its part of the audit log (:class:`~spreadbus.audit.hook.FeatureAudit`);
- ``plan_grants``: every kind of plan its rules may emit (verb, resource, the paths a patch may
  write, the owner a target must have): the actuator applies nothing else, and its RBAC is
  derived from them (:mod:`spreadbus.engine.plan_grants`);
- ``planner``: builds its planner side (rules, and streams it folds beside the observations);
- ``webhook``: builds its webhook side (admission handlers, a fold of the observations, routes
  for CRD conversion);
- ``webhook_pods``: what its webhook side keeps of each pod in the replica's one pod view
  (:mod:`spreadbus.projection.pod_view`), which the side reads as ``ctx.pods``;
- ``validators``: the offline and online validation of the kinds it owns;
- ``offline_admit`` and ``offline_plan``: what ``spreadbus admit`` and ``spreadbus plan`` answer
  for it;
- ``settings``: its settings model, whose fields become flags and ``SPREADBUS_*`` variables of
  the services that use them (:mod:`spreadbus.engine.feature_settings`).

The planner and webhook sides are built by async factories because a side may need NATS before it
can serve (a key-value bucket to bind). Factories receive the feature's own settings, typed as
its model (``ctx.settings``), built from what the service loaded; a feature without settings gets
an empty :class:`~spreadbus.engine.feature_settings.FeatureSettings`.

Signatures::

    Feature(name, settings=None, watches=(), plan_grants=(), planner=None, webhook=None,
            webhook_pods=None, validators={}, offline_plan=None)
    PlannerSide(rules, streams=())
    SideStream(stream, fold, resource)
    WebhookSide: handlers, conversions, apply_message, progressed, start, stop, gauges
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Protocol

from typing_extensions import TypeVar

from events.shards import ONE, Shards
from kubesemantics.field_errors import FieldError
from spreadbus.engine.admission_chain import AdmissionHandler
from spreadbus.engine.bus_access import BucketSpec, BusAccess
from spreadbus.engine.conversion_review import Convert
from spreadbus.engine.feature_settings import FeatureSettings
from spreadbus.engine.plan_grants import PlanGrant
from spreadbus.projection.planning import Rule
from spreadbus.projection.pod_view import Keep, PodPart
from spreadbus.projection.tracking import Fold

if TYPE_CHECKING:
    from nats.aio.client import Client

    from spreadbus.audit.hook import FeatureAudit

FS = TypeVar("FS", bound=FeatureSettings, default=FeatureSettings)
"""A feature's settings model."""


@dataclass(frozen=True, kw_only=True)
class SideStream:
    """A stream the planner folds beside the observations, from its start on every start.

    ``fold`` returns the cluster and object key a message changed, or ``None``; the rules are
    offered ``(side_resource_key(cluster, resource), key)`` on the next round, which the rule of
    that cluster reads (:mod:`spreadbus.projection.cluster_rules`). The planner keeps the fold's
    position (:class:`~spreadbus.projection.tracking.Tracked`). Side streams are not in
    snapshots, so each must be cheap to replay whole (one message per key, as a key-value
    bucket's).
    """

    stream: str
    fold: Fold[tuple[str, str] | None]
    resource: str
    """The pseudo resource key the rules see for a change of this stream."""


@dataclass(frozen=True, kw_only=True)
class PlannerSide:
    rules: Sequence[Rule]
    streams: Sequence[SideStream] = ()


@dataclass(frozen=True, kw_only=True)
class PlannerContext(Generic[FS]):
    cluster: str
    settings: FS
    nc: Client | None = None
    shards: Shards = ONE
    """The planner's shard: a rule writing to an object outside its namespaces' own (a
    cluster-scoped one naming namespaced objects) decides only for the namespaces it owns."""


@dataclass(frozen=True, kw_only=True)
class WebhookContext(Generic[FS]):
    cluster: str
    settings: FS
    nc: Client | None
    clock: Callable[[], float]
    stream_drained: Callable[[], bool]
    """Whether the observation follower has nothing pending: every fold holds the whole stream."""
    pods: PodPart[Any] | None = None
    """The feature's forms of the cluster's pods in the replica's one pod view (what its
    ``webhook_pods`` keeps), folded before the side's ``apply_message`` sees the same message;
    ``None`` when it keeps none."""


class WebhookSide:
    """A feature's part of a webhook replica; every method has a do-nothing default."""

    handlers: Sequence[AdmissionHandler] = ()
    conversions: Mapping[str, Convert] = {}
    """Path -> conversion of one object to a desired apiVersion (CRD conversion webhook)."""

    def apply_message(self, seq: int, subject: str, data: bytes) -> None:
        """Fold one message of the observation stream (each replica folds it once per side)."""

    def progressed(self) -> None:
        """The observation follower delivered messages or caught up."""

    def gauges(self) -> Mapping[str, tuple[str, Callable[[], float]]]:
        """Metric name -> (help, reader), read at scrape time."""
        return {}

    async def start(self) -> None:
        """Before the first review is served."""

    async def stop(self) -> None:
        """After the last review was answered."""


class UnreadableInput(ValueError):
    """Offline input a feature cannot decide on: exit 2. ``in_file``: the reason is about the
    input file's content (a configuration object that does not decode), so the command names
    the file before it; otherwise the reason names the object itself."""

    def __init__(self, reason: str, *, in_file: bool = True) -> None:
        super().__init__(reason)
        self.in_file = in_file


@dataclass(frozen=True, kw_only=True)
class OfflineValidation:
    """What the defaulting and validating webhooks would answer for one object."""

    errors: Sequence[FieldError]
    defaulted: Mapping[str, Any] | None = None
    """The object after the kind's defaulting webhook; ``None``: it has none (unchanged)."""


@dataclass(frozen=True, kw_only=True)
class OfflinePlan:
    """A feature's part of ``spreadbus plan``: top-level keys of the JSON answer, text lines."""

    answer: Mapping[str, Any]
    lines: Sequence[str] = ()


@dataclass(frozen=True, kw_only=True)
class OfflineAdmission:
    """A feature's answer to ``spreadbus admit``: its decision, JSON keys and text lines."""

    allowed: bool
    message: str = ""
    code: int = 403
    """HTTP status of a denial (403 Forbidden, 429 TooManyRequests, 400 BadRequest)."""
    reason: str = "Forbidden"
    patch: Sequence[Mapping[str, Any]] = ()
    answer: Mapping[str, Any] = field(default_factory=dict)
    lines: Sequence[str] = ()


class Admit(Protocol):
    """``old_pod``: the stored pod of an UPDATE (``pod`` is then the new one)."""

    def __call__(self, pod: dict[str, Any], objects: Sequence[dict[str, Any]], /, *,
                 operation: str, now: datetime,
                 old_pod: dict[str, Any] | None = None) -> OfflineAdmission: ...


class Validator(Protocol):
    def __call__(self, obj: dict[str, Any], *, old: dict[str, Any] | None,
                 context: Sequence[dict[str, Any]]) -> OfflineValidation: ...


@dataclass(frozen=True, kw_only=True)
class Feature(Generic[FS]):
    name: str
    settings: type[FS] | None = None
    """Its settings model; each field names the services that use it (``UsedBy``)."""
    watches: tuple[str, ...] = ()
    plan_grants: tuple[PlanGrant, ...] = ()
    bus: Mapping[str, BusAccess] = field(default_factory=dict)
    """Service name -> what its part of that service does on NATS beyond the core streams: the
    service's user is allowed exactly that (:mod:`spreadbus.engine.bus_access`)."""
    buckets: tuple[BucketSpec, ...] = ()
    """The key-value buckets it keeps, created by ``spreadbus bus-setup``."""
    planner: Callable[[PlannerContext[FS]], Awaitable[PlannerSide]] | None = None
    webhook: Callable[[WebhookContext[FS]], Awaitable[WebhookSide]] | None = None
    webhook_pods: Keep[Any] | None = None
    """What its webhook side keeps of each pod, ``keep(pod, name, namespace)``: a compact form
    that compares equal for two pods its decisions read alike (:mod:`spreadbus.projection.
    pod_view`)."""
    validators: Mapping[tuple[str, str], Validator] = field(default_factory=dict)
    """(API group, kind) -> validation of an object of that kind; ``context`` is every other
    object of the input."""
    control_plane_validators: Mapping[tuple[str, str], Validator] = field(default_factory=dict)
    """The same where the objects' cluster is a multi-cluster host's control plane, which runs
    no workloads (``spreadbus validate --uniteddeployment-control-plane true``, as the host's
    webhook is run); a kind not here is validated as anywhere."""
    offline_admit: Admit | None = None
    """What ``spreadbus admit`` answers for a pod's CREATE, UPDATE, DELETE or EVICT."""
    offline_plan: Callable[[Sequence[dict[str, Any]], datetime], OfflinePlan] | None = None
    """What ``spreadbus plan`` shows for the objects at a time."""
    kinds: Mapping[str, str] = field(default_factory=dict)
    """Resource -> kind of the custom resources it brings (``workloadspreads`` ->
    ``WorkloadSpread``): a listed item lacks its kind until the list names it."""
    status_history: tuple[tuple[str, str], ...] = ()
    """(group, resource) of the objects whose status transitions the watcher records in
    ``HISTORY``, each as the audit log keeps it."""
    audit: FeatureAudit | None = None
    """Its part of the audit log: columns and rows it adds, what ``spreadbus why`` tells."""
