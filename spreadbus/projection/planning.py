"""The rule seam: rules say what should be true, the planner turns differences into plans.

A **rule** is a pure function of the projected state: given the projection, the keys that changed
since the last decision and ``now``, it returns a :class:`Desired` for every object it has an
opinion about among those affected. It reads the whole state (never the type of the last event),
performs no I/O and keeps no memory between calls; the same state gives the same answer.

The **planner** (:func:`plans_for`) then diffs each ``Desired`` against the observed object:
nothing to do when the patch is already true (or the object to evict or delete is gone, or
already being deleted, or the object to create is observed), otherwise a
:class:`~events.messages.Plan` with a deterministic id, unless the decision log says an equal plan
is in flight or already answered.

Creating and deleting:

- ``delete`` is planned only for an observed object, with the observed uid as precondition, like
  an eviction; an object that already has a ``deletionTimestamp`` is taken as deleted.
- ``create`` is planned only while the object is not observed. The rule names it
  (``target.name``, never ``generateName``) and gives it whole in ``Desired.object``; the plan
  carries it with ``metadata.name`` and ``namespace`` taken from the target. There is no observed
  version to tell one decision from the next, so the id covers the newest plan of its slot
  instead: equal as long as the log holds the same answer, new once a create of the object was
  answered and the object is wanted again (deleted since, or not yet observed: the second plan
  then finds it and is ``skipped``). A failed create of the same intent stays failed until the
  decision log forgets it (:meth:`DecisionLog.prune`), so a create the API keeps refusing is not
  retried in a loop.

The precondition is the rule's choice (``Desired.precondition``):

- ``"uid"`` (the default) for patches that are true or false by themselves, whatever else the
  object holds: an annotation value, a deletion cost, an eviction. The plan lands on the object it
  was decided for even if the object moved on meanwhile (a pod starting up, a Deployment whose
  status its controller updates), so such plans do not fail and get re-planned on every change.
  A stale write is harmless: it is observed like any change and the rule corrects it. While a
  plan for the same intent (target, verb, patch) is in flight, a newer observation does not
  re-emit it: the id starts with a hash of the intent alone so the decision log can tell.
- ``"resource_version"`` where the patch is computed from the rest of the object (a status
  derived from the spec and ``observedGeneration``): a plan decided on a state that has since
  moved on fails with Conflict instead of writing stale intent, and the change that moved it
  triggers a fresh plan.

Every plan also names the resourceVersion it was decided on (``precondition.seen_version``): not
a condition, but what lets the actuator write a uid-only plan without reading the object first
(see :mod:`services.actuator.application`).

A plan that carries out a governor's decision names the governor's ``metadata.generation`` the
rule read (``Desired.governor_generation``). The actuator drops a plan whose governor has moved on
to a later generation (``failed``); the generation is part of the intent, so the decision made
again on the newer generation is a new plan, never the dropped one's id (a create included).

A rule can also state its precondition inside the patch: a JSON patch (``patch_type="json"``)
whose ``test`` ops name exactly what must still hold, followed by the write (observed-generation
tests ``/metadata/generation`` and adds the annotation). Unrelated changes then do not fail it, and
with the ``"uid"`` precondition an equal intent in flight is not re-planned. A JSON patch is never
taken as already true here or by the actuator, so such a rule leaves out objects that already
hold what it wants.

Creates are bounded per governor, as Kruise's and Kubernetes' expectations bound a controller's:
a governor has at most :data:`MAX_OUTSTANDING_CREATES` creates outstanding, a create being
outstanding from its plan until its object is observed (in flight, or answered ``applied`` or
``skipped`` less than :data:`CREATE_EXPECTATION_SECONDS` ago). The creates beyond the bound are
not planned this round; the governor is offered again as its objects are observed (its rule sees
them) and, in case nothing is, after :data:`DEFERRED_CREATES_RETRY_SECONDS`
(:meth:`DecisionLog.deferred_due`). An absurd object (10,000 subsets admitted past the webhook)
then has a bounded number of creates queued for the actuator, and its deletion leaves no more than
that behind. Counting reads the governor's creates the rule wants this round, so a rule states
every create a governor still wants whenever it decides for that governor (the UnitedDeployment
rule reconciles the whole object).

``Desired.serial`` keeps one plan per object in flight (a status is rewritten as a whole, so
planning the next one before the previous landed only makes the previous fail). The planner
offers the object again when that plan is answered (:meth:`DecisionLog.apply_outcome` names the
slot), and whenever a plan fails. A plan unanswered for :data:`PLAN_LOST_SECONDS` is taken as
lost by the bus and decided again under a new id (the planner offers held objects again then:
:meth:`DecisionLog.lost_holds`).

An eviction or deletion a disruption budget refused (:mod:`spreadbus.projection.refusal_backoff`)
is not re-planned while its backoff runs, whatever the object does meanwhile; once it is over (the
planner offers the object again then: :meth:`DecisionLog.due_retries`), a rule that still wants it
gets a plan under a new id, covering the refused one, as ``kubectl drain`` retries. A rule that
no longer wants it (the pod went, the rebalance ended) simply does not ask.

Signatures::

    class Rule(Protocol):
        name: str
        resources: tuple[ResourceRef, ...]        # what it reads; decisions wait for their sync
        def desired(self, view: KubeProjection, changed: Set[tuple[str, str]],
                    now: float) -> list[Desired]: ...

    plans_for(rule: Rule, view: KubeProjection, log: DecisionLog, desired: Iterable[Desired],
              *, cluster: str, now: float,
              max_outstanding_creates: int = MAX_OUTSTANDING_CREATES) -> list[Plan]
    class Timed(Protocol):                        # optional, for time-based transitions
        def due(self, now: float) -> set[tuple[str, str]]: ...
        def next_wake(self) -> float | None: ...

    class ReadsPlans(Protocol):                   # optional, for rules that read their plans
        def read_plans(self, log: DecisionLog) -> None: ...

    plan_id(cluster: str, rule: str, desired: Desired, observed_version: str) -> str
    patch_satisfied(observed: Any, patch: Any) -> bool        # JSON merge patch semantics
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence, Set
from typing import Any, Final, Literal, Protocol, runtime_checkable

import msgspec

from events.messages import (
    ObjectRef,
    PatchType,
    Plan,
    Precondition,
    PropagationPolicy,
    ResourceRef,
    Verb,
)
from spreadbus.projection.decision_log import DecisionLog, PlanRecord, slot_of
from spreadbus.projection.kube_state import KubeProjection, object_key, resource_key


class Desired(msgspec.Struct, frozen=True, kw_only=True):
    """What a rule wants true of one object."""

    verb: Verb
    target: ObjectRef
    patch: Any = None
    patch_type: PatchType = "merge"
    reason: str = ""
    precondition: Literal["uid", "resource_version"] = "uid"
    """What must still hold when the plan is applied; see the module docstring."""
    serial: bool = False
    """Emit no new plan for this object while its previous one is in flight. For writes that
    replace a whole computed value (a status): the next plan is decided from the observation of
    the previous write instead of racing it; its answer offers the object again."""
    object: dict[str, Any] | None = None
    """The whole object a ``create`` makes (with its controller owner reference)."""
    propagation_policy: PropagationPolicy = "Background"
    """How a ``delete`` treats the object's dependents."""
    governor: ObjectRef | None = None
    """The object whose decision this is; the plan carries it (see ``Plan.governor``)."""
    governor_generation: int = 0
    """The governor's ``metadata.generation`` the decision was made on (see
    ``Plan.governor_generation``); part of the intent, so a decision made again on a newer
    generation is a new plan."""
    cluster: str = ""
    """The cluster of the target (and of the governor); ``""``: the planner's own. Set by
    :class:`~spreadbus.projection.cluster_rules.EveryCluster` for the rule it runs per cluster."""
    governor_cluster: str = ""
    """The governor's cluster when it is not the target's (see ``Plan.governor_cluster``)."""


