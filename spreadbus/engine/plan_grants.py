"""What a rule's plans may do, declared by its feature; the actuator applies nothing else.

A plan names the rule that made it. The actuator looks up that rule's grants (every feature
declares them in ``Feature.plan_grants``) and applies a plan only when one grant covers it:

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

The same grants give the actuator's RBAC (:func:`spreadbus.core.api_access.plan_access`), so the
deployment allows the API exactly what some rule may ask for. A refused plan is never sent: its
outcome is ``failed`` with reason ``Forbidden`` (see :mod:`services.actuator.application`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Final

import msgspec

from events.messages import Plan, Verb

Path = tuple[str, ...]
PATCH_VERBS: Final = frozenset({"patch", "patch_status"})


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

    @property
    def target(self) -> tuple[str, str, str]:
        return (self.verb, self.group, self.resource)


@dataclass(frozen=True)
class Refused:
    """Why no grant covers a plan, said so that an operator can find the declaration."""

    message: str


@dataclass(frozen=True)
class Granted:
    """The plan may be applied; ``owner``: the controller owner kind its target must have."""

    owner: tuple[str, str] | None = None


class PlanAuthority:
    """Every feature's grants, by rule name."""

    def __init__(self, grants: Iterable[PlanGrant]) -> None:
        self.by_rule: dict[str, list[PlanGrant]] = {}
        for grant in grants:
            self.by_rule.setdefault(grant.rule, []).append(grant)

    def authorize(self, plan: Plan) -> Granted | Refused:
        rule_grants = self.by_rule.get(plan.rule)
        if not rule_grants:
            return Refused(f"no feature declares the rule {plan.rule!r}")
        target = plan.target
        matching = [g for g in rule_grants
                    if (g.verb, g.group, g.resource) == (plan.verb, target.group, target.resource)]
        what = f"{plan.verb} {target.resource}" + (f".{target.group}" if target.group else "")
        if not matching:
            return Refused(f"the rule {plan.rule!r} may not {what}")
        problem = ""
        for grant in matching:
            problem = _check(grant, plan)
            if not problem:
                return Granted(owner=grant.owner)
        return Refused(f"the rule {plan.rule!r} may not {what}: {problem}")


def _check(grant: PlanGrant, plan: Plan) -> str:
    if plan.verb in PATCH_VERBS:
        try:
            written = list(written_paths(plan.patch, json_patch=plan.patch_type == "json"))
        except ValueError as exc:
            return str(exc)
        for path in written:
            if not any(_under(path, allowed) for allowed in grant.writes):
                return f"it may not write {_show(path)}"
    if (plan.verb == "create" and grant.owner is not None
            and not owner_allows(grant.owner, plan.object or {})):
        return f"the object must be controlled by a {grant.owner[1]}"
    return ""


def owner_allows(owner: tuple[str, str], obj: Mapping[str, Any]) -> bool:
    """Does ``obj`` have a controller owner reference of this (API group, kind)?"""
    metadata = obj.get("metadata")
    refs = metadata.get("ownerReferences") if isinstance(metadata, Mapping) else None
    for ref in refs if isinstance(refs, list) else ():
        if not isinstance(ref, Mapping) or ref.get("controller") is not True:
            continue
        api_version = str(ref.get("apiVersion") or "")
        group = api_version.rpartition("/")[0]
        if (group, str(ref.get("kind") or "")) == owner:
            return True
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
