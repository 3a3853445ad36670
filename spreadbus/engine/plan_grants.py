"""What a rule's plans may do, declared by its feature; the actuator applies nothing else.

A plan names the rule that made it. The actuator looks up that rule's grants (every feature
declares them in ``Feature.plan_grants``) and applies a plan only when its names are Kubernetes
names (:func:`spreadbus.engine.plan_names.invalid_name`: a refusal names the field) and one grant
covers it:

- the same rule, verb, API group and resource;
- for ``patch`` and ``patch_status``, every path the patch writes lies under one of the grant's
  ``writes`` (a path is a tuple of keys; ``*`` stands for any one key, and ``prefix*`` for any
  key that starts so). A merge or strategic merge patch writes each of its leaves (a list is a
  leaf: it replaces or merges as a whole), a JSON patch each operation's ``path`` (and ``from``
  for ``move``); ``test`` operations write nothing;
- for ``create``, the object's kind matches nothing here (the API checks it against the
  resource) but, if the grant names an ``owner`` (API group, kind), the object must have a
  controller owner reference of that kind. ``patch``, ``patch_status`` and ``delete`` plans of
  such a grant are checked against the object as the actuator reads it
  (:func:`owner_allows`), so a rule that manages the objects it created cannot touch anyone
  else's.

Every grant of a built-in feature also names the kind of object whose decisions it serves
(``governor``), and every plan names that object (``Plan.governor``); the grant says how the
plan's target must relate to it (``relation``):

- ``itself``: the target is the governor (its status, its own annotations, its deletion);
- ``controlled``: the target's controller owner reference is the governor, by kind, name and
  uid (a plan whose governor names no uid is refused: a name alone would also match an object
  created again under it); for ``create`` the object carries that reference, for the other
  verbs the actuator reads the target (:attr:`PlanGrant.controller` stands in for ``owner``);
- ``governed``: the target (a pod) is governed by the governor, as the actuator reads it: the
  pod matches the governor's label selector (``selector``, a dot path such as
  ``spec.selector``), or its chain of controller owner references reaches the workload the
  governor names (``reach``, e.g. ``spec.targetRef``) or, without ``reach``, the governor
  itself. The chain passes only through the kinds in ``via`` (a ReplicaSet between a pod and its
  Deployment), each read once, at most :data:`~spreadbus.engine.plan_scope.MAX_HOPS` of them;
- ``named``: the governor lists the target (``names``, e.g. ``spec.workloads`` of a
  WorkloadRebalancer), or lists the workload the target's ``names_through`` field names; with
  ``marked``, the target as read must also name the governor back (a propagated copy its
  binding), so an object that merely has a listed name is not touched;
- ``identified``: the governor is in another cluster (``Plan.governor_cluster``), where no owner
  reference can reach: the target names it in a way of the feature's own, which ``identifies``
  judges on the governor as read from that cluster's API server (see
  :mod:`spreadbus.engine.governor_check`). Only a grant of this relation covers a plan whose
  governor is in another cluster, and it covers no other plan.

A namespaced governor's plans touch only its own namespace: the target's namespace must be the
governor's, checked before anything is read. A cluster-scoped governor touches other namespaces
only through ``named``, and controls only cluster-scoped objects (a grant's ``cluster_scoped``:
its plans name no namespace). A plan that names no governor, or another kind of governor than
its grant serves, is refused. A grant without ``governor`` scopes nothing (the tests' own
rules); every built-in grant names one.

Whatever the grant, a governed plan is applied only while its governor, as the actuator reads it
from the API server, is the one the plan was decided on (uid and generation), and a grant whose
creates or patches write more than a label, an annotation or a status declares ``follows``: a
pure check, given by the feature, that the object written follows from the governor as read
(:mod:`spreadbus.engine.governor_check`).

The same grants give the actuator's RBAC (:func:`spreadbus.engine.api_access.plan_access`), so the
deployment allows the API exactly what some rule may ask for. A refused plan is never sent: its
outcome is ``failed`` with reason ``Forbidden`` (see :mod:`services.actuator.application`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Final, Literal

import msgspec

from events.messages import ObjectRef, Plan, Verb
from spreadbus.engine.plan_names import invalid_name

Path = tuple[str, ...]
Follows = Callable[[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any] | None], str]
"""``(governor, written, before) -> why not``: does the object a create or patch leaves
(``written``; ``before``: the object the patch was applied to, ``None`` for a create) follow
from the governor as the API server holds it? ``""`` when it does. Pure: no I/O."""
PATCH_VERBS: Final = frozenset({"patch", "patch_status"})
Relation = Literal["itself", "controlled", "governed", "named", "identified"]
Marked = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
"""``(governor, target) -> bool``: for a ``named`` grant, does the target as read carry the
governor's own mark (a propagated copy naming its binding)? Pure."""
Identifies = Callable[["Plan", Mapping[str, Any] | None, Mapping[str, Any]], str]
"""``(plan, governor, target) -> why not``: for an ``identified`` grant, does the target (as
read; the object a create makes) name the plan's governor, and does the governor as read from
its cluster (``None``: not found) ask for the plan's verb on it in the plan's cluster? A delete
is asked for by a governor that no longer wants the target (gone included). ``""`` when it
does. Pure."""
READ_RELATIONS: Final = frozenset({"governed", "named"})
"""Relations the actuator checks on objects it reads (``controlled`` too, except on create)."""