class Rule(Protocol):
    name: str
    resources: tuple[ResourceRef, ...]

    def desired(
        self, view: KubeProjection, changed: Set[tuple[str, str]], now: float
    ) -> list[Desired]: ...


@runtime_checkable
class Timed(Protocol):
    """A rule that wants to look again at a time, without any new event."""

    def due(self, now: float) -> set[tuple[str, str]]:
        """Keys whose time has come (each handed out once); the planner adds them to changed."""
        ...

    def next_wake(self) -> float | None: ...


@runtime_checkable
class ReadsPlans(Protocol):
    """A rule whose decisions also depend on what became of its plans (on their way, refused):
    the planner hands it the decision log before every round. It reads it like the projection,
    never writes it."""

    def read_plans(self, log: DecisionLog) -> None: ...


PLAN_LOST_SECONDS: Final = 60.0
"""A plan still unanswered this long after it was decided is taken as lost and decided again.

An actuator answers every plan it is given (after at most ``max_deliveries`` deliveries of
``ack_wait``, 75 s by default, it gives a plan up as failed), so a plan without an answer this
long after it was decided is one the bus lost: nats-server killed before its last writes reached
its store, the plan or its outcome with them. Without this, a serial plan (a status) lost that way
would hold its object's next decision forever. Deciding again is safe: every verb is idempotent
under its precondition, and a plan that was only late is answered ``skipped`` or ``failed``.
"""
MAX_OUTSTANDING_CREATES: Final = 128
"""Creates one governor may have outstanding. Above what a valid governor makes at once (a
UnitedDeployment: at most 100 subset workloads and a revision), so only an absurd one waits; and
what bounds the creates of one governor queued for the actuator."""
CREATE_EXPECTATION_SECONDS: Final = 60.0
"""How long an answered create counts as outstanding while its object is not observed yet. The
watcher reports a created object within seconds; one never reported (deleted at once, or a lost
observation) stops holding the governor's other creates back after this."""
DEFERRED_CREATES_RETRY_SECONDS: Final = 2.0
"""When a governor with creates held back is offered again if nothing else offers it."""
_CANONICAL: Final = msgspec.json.Encoder(order="sorted")
_INTENT_DIGITS: Final = 16
"""Hex digits of :func:`intent_id`, which begin every plan id."""


