"""The PodUnavailableBudget handlers of one webhook replica.

- ``/validate-pod``: pod DELETE and ``pods/eviction`` CREATE (gated by ``pub_delete_gate``) and
  pod UPDATE (``pub_update_gate``) are decided by the core's admission rule in Kruise v1.9.0's
  order; the budget is spent inside a compare-and-set transaction on the PUB's entry of the
  budget bucket (:mod:`..core.budget_ledger`), so the decision and the spending are one atomic
  step over every replica. A refused DELETE or UPDATE is 403 Forbidden as in Kruise; a refused
  eviction is 429 TooManyRequests, as a PodDisruptionBudget refuses one, so ``kubectl drain`` and
  other eviction clients wait and retry. Dry-run requests decide without spending.
- ``/mutate-pod``: pod CREATE gets ``kruise.io/related-pub`` from the first matching PUB of its
  namespace (the link every later decision follows).
- ``/validate-podunavailablebudget``: PUB CREATE and UPDATE, Kruise's validation with the other
  PUBs of the namespace for the conflict check (fail closed).

Errors while spending (NATS unreachable, a contended entry past the deadline) refuse the request,
so a budget is never overspent because the bus was slow; the path itself stays fail-open for the
other features' handlers on it (WorkloadSpread's record of a deletion).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from events.buckets import entry_key
from kubesemantics.field_errors import describe
from kubesemantics.owner_refs import controller_ref
from spreadbus.engine.admission_chain import ALLOW, Verdict, deny
from spreadbus.engine.review import AdmissionRequest, pointer
from spreadbus.features.podunavailablebudget.admission import decisions
from spreadbus.features.podunavailablebudget.core import budget_ledger, member_spend
from spreadbus.features.podunavailablebudget.core.budget_ledger import BudgetEntry
from spreadbus.features.podunavailablebudget.core.model import PodUnavailableBudget
from spreadbus.features.podunavailablebudget.settings import PodUnavailableBudgetSettings
from spreadbus.runtime.ledger import LedgerStore

log = logging.getLogger(__name__)


class Observed(Protocol):
    """What the handlers read of the cluster (:class:`.view.BudgetView`)."""

    cluster: str

    def budget(self, namespace: str, name: str) -> dict[str, Any] | None: ...
    def pod(self, namespace: str, name: str) -> dict[str, Any] | None: ...
    def budgets_in(self, namespace: str) -> list[dict[str, Any]]: ...
    def replicaset(self, namespace: str, name: str) -> dict[str, Any] | None: ...
    def synced(self) -> bool: ...


class HostBudgets(Protocol):
    """A member's way to the host's budgets (:class:`.host_budgets.HostBudgetClient`)."""

    async def spend(self, request: member_spend.SpendRequest) -> member_spend.SpendAnswer: ...


class BudgetAdmission:
    """Decisions over a view and the budget entries."""

    def __init__(self, *, view: Observed, store: LedgerStore[BudgetEntry],
                 settings: PodUnavailableBudgetSettings | None = None,
                 clock: Callable[[], float] = time.time,
                 host: HostBudgets | None = None,
                 workload: Callable[[str, str, str], dict[str, Any] | None] | None = None,
                 ) -> None:
        self.view = view
        self.host = host
        """The host's budgets, when this is a member's webhook that may hold copies' pods."""
        self.workload = workload or (lambda resource, namespace, name: None)
        """(resource, namespace, name) -> the view's workload, where a copy's marks are read."""
        self.store = store
        self.settings = settings or PodUnavailableBudgetSettings()
        self.clock = clock
        self.refused = 0
        self.spent = 0
        self._budgets: dict[tuple[str, str], PodUnavailableBudget] = {}

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)

    # -- pods -------------------------------------------------------------------------------------

    async def validate_pod(self, request: AdmissionRequest) -> Verdict:
        if request.resource != "pods":
            return ALLOW
        operation, pod, old = self._subject(request)
        if operation is None:
            return ALLOW
        if pod is None:
            return self._unobserved_eviction(request) if operation == "EVICT" else ALLOW
        namespace = request.namespace or _namespace(pod)
        if self.host is not None:
            refused = await self._host_spend(operation, pod, old, namespace, request.dry_run)
            if refused is not None:
                return refused
        budget_name = decisions.related_budget(pod)
        if budget_name is None:
            # Not linked at CREATE (the link webhook failed open, or its view had not yet seen
            # the pod's ReplicaSet): the budget that would have been linked protects it anyway.
            budget_name = decisions.matching_budget(pod, self.view.budgets_in(namespace),
                                                    replicaset=self.view.replicaset,
                                                    namespace=namespace)
            if budget_name is None:
                return ALLOW
            pod = decisions.linked(pod, budget_name)
        return await self.spend(operation, pod, old, namespace, budget_name,
                                dry_run=request.dry_run, name=request.name)

    async def spend(self, operation: str, pod: dict[str, Any], old: dict[str, Any] | None,
                    namespace: str, budget_name: str, *, dry_run: bool, name: str,
                    caught_up: bool | None = None) -> Verdict:
        """Decide ``operation`` on ``pod`` against this view's budget ``budget_name`` and
        spend it on the budget's entry. ``caught_up`` False: the view has not observed the pod
        (a member's), so no status may free it."""
        budget = self.view.budget(namespace, budget_name)
        if budget is None:
            if not self.view.synced():
                # Not known to be gone: the watcher has not listed budgets into this view yet.
                return _refusal(operation, "spreadbus webhook still syncing PodUnavailableBudgets")
            return ALLOW  # Kruise: a budget that is gone protects nothing
        now = self.now()
        version = _version(budget)
        raw_status = budget.get("status")
        status: Mapping[str, Any] = raw_status if isinstance(raw_status, Mapping) else {}
        parsed = self._parsed(budget)
        early = decisions.decide(operation, pod, parsed, status, old_pod=old, now=now,
                                 dry_run=True)
        # An evicted pod is this view's copy, not the API server's: that it is unavailable holds
        # only against a status no newer than the view (checked on the entry below).
        viewed_pod = operation == "EVICT"
        if (early.settled and early.why not in decisions.SETTLED_BY_STATUS
                and not (viewed_pod and early.why == "unavailable")):
            return ALLOW  # the pod's own state or the budget's spec: no entry to read

        def seen() -> bool:
            """Read only for a decision a status would free: most decisions spend or refuse."""
            if caught_up is not None:
                return caught_up
            return viewed_pod or self._caught_up(pod, namespace)

        def decide(entry: BudgetEntry) -> tuple[decisions.Decision, BudgetEntry | None]:
            current = budget_ledger.reseeded(entry, status, version, now)
            effective = budget_ledger.effective_status(current)
            decision = decisions.decide(operation, pod, parsed, effective, old_pod=old, now=now,
                                        dry_run=dry_run)
            if viewed_pod and decision.why == "unavailable" and current.version > version:
                # Another replica seeded the entry from a status newer than this view, which
                # may count this pod as available: its readiness here may be stale.
                return decisions.Decision(allowed=False, message=_behind(budget_name)), None
            if decision.why in decisions.SETTLED_BY_STATUS and (not seen() or (
                    decision.why == "desired-zero" and decisions.counted_before_its_workload(
                        effective, parsed, pod, replicaset=self.view.replicaset,
                        namespace=namespace))):
                # A status that frees the pod may predate it: the newest one known may have been
                # written before this view saw the pod become what the review carries, or before
                # the planner counted the pod's workload.
                return decisions.Decision(allowed=False, message=_behind(budget_name)), None
            if decision.status is not None:
                return decision, budget_ledger.with_decision(current, decision.status)
            # A newer seed alone needs no write: the records the entry holds are exactly those
            # its older seed does not count. Records dropped (listed, expired) do.
            pruned = (current.disrupted, current.unavailable) != (entry.disrupted,
                                                                  entry.unavailable)
            return decision, (current if pruned else None)

        key = entry_key(self.view.cluster, namespace, budget_name)
        try:
            decision = await self.store.transact(key, decide)
        except Exception as exc:  # NATS unreachable, the entry contended past the deadline
            log.warning("budget not spent, refusing", extra={"budget": f"{namespace}/"
                        f"{budget_name}", "pod": name, "error": repr(exc)})
            self.refused += 1
            return _refusal(operation, f"podunavailablebudget.policy.kruise.io "
                                       f'"{budget_name}" could not be spent: {exc!r}')
        if decision.allowed:
            if decision.status is not None:
                self.spent += 1
            return ALLOW
        self.refused += 1
        return _refusal(operation, decision.message)

    async def _host_spend(self, operation: str, pod: dict[str, Any], old: dict[str, Any] | None,
                          namespace: str, dry_run: bool) -> Verdict | None:
        """A pod of a copy of the host's template is spent on the host's budgets first; the
        refusal, or None when the host allows (or the pod is of no copy)."""
        assert self.host is not None
        if not member_spend.asks_host(operation, pod, old):
            return None
        ref = controller_ref(pod)
        replicaset = (self.view.replicaset(namespace, str(ref.get("name") or ""))
                      if ref is not None and ref.get("kind") == "ReplicaSet" else None)
        copy = member_spend.copy_of({**pod, "metadata": {**(pod.get("metadata") or {}),
                                                         "namespace": namespace}},
                                    replicaset=replicaset, workload=self.workload)
        if copy is None:
            return None
        request = member_spend.SpendRequest(
            operation=operation,  # type: ignore[arg-type]  # one of _subject's three
            namespace=namespace, pod=pod, old_pod=old, replicaset=replicaset, copy=copy,
            dry_run=dry_run)
        try:
            answer = await self.host.spend(request)
        except Exception as exc:  # no answer within the deadline: the host budget may be spent
            log.warning("host budget not spent, refusing", extra={
                "pod": f"{namespace}/{_name(pod)}", "error": repr(exc)})
            self.refused += 1
            return _refusal(operation, "the host's podunavailablebudget.policy.kruise.io over "
                                       f"{copy.kind} {copy.name} could not be spent: {exc!r}")
        if answer.allowed:
            return None
        self.refused += 1
        return deny(answer.message, code=answer.code, reason=answer.reason)

    async def spend_for_member(self, member: str, request: member_spend.SpendRequest,
                               binding: Mapping[str, Any] | None) -> member_spend.SpendAnswer:
        """The host's side of a member's spend: the host budget that covers the member's pod,
        decided and spent as for a host pod, on the same entry."""
        namespace = request.namespace
        if not member_spend.bound_by_host(request, binding):
            if not self.view.synced():
                return _answer(_refusal(request.operation,
                                        "spreadbus webhook still syncing PodUnavailableBudgets"))
            return member_spend.SpendAnswer(allowed=True)  # no template of the host's
        pod = member_spend.as_host_pod(request.pod)
        pod["metadata"]["namespace"] = namespace
        replicaset = request.replicaset

        def owner(ns: str, name: str) -> dict[str, Any] | None:
            return replicaset if replicaset is not None and _name(replicaset) == name else None

        budget_name = decisions.matching_budget(pod, self.view.budgets_in(namespace),
                                                replicaset=owner, namespace=namespace)
        if budget_name is None:
            if not self.view.synced():
                return _answer(_refusal(request.operation,
                                        "spreadbus webhook still syncing PodUnavailableBudgets"))
            return member_spend.SpendAnswer(allowed=True)
        old = request.old_pod
        verdict = await self.spend(
            request.operation, decisions.linked(pod, budget_name),
            None if old is None else decisions.linked(member_spend.as_host_pod(old), budget_name),
            namespace, budget_name, dry_run=request.dry_run,
            name=f"{member}/{_name(pod)}", caught_up=False)
        return _answer(verdict)

    def _caught_up(self, pod: Mapping[str, Any], namespace: str) -> bool:
        """Whether this view has observed ``pod`` (from the review) at its resourceVersion.

        A pod's versions are ordered, as Kruise orders a budget's; the view folds the watcher's
        stream in order, so a view that has seen the pod as the review carries it has seen the
        budget statuses written before that too, save for reordering between two watches."""
        metadata = pod.get("metadata") or {}
        seen = self.view.pod(namespace, str(metadata.get("name") or ""))
        return seen is not None and _version(seen) >= _version(pod)

    def _unobserved_eviction(self, request: AdmissionRequest) -> Verdict:
        """An eviction of a pod this view has not observed yet: it may be a new, ready pod that a
        budget counts, so it waits (429, retried by eviction clients) where budgets may apply."""
        if self.view.synced() and not self.view.budgets_in(request.namespace):
            return ALLOW
        return _refusal("EVICT", f'pod "{request.name}" is not yet observed by this spreadbus '
                                 "webhook; retry")

    def _parsed(self, budget: Mapping[str, Any]) -> PodUnavailableBudget:
        """The budget's spec, parsed once per version of the budget."""
        metadata = budget.get("metadata") or {}
        key = (str(metadata.get("uid") or ""), str(metadata.get("resourceVersion") or ""))
        cached = self._budgets.get(key)
        if cached is None:
            if len(self._budgets) > 4096:
                self._budgets.clear()
            cached = self._budgets[key] = decisions.parsed_budget(budget)
        return cached

    def _subject(
        self, request: AdmissionRequest
    ) -> tuple[str | None, dict[str, Any] | None, dict[str, Any] | None]:
        """(operation, the pod whose readiness and budget are checked, the stored pod)."""
        gates = self.settings
        if request.operation == "DELETE" and request.sub_resource == "":
            if not gates.pub_delete_gate:
                return None, None, None
            return "DELETE", request.old_object, None
        if request.operation == "CREATE" and request.sub_resource == "eviction":
            if not gates.pub_delete_gate:
                return None, None, None
            return "EVICT", self.view.pod(request.namespace, request.name), None
        if request.operation == "UPDATE" and request.sub_resource == "":
            if not gates.pub_update_gate or request.object is None:
                return None, None, None
            return "UPDATE", request.object, request.old_object
        return None, None, None

    async def mutate_pod(self, request: AdmissionRequest) -> Verdict:
        if (request.resource, request.sub_resource, request.operation) != ("pods", "", "CREATE"):
            return ALLOW
        if request.object is None:
            return ALLOW
        gates = self.settings
        if not (gates.pub_delete_gate or gates.pub_update_gate):
            return ALLOW
        pod = request.object
        namespace = request.namespace or _namespace(pod)
        budgets = self.view.budgets_in(namespace)
        if not budgets:
            return ALLOW
        name = decisions.matching_budget(pod, budgets, replicaset=self.view.replicaset,
                                         namespace=namespace)
        if name is None:
            return ALLOW
        annotations = (pod.get("metadata") or {}).get("annotations")
        if isinstance(annotations, Mapping) and annotations.get(decisions.RELATED) == name:
            return ALLOW
        if not isinstance(annotations, Mapping):
            patch = [{"op": "add", "path": "/metadata/annotations",
                      "value": {decisions.RELATED: name}}]
        else:
            patch = [{"op": "add", "path": pointer("metadata", "annotations", decisions.RELATED),
                      "value": name}]
        return Verdict(patch=patch)

    # -- PUBs -------------------------------------------------------------------------------------

    async def validate_budget(self, request: AdmissionRequest) -> Verdict:
        if request.operation not in ("CREATE", "UPDATE") or request.sub_resource:
            return ALLOW
        obj = request.object
        if obj is None:
            return deny("request.object: required", code=400, reason="BadRequest")
        namespace = request.namespace or _namespace(obj)
        errors = decisions.validate(
            obj,
            old=request.old_object if request.operation == "UPDATE" else None,
            others=self.view.budgets_in(namespace),
        )
        if not errors:
            return ALLOW
        name = str((obj.get("metadata") or {}).get("name") or "")
        lines = "; ".join(describe(e) for e in errors)
        message = f'PodUnavailableBudget.policy.kruise.io "{name}" is invalid: {lines}'
        causes = [{"field": e.field, "reason": f"Field{e.type}", "message": e.to_dict()["message"]}
                  for e in errors]
        return deny(message, code=422, reason="Invalid", causes=causes)


def _refusal(operation: str, message: str) -> Verdict:
    """403 as Kruise refuses a DELETE or UPDATE; 429 for an eviction, as a PodDisruptionBudget
    refuses one, so eviction clients wait and retry."""
    if operation == "EVICT":
        return deny(message, code=429, reason="TooManyRequests")
    return deny(message, code=403, reason="Forbidden")


def _behind(budget_name: str) -> str:
    return (f'podunavailablebudget.policy.kruise.io "{budget_name}": this spreadbus webhook has '
            "not yet observed the budget's latest status; retry")


def _answer(verdict: Verdict) -> member_spend.SpendAnswer:
    return member_spend.SpendAnswer(allowed=verdict.allowed, code=verdict.code,
                                    reason=verdict.reason, message=verdict.message)


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _namespace(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def _version(obj: Mapping[str, Any]) -> int:
    raw = (obj.get("metadata") or {}).get("resourceVersion")
    try:
        return int(str(raw))
    except ValueError:
        return 0
