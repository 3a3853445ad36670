"""Several features' admission handlers on one path, answered as one review.

Each feature registers handlers for the paths it cares about (a pod's CREATE on
``/mutate-pod``, its DELETE and eviction on ``/validate-pod``, ...). A review on a path runs every
handler of that path in registry order and combines their :class:`Verdict`:

- any denial wins: the first denying verdict is the answer, and the handlers after it do not run;
- patches compose in registry order: each handler sees the object as the patches before it left
  it, and the answer carries their operations one after another, which is one valid JSON Patch
  against the object the API server sent;
- warnings of every handler that ran are kept;
- side effects come after the decision: a verdict's ``then`` runs only once every handler on the
  path allowed, so a deletion a later handler refuses is never recorded as under way (Kruise
  records a WorkloadSpread deletion before its PodUnavailableBudget check, and a refusal leaves
  the slot counted as leaving). A handler that must act while deciding (a compare-and-set that
  *is* the decision) returns ``undo``, which runs when a later handler denies.

The chain is pure composition: the handlers do the I/O they need and the webhook service turns the
combined verdict into an AdmissionReview answer.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kubesemantics import json_patch
from spreadbus.engine.review import AdmissionRequest

log = logging.getLogger(__name__)

SideEffect = Callable[[], Awaitable[None]]
Decide = Callable[[AdmissionRequest], Awaitable["Verdict"]]


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """One handler's answer to one review."""

    allowed: bool = True
    patch: Sequence[Mapping[str, Any]] = ()
    """JSON Patch operations against the object as this handler received it."""
    warnings: Sequence[str] = ()
    code: int = 403
    """HTTP code of a denial: 403 Forbidden, 422 Invalid, 429 TooManyRequests, ..."""
    reason: str = "Forbidden"
    message: str = ""
    causes: Sequence[Mapping[str, str]] = ()
    then: SideEffect | None = field(default=None, repr=False)
    """Runs once every handler on the path allowed."""
    undo: SideEffect | None = field(default=None, repr=False)
    """Runs when a later handler on the path denies, to take back what deciding did."""
    patched: Mapping[str, Any] | None = field(default=None, repr=False)
    """The object with ``patch`` applied, when the handler built it anyway: the next handler is
    given it as it is (so it must not be changed in place) instead of a copy the chain patches
    again, which cost as much as a pod's steering decision."""


ALLOW = Verdict()


def deny(message: str, *, code: int = 403, reason: str = "Forbidden",
         causes: Sequence[Mapping[str, str]] = ()) -> Verdict:
    return Verdict(allowed=False, message=message, code=code, reason=reason, causes=causes)


@dataclass(frozen=True, kw_only=True)
class AdmissionHandler:
    """One feature's handler on one path."""

    feature: str
    path: str
    decide: Decide
    failure_policy: Literal["Ignore", "Fail"] = "Ignore"
    """What an error on this handler's path does to the request, as the configuration's
    ``failurePolicy`` says: ``Ignore`` admits it unchanged, ``Fail`` refuses it."""


def paths(handlers: Sequence[AdmissionHandler]) -> dict[str, list[AdmissionHandler]]:
    """Handlers grouped by path, each group in registry order."""
    grouped: dict[str, list[AdmissionHandler]] = {}
    for handler in handlers:
        grouped.setdefault(handler.path, []).append(handler)
    return grouped


def fails_open(handlers: Sequence[AdmissionHandler]) -> bool:
    """A path fails open only when every handler on it does: one that must fail closed wins."""
    return all(h.failure_policy == "Ignore" for h in handlers)


async def run_chain(handlers: Sequence[AdmissionHandler], request: AdmissionRequest) -> Verdict:
    """Every handler of one path on ``request``, combined as the module docstring says."""
    patch: list[Mapping[str, Any]] = []
    warnings: list[str] = []
    undos: list[SideEffect] = []
    thens: list[SideEffect] = []
    current = request
    for position, handler in enumerate(handlers, start=1):
        verdict = await handler.decide(current)
        warnings.extend(verdict.warnings)
        if not verdict.allowed:
            for undo in reversed(undos):
                await undo()
            return dataclasses.replace(verdict, warnings=tuple(warnings), then=None, undo=None)
        if verdict.undo is not None:
            undos.append(verdict.undo)
        if verdict.then is not None:
            thens.append(verdict.then)
        if verdict.patch:
            patch.extend(verdict.patch)
            if current.object is not None and position < len(handlers):  # for the next one
                patched = (dict(verdict.patched) if verdict.patched is not None else
                           json_patch.apply(current.object, [dict(op) for op in verdict.patch]))
                current = dataclasses.replace(current, object=patched)
    for then in thens:
        await then()
    return Verdict(patch=tuple(patch), warnings=tuple(warnings))