class Kind(msgspec.Struct, frozen=True):
    """An API kind and the resource it is served as."""

    group: str
    kind: str
    resource: str


WORKLOAD_CHAIN: Final = (
    Kind("apps", "ReplicaSet", "replicasets"),
    Kind("apps", "Deployment", "deployments"),
    Kind("apps", "StatefulSet", "statefulsets"),
    Kind("apps.kruise.io", "StatefulSet", "statefulsets"),
    Kind("apps.kruise.io", "CloneSet", "clonesets"),
)
"""The workload kinds a controller chain from a pod may pass through (a Deployment's pods sit
below a ReplicaSet, a UnitedDeployment's below a subset workload)."""


class Governor(Kind, frozen=True, kw_only=True):
    """The kind of object whose decisions a grant's plans carry out."""

    namespaced: bool = True
    in_host: bool = False
    """The governor lives in the host's API server while the plan's target is in a member's
    (a Karmada binding governing a template's copy): a member's actuator reads it from the
    host (its ``--host-kubeconfig``), and without one finds no such governor and drops the
    plan."""


class PlanGrant(msgspec.Struct, frozen=True, kw_only=True):
    """One kind of plan a rule may emit."""

    rule: str
    verb: Verb
    group: str
    resource: str
    writes: tuple[Path, ...] = ()
    """For patches: the paths the patch may write (see the module docstring)."""
    owner: tuple[str, str] | None = None
    """(API group, kind) the target's controller owner must have; ``None``: any object."""
    governor: Governor | None = None
    """The kind of object the plans serve; ``None``: not scoped (see the module docstring)."""
    relation: Relation = "itself"
    """How the target relates to the plan's governor."""
    reach: str = ""
    """``governed``: dot path of the governor's reference to the workload whose pods it governs
    (``apiVersion``, ``kind``, ``name``); empty: the chain must reach the governor itself."""
    selector: str = ""
    """``governed``: dot path of a label selector in the governor; a pod it matches is governed."""
    via: tuple[Kind, ...] = ()
    """``governed``: the kinds a controller chain may pass through (each one a read)."""
    names: str = ""
    """``named``: dot path of the governor's list of object references."""
    names_through: str = ""
    """``named``: dot path of a reference in the target; the target is named when it is."""
    marked: Marked | None = None
    """``named``: the check that the target as read is the governor's (not merely an object of
    a name it lists); ``None``: the name suffices."""
    cluster_scoped: bool = False
    """The target resource is cluster-scoped: its plans name no namespace, and a ``named``
    entry names none either (a ClusterResourceBinding's ``spec.resource``)."""
    identifies: Identifies | None = None
    """``identified``: the check that the target names the governor and is asked for by it."""
    follows: Follows | None = None
    """For ``create`` and ``patch``: the check that what is written follows from the governor as
    read (:mod:`spreadbus.engine.governor_check`); ``None``: the grant's relation and ``writes``
    say all there is (a status, an annotation, a label, an eviction, a deletion)."""

    @property
    def target(self) -> tuple[str, str, str]:
        return (self.verb, self.group, self.resource)

    @property
    def controller(self) -> tuple[str, str] | None:
        """(API group, kind) the target's controller owner must have: the governor's kind for
        ``controlled``, else ``owner``."""
        if self.relation == "controlled" and self.governor is not None:
            return (self.governor.group, self.governor.kind)
        return self.owner

    def reads(self) -> frozenset[tuple[str, str]]:
        """(API group, resource) the actuator reads to check this grant's relation, besides the
        target: the governor (for a ``reach``, a ``selector`` or ``names``) and ``via``."""
        out = {(k.group, k.resource) for k in self.via}
        if self.governor is not None and (self.reach or self.selector or self.names):
            out.add((self.governor.group, self.governor.resource))
        return frozenset(out)


