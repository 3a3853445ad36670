"""Whether a plan's governor, as the API server holds it, still asks for what the plan writes.

A plan names the object whose decision it carries out (``Plan.governor``) and the generation of
it that decision was made on (``Plan.governor_generation``). What the planner's projection held
is only a claim: a forged observation or plan can name a governor that does not exist, borrow a
real one's uid, or ask for more than the real one does. So the actuator reads the governor before
anything is written (:mod:`services.actuator.governor_check`) and decides here, purely:

- :func:`judge_governor`: the governor must exist, be the object the plan names (the API server
  answered its path with it), with the plan's uid and the plan's generation. Gone, replaced
  (another uid) or moved on to a later generation: the plan is dropped unsent
  (:class:`Dropped`, an outcome ``failed`` the planner answers by deciding again from the newer
  state; the generation is part of a plan's intent, see :mod:`spreadbus.projection.planning`).
  Naming no uid, or a generation the governor never reached: refused (:class:`Refusal`), since
  no planner that read the API server decided it.
- :func:`judge_written`: for a grant that declares how (``PlanGrant.follows``, pure, given by the
  feature), the object a ``create`` makes or a ``patch`` leaves (:func:`written_object`) must
  follow from the governor as read: a UnitedDeployment's subset workload has its template, its
  namespace, its controller owner reference and replicas within its own. A patch so checked must
  carry the ``resourceVersion`` it was decided on, so what is checked is what it lands on.

The other grants need no more than the governor's identity: a status or annotation of the
governor itself (``itself``: the target is the governor, so the uid read is the target's), a
label or annotation on a pod it governs and an eviction (checked on the pod as read,
:mod:`spreadbus.engine.plan_scope`), a deletion of an object it controls.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from events.messages import ObjectRef, Plan
from kubesemantics import json_patch, merge_patch, strategic_merge
from kubesemantics.lenient_json import as_int, as_map, as_str
from spreadbus.engine.plan_grants import Governor, PlanGrant
from spreadbus.engine.plan_names import misnamed

CHECKED_VERBS = frozenset({"create", "patch"})
"""The verbs whose written object a grant's ``follows`` judges."""


@dataclass(frozen=True)
class Dropped:
    """The plan is stale: it fails unsent with this API error, and the planner decides again."""

    status: int
    reason: str
    message: str


@dataclass(frozen=True)
class Refusal:
    """No decision on the governor as the API server holds it asks for this plan."""

    message: str


def governed(plan: Plan, grant: PlanGrant | None) -> bool:
    """Is the plan's governor read before the plan is applied?"""
    return grant is not None and grant.governor is not None and plan.governor is not None


def judge_governor(plan: Plan, kind: Governor,
                   governor: Mapping[str, Any] | None) -> Dropped | Refusal | None:
    """None when ``governor`` (as read; ``None``: not found) is the one the plan was decided on."""
    ref = plan.governor
    if ref is None:
        return Refusal(f"it names no governing {kind.kind}")
    who = f"the governing {kind.kind} {_name(ref)}"
    if not ref.uid:
        return Refusal(f"it names no uid of {who}")
    if governor is None:
        return Dropped(404, "NotFound", f"{who} no longer exists: the plan is dropped unsent")
    wrong = misnamed(ref, governor)
    if wrong:
        return Refusal(wrong)
    metadata = as_map(governor.get("metadata"))
    uid = as_str(metadata.get("uid"))
    if uid != ref.uid:
        return Dropped(409, "Conflict", f"{who} is now uid {uid!r}, the plan was for {ref.uid!r}")
    generation = as_int(metadata.get("generation")) or 0
    planned = plan.governor_generation
    if planned > generation:
        return Refusal(f"it names generation {planned} of {who}, which is at {generation}")
    if planned < generation:
        return Dropped(409, "Conflict", f"{who} has moved on to generation {generation}, the "
                                        f"plan was decided at {planned}: dropped unsent")
    return None


def judge_written(plan: Plan, grant: PlanGrant, governor: Mapping[str, Any],
                  before: Mapping[str, Any] | None) -> Dropped | Refusal | None:
    """None when what the plan writes follows from ``governor`` (as read). ``before``: a patch's
    target as read just now (``None`` for a create)."""
    follows = grant.follows
    if follows is None or plan.verb not in CHECKED_VERBS:
        return None
    if plan.verb == "patch":
        if before is None:
            return Refusal("its target was not read")
        want_rv = plan.precondition.resource_version
        if not want_rv:
            return Refusal("a patch checked against its governor must name the "
                           "resourceVersion it was decided on")
        metadata = as_map(before.get("metadata"))
        want_uid = plan.precondition.uid or plan.target.uid
        uid = as_str(metadata.get("uid"))
        if want_uid and uid != want_uid:
            return Dropped(409, "Conflict", f"uid is {uid!r}, the plan was for {want_uid!r}")
        rv = as_str(metadata.get("resourceVersion"))
        if rv != want_rv:
            return Dropped(409, "Conflict",
                           f"resourceVersion is {rv}, the plan required {want_rv}")
    written = written_object(plan, before)
    if isinstance(written, str):
        return Refusal(written)
    why = follows(governor, written, before)
    if why:
        kind = grant.governor.kind if grant.governor is not None else "governor"
        ref = plan.governor
        who = f"{kind} {_name(ref)}" if ref is not None else kind
        return Refusal(f"what it writes does not follow from the {who}: {why}")
    return None


def written_object(plan: Plan, before: Mapping[str, Any] | None) -> dict[str, Any] | str:
    """The object a ``create`` sends (named as the actuator names it) or a ``patch`` leaves on
    ``before``, or why it cannot be worked out."""
    if plan.verb == "create":
        if not isinstance(plan.object, dict):
            return "a create plan carries no object"
        body = dict(plan.object)
        metadata = {k: v for k, v in as_map(body.get("metadata")).items() if k != "generateName"}
        metadata["name"] = plan.target.name
        if plan.target.namespace:
            metadata["namespace"] = plan.target.namespace
        body["metadata"] = metadata
        return body
    if before is None:
        return "its target was not read"
    patch = plan.patch
    try:
        if plan.patch_type == "merge":
            applied = merge_patch.apply(before, patch)
        elif plan.patch_type == "strategic":
            if not isinstance(patch, Mapping):
                return "a strategic merge patch must be an object"
            meta = strategic_merge.meta_for_kind(as_str(before.get("kind")))
            applied = strategic_merge.apply(copy.deepcopy(dict(before)), patch, meta)
        else:
            if not isinstance(patch, list) or not all(isinstance(op, dict) for op in patch):
                return "a JSON patch must be a list of operations"
            applied = json_patch.apply(before, [op for op in patch if op.get("op") != "test"])
    except (ValueError, TypeError) as exc:  # PatchError, JsonPatchError: no shape it fits
        return f"its patch does not apply: {exc}"
    if not isinstance(applied, dict):
        return "its patch does not leave an object"
    return applied


def _name(ref: ObjectRef) -> str:
    return f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name