def intent_id(cluster: str, rule: str, desired: Desired) -> str:
    """What is wanted of which object, whatever version it was seen at (16 hex digits)."""
    parts: list[Any] = [cluster, rule, desired.verb, desired.target, desired.patch_type,
                        desired.patch, desired.precondition]
    if desired.verb == "create":
        parts.append(desired.object)
    elif desired.verb == "delete":
        parts.append(desired.propagation_policy)
    if desired.governor_generation:
        parts.append(desired.governor_generation)
    if desired.governor_cluster:
        parts.append(["governor_cluster", desired.governor_cluster])
    return hashlib.sha256(_CANONICAL.encode(parts)).hexdigest()[:_INTENT_DIGITS]


def plan_id(cluster: str, rule: str, desired: Desired, observed_version: str) -> str:
    """Same decision from the same observed version -> same id, on any planner, any time.

    The first 16 digits are :func:`intent_id`, the rest also covers the observed version.
    """
    intent = intent_id(cluster, rule, desired)
    material = _CANONICAL.encode([intent, observed_version])
    return intent + hashlib.sha256(material).hexdigest()[:_INTENT_DIGITS]


def patch_satisfied(observed: Any, patch: Any) -> bool:
    """Would applying this JSON merge patch change nothing? (``None`` in a patch deletes.)"""
    if not isinstance(patch, dict):
        return bool(observed == patch)
    if not isinstance(observed, dict):
        return False
    for key, value in patch.items():
        if value is None:
            if key in observed:
                return False
        elif key not in observed or not patch_satisfied(observed[key], value):
            return False
    return True