@dataclass(frozen=True)
class Refused:
    """Why no grant covers a plan, said so that an operator can find the declaration."""

    message: str


@dataclass(frozen=True)
class Granted:
    """The plan may be applied. ``owner``: the controller owner kind its target must have
    (``owner_name`` and ``owner_uid`` too, when the grant is scoped to the plan's governor);
    ``grant``: set when the target's relation to the governor is checked on objects read."""

    owner: tuple[str, str] | None = None
    owner_name: str = ""
    owner_uid: str = ""
    grant: PlanGrant | None = None
    covered_by: PlanGrant | None = field(default=None, compare=False)
    """The grant that covers the plan (its governor and ``follows`` are checked on reads)."""

    @property
    def reads_target(self) -> bool:
        """Is the target's relation to its owner or governor checked on the object as read?
        (The actuator reads every target before writing it; only a plan without such a check
        may take the uid-testing write that reads nothing, see
        :meth:`services.actuator.application.Applier._write_seen`.)"""
        return self.owner is not None or self.grant is not None


class PlanAuthority:
    """Every feature's grants, by rule name."""

    def __init__(self, grants: Iterable[PlanGrant]) -> None:
        self.by_rule: dict[str, list[PlanGrant]] = {}
        for grant in grants:
            self.by_rule.setdefault(grant.rule, []).append(grant)

    def authorize(self, plan: Plan) -> Granted | Refused:
        invalid = invalid_name(plan)
        if invalid:
            return Refused(invalid)
        rule_grants = self.by_rule.get(plan.rule)
        if not rule_grants:
            return Refused(f"no feature declares the rule {plan.rule!r}")
        target = plan.target
        matching = [g for g in rule_grants
                    if (g.verb, g.group, g.resource) == (plan.verb, target.group, target.resource)]
        what = f"{plan.verb} {target.resource}" + (f".{target.group}" if target.group else "")
        if not matching:
            return Refused(f"the rule {plan.rule!r} may not {what}")
        across = bool(plan.governor_cluster)
        matching = [g for g in matching if (g.relation == "identified") == across]
        if not matching:
            where = (f"its governor is in cluster {plan.governor_cluster!r}, another than its own"
                     if across else "its governor is in its own cluster")
            return Refused(f"the rule {plan.rule!r} may not {what}: {where}")
        problem = ""
        for grant in matching:
            problem = _check(grant, plan)
            if not problem:
                return _granted(grant, plan)
        return Refused(f"the rule {plan.rule!r} may not {what}: {problem}")


def _granted(grant: PlanGrant, plan: Plan) -> Granted:
    scoped = grant.governor is not None and plan.governor is not None
    name = plan.governor.name if scoped and plan.governor is not None else ""
    uid = plan.governor.uid if scoped and plan.governor is not None else ""
    return Granted(owner=grant.controller, owner_name=name, owner_uid=uid,
                   grant=grant if scoped and grant.relation in READ_RELATIONS else None,
                   covered_by=grant)


def _check(grant: PlanGrant, plan: Plan) -> str:
    if plan.verb in PATCH_VERBS:
        try:
            written = list(written_paths(plan.patch, json_patch=plan.patch_type == "json"))
        except ValueError as exc:
            return str(exc)
        for path in written:
            if not any(_under(path, allowed) for allowed in grant.writes):
                return f"it may not write {_show(path)}"
    problem = _scope(grant, plan)
    if problem:
        return problem
    controller = grant.controller
    if plan.verb == "create" and controller is not None:
        governor = plan.governor if grant.governor is not None else None
        if not owner_allows(controller, plan.object or {},
                            name=governor.name if governor else "",
                            uid=governor.uid if governor else ""):
            return (f"the object must be controlled by a {controller[1]}"
                    + (f" named {governor.name!r}" if governor else ""))
    return ""


def _scope(grant: PlanGrant, plan: Plan) -> str:
    """What is wrong with where the plan reaches from its governor, as far as the plan tells."""
    kind = grant.governor
    if kind is None:
        return ""
    governor = plan.governor
    if governor is None:
        return f"it names no governing {kind.kind}"
    if (governor.group, governor.resource) != (kind.group, kind.resource):
        named = governor.resource + (f".{governor.group}" if governor.group else "")
        return f"it serves a {kind.kind}, not {named}"
    if not governor.name:
        return f"the governing {kind.kind} has no name"
    if grant.relation in ("controlled", "identified") and not governor.uid:
        return f"the governing {kind.kind} {_name(governor)} names no uid"
    target = plan.target
    if grant.cluster_scoped and target.namespace:
        return f"{grant.resource} are cluster-scoped, the plan names {target.namespace!r}"
    if kind.namespaced:
        if not governor.namespace:
            return f"the governing {kind.kind} names no namespace"
        if target.namespace != governor.namespace:
            where = repr(target.namespace) if target.namespace else "no namespace"
            return (f"the target is in {where}, the governing {kind.kind} "
                    f"{governor.namespace}/{governor.name} in {governor.namespace!r}")
    elif governor.namespace:
        return f"a {kind.kind} is cluster-scoped, the plan names it in {governor.namespace!r}"
    if grant.relation == "itself" and not _same(target, governor):
        return f"it may touch only the governing {kind.kind} {_name(governor)} itself"
    return ""


def _same(a: ObjectRef, b: ObjectRef) -> bool:
    return ((a.group, a.resource, a.namespace, a.name) == (b.group, b.resource, b.namespace,
                                                            b.name)
            and (not a.uid or not b.uid or a.uid == b.uid))


def _name(ref: ObjectRef) -> str:
    return f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name


def owner_allows(owner: tuple[str, str], obj: Mapping[str, Any], *, name: str = "",
                 uid: str = "") -> bool:
    """Does ``obj`` have a controller owner reference of this (API group, kind), and of this
    ``name`` and ``uid`` where given?"""
    metadata = obj.get("metadata")
    refs = metadata.get("ownerReferences") if isinstance(metadata, Mapping) else None
    for ref in refs if isinstance(refs, list) else ():
        if not isinstance(ref, Mapping) or ref.get("controller") is not True:
            continue
        api_version = str(ref.get("apiVersion") or "")
        group = api_version.rpartition("/")[0]
        if (group, str(ref.get("kind") or "")) != owner:
            continue
        return ((not name or ref.get("name") == name)
                and (not uid or ref.get("uid") == uid))
    return False


def written_paths(patch: Any, *, json_patch: bool) -> Iterator[Path]:
    """Every path a patch writes; ``ValueError`` for a patch of no known shape."""
    if json_patch:
        if not isinstance(patch, list):
            raise ValueError("a JSON patch must be a list of operations")
        for op in patch:
            if not isinstance(op, Mapping):
                raise ValueError("a JSON patch operation must be an object")
            kind = op.get("op")
            if kind == "test":
                continue
            yield _pointer(op.get("path"))
            if kind == "move":
                yield _pointer(op.get("from"))
        return
    if not isinstance(patch, Mapping):
        raise ValueError("a merge patch must be an object")
    yield from _leaves(patch, ())


def _leaves(value: Mapping[str, Any], prefix: Path) -> Iterator[Path]:
    for key, item in value.items():
        path = (*prefix, str(key))
        if isinstance(item, Mapping) and item:
            yield from _leaves(item, path)
        else:
            yield path


def _pointer(text: object) -> Path:
    if not isinstance(text, str) or (text and not text.startswith("/")):
        raise ValueError(f"bad JSON pointer {text!r}")
    if not text:
        return ()
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in text[1:].split("/"))


def _under(path: Path, allowed: Sequence[str]) -> bool:
    """Is ``path`` at or below ``allowed`` (element-wise, with ``*`` patterns)?"""
    if len(path) < len(allowed):
        return False
    return all(fnmatchcase(key, pattern) for key, pattern in zip(path, allowed, strict=False))


def _show(path: Path) -> str:
    return "/" + "/".join(path) if path else "the whole object"