def plans_for(
    rule: Rule,
    view: KubeProjection,
    log: DecisionLog,
    desired: Iterable[Desired],
    *,
    cluster: str,
    now: float,
    max_outstanding_creates: int = MAX_OUTSTANDING_CREATES,
) -> list[Plan]:
    plans: list[Plan] = []
    wanted = list(desired)
    home = cluster
    outstanding = _outstanding_creates(rule, view, log, wanted, cluster=home, now=now)
    for want in wanted:
        cluster = want.cluster or home
        target = want.target
        rkey = resource_key(cluster, target.group, target.resource)
        okey = object_key(target.namespace, target.name)
        stored = view.stored(rkey, okey)
        observed = view.decoded(rkey, okey)  # as the rule read it this round: decoded once
        creating = want.verb == "create"
        if creating:
            if observed is not None:
                continue  # it exists: nothing to create
        elif observed is None:
            continue  # nothing to change yet, or gone; the rule runs again when it appears
        elif want.verb == "delete" and observed.get("metadata", {}).get("deletionTimestamp"):
            continue  # already being deleted
        elif (want.verb in ("patch", "patch_status") and want.patch_type == "merge"
              and patch_satisfied(observed, want.patch)):
            continue
        slot = slot_of(cluster, rule.name, want.verb, target.group, target.resource,
                       target.namespace, target.name)
        newest = log.newest(slot)
        metadata = observed.get("metadata", {}) if observed else {}
        version = str(metadata.get("resourceVersion", ""))
        basis = version
        if creating and newest is not None:
            if (newest.status == "failed"
                    and newest.id[:_INTENT_DIGITS] == intent_id(cluster, rule.name, want)):
                continue  # refused; decided again once the log forgets the refusal
            basis = f"after:{newest.id}"
        if newest is not None and newest.refused and not creating:
            if now < newest.retry_at():
                continue  # a budget refused it: decided again after the backoff
            basis = f"{basis}:retry:{newest.id}"
        lost = (newest is not None and newest.status == "in_flight"
                and now - newest.ts > PLAN_LOST_SECONDS)
        governor = _governor_key(cluster, want) if creating else None
        adds = governor is not None and not _outstanding(newest, now)
        if (governor is not None and adds
                and outstanding.get(governor, 0) >= max_outstanding_creates):
            log.defer(governor, now + DEFERRED_CREATES_RETRY_SECONDS)
            continue  # beyond the bound: planned once some of the governor's creates land
        if lost and newest is not None and not creating:
            basis = f"{basis}:after:{newest.id}"  # its id may still be in the dedup window
        pid = plan_id(cluster, rule.name, want, basis)
        if log.status(slot, pid) is not None:
            continue  # in flight, or already answered for this very observation
        if (newest is not None and not creating and newest.status != "in_flight"
                and not newest.refused and newest.seen == version
                and newest.id[:_INTENT_DIGITS] == pid[:_INTENT_DIGITS]):
            continue  # answered under another id (a retry's, a lost plan's) for this observation
        if newest is not None and newest.status == "in_flight" and not lost:
            if want.serial:
                log.hold(slot)  # decided again once the previous plan is answered
                continue
            if ((want.precondition == "uid" or creating)
                    and newest.id[:_INTENT_DIGITS] == pid[:_INTENT_DIGITS]):
                continue  # the same intent is on its way; it does not depend on the version
        plans.append(
            Plan(
                id=pid,
                cluster=cluster,
                verb=want.verb,
                target=target,
                patch_type=want.patch_type,
                patch=want.patch,
                precondition=Precondition(
                    uid=str(metadata.get("uid", "")),
                    resource_version=version if want.precondition == "resource_version" else "",
                    seen_version=version,
                ),
                rule=rule.name,
                reason=want.reason,
                causes=[stored.seq] if stored is not None else [],
                ts=now,
                object=_named(want) if creating else None,
                propagation_policy=want.propagation_policy,
                governor=want.governor,
                governor_generation=want.governor_generation,
                governor_cluster=want.governor_cluster,
            )
        )
        if governor is not None and adds:
            outstanding[governor] = outstanding.get(governor, 0) + 1
    return plans


def _governor_key(cluster: str, want: Desired) -> tuple[str, str] | None:
    governor = want.governor
    if governor is None:
        return None
    return (resource_key(want.governor_cluster or cluster, governor.group, governor.resource),
            object_key(governor.namespace, governor.name))


def _outstanding(newest: PlanRecord | None, now: float) -> bool:
    """A create planned and not yet seen to land: in flight (not lost), or answered as made so
    recently that its object may not be observed yet."""
    if newest is None:
        return False
    if newest.status == "in_flight":
        return now - newest.ts <= PLAN_LOST_SECONDS
    return newest.status in ("applied", "skipped") and now - newest.ts < CREATE_EXPECTATION_SECONDS


def _outstanding_creates(rule: Rule, view: KubeProjection, log: DecisionLog,
                         desired: Sequence[Desired], *, cluster: str,
                         now: float) -> dict[tuple[str, str], int]:
    """Per governor, the creates it wants whose objects are planned and not yet observed."""
    counts: dict[tuple[str, str], int] = {}
    home = cluster
    for want in desired:
        if want.verb != "create":
            continue
        cluster = want.cluster or home
        governor = _governor_key(cluster, want)
        if governor is None:
            continue
        target = want.target
        if view.stored(resource_key(cluster, target.group, target.resource),
                       object_key(target.namespace, target.name)) is not None:
            continue  # observed: landed
        slot = slot_of(cluster, rule.name, want.verb, target.group, target.resource,
                       target.namespace, target.name)
        if _outstanding(log.newest(slot), now):
            counts[governor] = counts.get(governor, 0) + 1
    return counts


def _named(want: Desired) -> dict[str, Any]:
    """The object to create, named as the target names it; without one the rule is at fault."""
    if not isinstance(want.object, dict):
        raise ValueError(f"a create of {want.target.name!r} carries no object")
    obj = dict(want.object)
    metadata = {k: v for k, v in obj.get("metadata", {}).items() if k != "generateName"}
    metadata["name"] = want.target.name
    if want.target.namespace:
        metadata["namespace"] = want.target.namespace
    obj["metadata"] = metadata
    return obj
