"""The propagation rule: Karmada's detector, scheduler, binding controller, agent and status
aggregation over the projection of the host and of every member.

It runs once, for the host (the planner's own cluster), and reads the members' objects by their
cluster keys. Each round in which a policy, template, binding or Cluster of the host, or a copy
in a member, changed (or a time it waits for came) it goes over every binding of the host
(:func:`~..core.bindings.held_bindings`, the same reading ``spreadbus plan`` makes) and wants:

- a binding for each template a policy takes and none holds yet
  (:func:`.binding_writes.new_binding`);
- the binding's spec as this round leaves it: the taint manager's evictions, the scheduler's
  round (:func:`.schedule.schedule`, at the planner's time), the graceful eviction tasks
  still pending; then, once the spec holds, its status (:func:`.binding_writes.status_patch`);
- in each cluster of the binding's ``spec.clusters`` as the host holds it, the template's copy
  with that cluster's share (:mod:`..core.member_copy`), created or patched there; the copies in
  clusters it no longer lists (and not kept by a graceful eviction task) deleted; a binding
  being deleted has all its copies deleted (none with ``preserveResourcesOnDeletion``), then
  its finalizer removed;
- for a binding no policy takes any more while its template stays, its claim removed and
  nothing else (:meth:`PropagationRule._unclaimed`, as Karmada's detector);
- the copies' status reflected into the binding's ``aggregatedStatus`` and, for a workload,
  summed into the template's status (:mod:`..core.aggregation`).

A Cluster whose status lists no ``apiEnablements`` (the cluster registry does not write them)
serves the template kinds its member's watcher has listed completely.

A member's copies are touched only once that member's resource is listed (its sync marker
complete), so a copy not observed yet is never taken as missing. Writes derived from what was
read (the binding's spec and status, a copy's patch) name the resourceVersion they were decided
on; the member's actuator checks each copy it writes against the host's binding as the host's
API server holds it (:func:`~..core.member_copy.follows`).

A round looks at the bindings its changes touch: a template's (in the host, or its copy in a
member), a stored binding; every binding when a policy or a Cluster of the host changed. A
toleration's expiry is scheduled ahead: the rule wakes when the first ``timeAdded +
tolerationSeconds`` of a NoExecute taint on a cluster a binding is on comes
(:func:`~.eviction.next_eviction`), and evictions are made no faster than
``--resource-eviction-rate`` allows, one due later waking the rule when it may be made
(:mod:`.eviction_rate`). So are a graceful eviction task's end by its grace period
(:func:`~.graceful_eviction.next_end`) and an application failover timer's
(:func:`~.application_failover.next_due`); an end by the replacements' health comes with the
status change that reports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from events.messages import ObjectRef, ResourceRef
from events.shards import ONE, Shards
from events.subjects import escape, unescape
from kubesemantics.karmada_binding import binding_name, is_member_object
from kubesemantics.lenient_json import as_int, as_map, as_str
from spreadbus.features.propagation.core.aggregation import aggregates, item, template_status
from spreadbus.features.propagation.core.bindings import HeldBinding, held_bindings
from spreadbus.features.propagation.core.claim import claim_of, claim_patch, claimed
from spreadbus.features.propagation.core.cluster import Cluster, from_object
from spreadbus.features.propagation.core.covering_budget import (
    BUDGET_GROUP,
    BUDGET_RESOURCE,
    Covering,
    covering,
)
from spreadbus.features.propagation.core.interpreter import (
    BINDING_NAME_ANNOTATION,
    BINDING_NAMESPACE_ANNOTATION,
)
from spreadbus.features.propagation.core.member_copy import copy_patch, member_copy, replicas_in
from spreadbus.features.propagation.core.policy import applied_placement
from spreadbus.features.propagation.core.replica_steps import Copy, step
from spreadbus.features.propagation.core.stepped_replicas import (
    STEPPED_REPLICAS,
    held_above,
    recorded,
    text_of,
)
from spreadbus.features.propagation.planning.application_failover import since_text
from spreadbus.features.propagation.planning.binding_round import binding_round
from spreadbus.features.propagation.planning.binding_writes import (
    FINALIZER,
    kind_of,
    new_binding,
    spec_patch,
    status_patch,
    with_schedule_time,
)
from spreadbus.features.propagation.planning.eviction import next_eviction
from spreadbus.features.propagation.planning.eviction_rate import allows, next_allowed
from spreadbus.features.propagation.planning.schedule import Round
from spreadbus.features.propagation.planning.templates import (
    BY_KIND,
    CLUSTER_PROPAGATION_POLICIES,
    CLUSTER_RESOURCE_BINDINGS,
    CLUSTERS,
    KARMADA,
    PROPAGATION_POLICIES,
    RESOURCE_BINDINGS,
    TEMPLATES,
    TemplateKind,
)
from spreadbus.projection.kube_state import KubeProjection, resource_key
from spreadbus.projection.planning import Desired, patch_satisfied

Key = tuple[str, str]
JSON = dict[str, Any]

NAME: Final = "propagation"
_STRICTLY_AFTER: Final = 0.001
"""A task or a timer runs out once the time is strictly past its deadline: look just after."""


class PropagationRule:
    name: str = NAME

    def __init__(self, home: str, shards: Shards = ONE, *, eviction_rate: float = 0.0) -> None:
        """``eviction_rate``: the taint manager's evictions per second (0: no limit)."""
        self.home = home
        self.shards = shards
        self.eviction_rate = eviction_rate
        self._last_eviction: float | None = None
        self._held: set[tuple[str, str]] = set()
        """Bindings whose due eviction waits for the rate (:mod:`.eviction_rate`)."""
        # What the rule waits to see listed: ConfigMaps are watched only where propagation asks
        # for them (``--propagate-configmaps``), so they are read when listed, not waited for;
        # so are OpenKruise's kinds (``TemplateKind.awaited``).
        self.resources: tuple[ResourceRef, ...] = (
            *KARMADA, *(t.ref for t in TEMPLATES if t.workload and t.awaited))
        self._names = {r.resource for r in (*KARMADA, *(t.ref for t in TEMPLATES))} | {
            BUDGET_RESOURCE}
        self._whole = {(r.group, r.resource) for r in (PROPAGATION_POLICIES,
                                                       CLUSTER_PROPAGATION_POLICIES, CLUSTERS)}
        self._bindings = {(r.group, r.resource) for r in (RESOURCE_BINDINGS,
                                                          CLUSTER_RESOURCE_BINDINGS)}
        self._templates = {(t.group, t.resource): t for t in TEMPLATES}
        self._budgets: dict[str, list[JSON]] | None = None
        """This round's budgets of the host by namespace (:meth:`_budgets_in`)."""
        self._wake: float | None = None
        self._expiries: dict[tuple[str, str], float] = {}
        """Bindings something evicts later with no event to tell (a tolerated NoExecute taint,
        a graceful eviction task's grace period, an application failover timer): when."""

    # -- the planner's time seam ------------------------------------------------------------------

    def due(self, now: float) -> set[Key]:
        if self._wake is None or now < self._wake:
            return set()
        self._wake = None
        return {(resource_key(self.home, CLUSTERS.group, CLUSTERS.resource), "")}

    def next_wake(self) -> float | None:
        return self._wake

    # -- the rule ---------------------------------------------------------------------------------

    def _affected(self, changed: Set[Key],
                  view: KubeProjection | None = None) -> set[tuple[str, str]] | None:
        """The bindings (namespace, name) a change touches: a template's (in the host or a
        member's copy of it, which has its name), a stored binding, the one a budget of the
        host names by its targetRef; None when every binding is (a policy or a Cluster of the
        host changed, a budget selecting by labels changed, or a time it waited for came)."""
        home = escape(self.home)
        out: set[tuple[str, str]] = set()
        for rkey, okey in changed:
            cluster, _, rest = rkey.partition(".")
            group, _, resource = rest.partition(".")
            if resource not in self._names:
                continue
            key = (unescape(group), resource)
            if cluster == home and key == (BUDGET_GROUP, BUDGET_RESOURCE):
                covered = None if view is None else self._covered(view, okey)
                if covered is None:
                    return None
                out |= covered
                continue
            if cluster == home and key in self._whole:
                return None
            namespace, _, name = okey.partition(".")
            if cluster == home and key in self._bindings:
                out.add((unescape(namespace), unescape(name)))
                continue
            kind = self._templates.get(key)
            if kind is not None:
                out.add((unescape(namespace) if kind.namespaced else "",
                         binding_name(kind.kind, unescape(name))))
        return out

    def desired(self, view: KubeProjection, changed: Set[Key], now: float) -> list[Desired]:
        affected = self._affected(changed, view)
        if affected is not None and not affected:
            return []
        at = datetime.fromtimestamp(now, UTC)
        self._budgets = None
        host = self._host_objects(view, affected)
        clusters = sorted((self._serving(view, from_object(o)) for _, o in view.iter_decoded(
            self.home, CLUSTERS.group, CLUSTERS.resource)), key=lambda c: c.name)
        members = [c.name for c in clusters]
        out: list[Desired] = []
        if affected is None:
            self._expiries.clear()
        for held in held_bindings(host):
            key = (held.namespace, held.name)
            if not self.shards.owns(held.namespace) or (
                    affected is not None and key not in affected):
                continue
            self._expiries.pop(key, None)
            self._held.discard(key)
            stored = self._stored(view, held)
            if stored is None:
                if held.template is not None and not held.deleting:
                    out.append(self._create(held))
                continue
            if as_map(stored.get("metadata")).get("deletionTimestamp"):
                out.extend(self._release(view, held, stored, members))
                continue
            if held.template is None:
                out.extend(self._unclaimed(view, held, stored, at))
                continue
            wants, runs_out = self._binding(view, held, stored, clusters, at, members)
            out.extend(wants)
            expires = next_eviction(held.clusters, clusters,
                                    applied_placement(held.annotations), at)
            looks = [t for t in (None if expires is None else expires.timestamp(), runs_out)
                     if t is not None]
            if looks:
                self._expiries[key] = min(looks)
        wakes = list(self._expiries.values())
        if self._held:
            allowed = next_allowed(self._last_eviction, self.eviction_rate)
            wakes.append(now if allowed is None else allowed)
        self._wake = min(wakes) if wakes else None
        return out

    def _covered(self, view: KubeProjection, okey: str) -> set[tuple[str, str]] | None:
        """The binding a budget's targetRef names; None for a budget gone or selecting by
        labels (it may cover any template of its namespace)."""
        budget = view.decoded(resource_key(self.home, BUDGET_GROUP, BUDGET_RESOURCE), okey)
        ref = as_map(as_map(budget).get("spec")).get("targetRef")
        if budget is None or not isinstance(ref, Mapping):
            return None
        namespace = as_str(as_map(budget.get("metadata")).get("namespace"))
        return {(namespace, binding_name(as_str(ref.get("kind")), as_str(ref.get("name"))))}

    def _serving(self, view: KubeProjection, cluster: Cluster) -> Cluster:
        """A Cluster whose status lists no API enablements serves the template kinds its
        member's watcher has listed."""
        if cluster.api_enablements:
            return cluster
        served: dict[str, frozenset[str]] = {}
        for kind in TEMPLATES:
            if view.synced(cluster.name, kind.group, kind.resource):
                served[kind.api_version] = served.get(kind.api_version, frozenset()) | {
                    kind.kind}
        return msgspec.structs.replace(cluster, api_enablements=served)

    def _host_objects(self, view: KubeProjection,
                      affected: set[tuple[str, str]] | None) -> list[dict[str, Any]]:
        """The policies, and the templates and bindings of the ``affected`` bindings (all of
        them for None): what :func:`held_bindings` reads for those bindings."""
        objects: list[dict[str, Any]] = []
        for ref in (PROPAGATION_POLICIES, CLUSTER_PROPAGATION_POLICIES):
            objects.extend(o for _, o in view.iter_decoded(self.home, ref.group, ref.resource))
        if affected is None:
            for ref in (RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS, *(t.ref for t in TEMPLATES)):
                objects.extend(o for _, o in view.iter_decoded(self.home, ref.group,
                                                               ref.resource))
        else:
            for namespace, name in sorted(affected):
                ref = RESOURCE_BINDINGS if namespace else CLUSTER_RESOURCE_BINDINGS
                found = view.get(self.home, ref.group, ref.resource, namespace, name)
                if found is not None:
                    objects.append(found)
                for kind in TEMPLATES:
                    suffix = f"-{kind.kind.lower()}"
                    if kind.namespaced != bool(namespace) or not name.endswith(suffix):
                        continue
                    template = view.get(self.home, kind.group, kind.resource, namespace,
                                        name[:-len(suffix)])
                    if template is not None:
                        objects.append(template)
        return [o for o in objects if not is_member_object(o)]

    def _stored(self, view: KubeProjection, held: HeldBinding) -> dict[str, Any] | None:
        ref = CLUSTER_RESOURCE_BINDINGS if held.cluster_scoped else RESOURCE_BINDINGS
        return view.get(self.home, ref.group, ref.resource, held.namespace, held.name)

    # -- the binding in the host ------------------------------------------------------------------

    def _template_ref(self, held: HeldBinding) -> tuple[ObjectRef, int] | None:
        template = as_map(held.template)
        kind = _kind_of(template)
        if kind is None:
            return None
        metadata = as_map(template.get("metadata"))
        return (ObjectRef(group=kind.group, version=kind.version, resource=kind.resource,
                          namespace=held.namespace, name=held.resource.name,
                          uid=as_str(metadata.get("uid"))),
                as_int(metadata.get("generation")) or 0)

    def _binding_ref(self, held: HeldBinding, stored: Mapping[str, Any]) -> ObjectRef:
        ref = CLUSTER_RESOURCE_BINDINGS if held.cluster_scoped else RESOURCE_BINDINGS
        return ObjectRef(group=ref.group, version=ref.version, resource=ref.resource,
                         namespace=held.namespace, name=held.name,
                         uid=as_str(as_map(stored.get("metadata")).get("uid")))

    def _create(self, held: HeldBinding) -> Desired:
        template = self._template_ref(held)
        ref = CLUSTER_RESOURCE_BINDINGS if held.cluster_scoped else RESOURCE_BINDINGS
        target = ObjectRef(group=ref.group, version=ref.version, resource=ref.resource,
                           namespace=held.namespace, name=held.name)
        return Desired(verb="create", target=target, object=new_binding(held),
                       governor=template[0] if template else None,
                       governor_generation=template[1] if template else 0,
                       reason=f"{held.resource.kind} {held.key} is taken by a propagation "
                              f"policy: its {kind_of(held)}")

    def _binding(self, view: KubeProjection, held: HeldBinding, stored: Mapping[str, Any],
                 clusters: list[Cluster], at: datetime,
                 members: list[str]) -> tuple[list[Desired], float | None]:
        """The binding's writes, and when a task or timer of it runs out (None: none)."""
        template = self._template_ref(held)
        if template is None:
            return [], None
        governor, generation = template
        passed = binding_round(held, clusters, at, observed=held.observed_current)
        if passed.taint_evicted:
            if allows(self._last_eviction, self.eviction_rate, at.timestamp()):
                self._last_eviction = at.timestamp()
            else:
                self._held.add((held.namespace, held.name))
                passed = binding_round(held, clusters, at, observed=held.observed_current,
                                       taint_evictions=False)
        evicted, round_, tasks = passed.evicted, passed.result, passed.tasks
        out: list[Desired] = []
        rb = self._binding_ref(held, stored)
        stored_generation = as_int(as_map(stored.get("metadata")).get("generation")) or 0
        patch = spec_patch(held, evicted.clusters, round_, tasks,
                           since_text(passed.unhealthy_since))
        spec_holds = patch_satisfied(stored, patch)
        copies, items, steps = self._copies(view, held, stored, rb, stored_generation, members,
                                            clusters)
        if not spec_holds:
            if round_.succeeded:
                patch = with_schedule_time(patch, at, round_.observed_affinity)
            if steps is not None:
                patch.setdefault("metadata", {}).setdefault("annotations", {})[
                    STEPPED_REPLICAS] = steps[0]
            out.append(Desired(verb="patch", target=rb, patch=patch, governor=governor,
                               governor_generation=generation, precondition="resource_version",
                               serial=True, reason=f"{kind_of(held)} {held.key}: the "
                                                   f"detector's and scheduler's spec"))
        elif steps is not None:
            out.append(Desired(verb="patch", target=rb,
                               patch={"metadata": {"annotations": {STEPPED_REPLICAS: steps[0]}}},
                               governor=governor, governor_generation=generation,
                               precondition="resource_version", serial=True,
                               reason=f"{kind_of(held)} {held.key}: its copies' replicas move "
                                      f"within its budget"))
        if spec_holds:
            status = status_patch(stored, round_, items, at)
            if status is not None:
                out.append(Desired(verb="patch_status", target=rb, patch=status,
                                   governor=governor, governor_generation=generation,
                                   precondition="resource_version", serial=True,
                                   reason=f"{kind_of(held)} {held.key}: schedule and status"))
        out.extend(copies)
        out.extend(self._template_status(held, governor, generation, stored, items))
        runs_out = passed.runs_out
        return out, (None if runs_out is None else runs_out.timestamp() + _STRICTLY_AFTER)

    def _unclaimed(self, view: KubeProjection, held: HeldBinding, stored: Mapping[str, Any],
                   at: datetime) -> list[Desired]:
        """A binding no policy takes any more (its policy deleted, or changed to select other
        templates) while its template stays: as Karmada, its claim is removed and it is not
        scheduled again, its copies stay as they are, and their status is still reflected
        into the binding and the template. (Its template gone instead: the garbage collector
        deletes the binding.)"""
        resource = as_map(as_map(stored.get("spec")).get("resource"))
        kind = BY_KIND.get((_group(as_str(resource.get("apiVersion"))),
                            as_str(resource.get("kind"))))
        if kind is None:
            return []
        template = view.get(self.home, kind.group, kind.resource, held.namespace,
                            as_str(resource.get("name")))
        metadata = as_map((template or {}).get("metadata"))
        uid = as_str(metadata.get("uid"))
        if template is None or is_member_object(template) or uid != as_str(resource.get("uid")):
            return []
        governor = ObjectRef(group=kind.group, version=kind.version, resource=kind.resource,
                             namespace=held.namespace, name=as_str(resource.get("name")),
                             uid=uid)
        generation = as_int(metadata.get("generation")) or 0
        rb = self._binding_ref(held, stored)
        out: list[Desired] = []
        if claimed(stored):
            out.append(Desired(verb="patch", target=rb, patch=claim_patch(claim_of(None)),
                               governor=governor, governor_generation=generation,
                               precondition="resource_version",
                               reason=f"{kind_of(held)} {held.key}: no policy takes its "
                                      f"{kind.kind} any more; its claim is removed, its "
                                      f"schedule and copies stay"))
        items = []
        for target in held.clusters:
            observed = (view.get(target.name, kind.group, kind.resource, held.namespace,
                                 governor.name)
                        if view.synced(target.name, kind.group, kind.resource) else None)
            if observed is not None and _names_binding(observed, held):
                items.append(item(target.name, observed))
        kept = Round(scheduled=False, clusters=(), observed_affinity=held.observed_affinity)
        status = status_patch(stored, kept, items, at)
        if status is not None:
            out.append(Desired(verb="patch_status", target=rb, patch=status, governor=governor,
                               governor_generation=generation, precondition="resource_version",
                               serial=True,
                               reason=f"{kind_of(held)} {held.key}: the status of its copies"))
        out.extend(self._template_status(msgspec.structs.replace(held, template=template),
                                         governor, generation, stored, items))
        return out

    # -- the copies in the members ----------------------------------------------------------------

    def _copies(self, view: KubeProjection, held: HeldBinding, stored: Mapping[str, Any],
                rb: ObjectRef, generation: int, members: list[str], clusters: list[Cluster],
                ) -> tuple[list[Desired], list[JSON], tuple[str | None] | None]:
        """The copies' writes, their aggregated status, and the binding's held replicas when
        they are to change (:mod:`..core.stepped_replicas`; a 1-tuple, None inside: none)."""
        template = as_map(held.template)
        kind = _kind_of(template)
        if kind is None:
            return [], [], None
        spec = as_map(stored.get("spec"))
        targets = {as_str(as_map(t).get("name")): as_int(as_map(t).get("replicas")) or 0
                   for t in spec.get("clusters") or [] if isinstance(t, Mapping)}
        keep = {as_str(as_map(t).get("fromCluster"))
                for t in spec.get("gracefulEvictionTasks") or [] if isinstance(t, Mapping)}
        out: list[Desired] = []
        items: list[JSON] = []
        target_ref = ObjectRef(group=kind.group, version=kind.version, resource=kind.resource,
                               namespace=held.namespace, name=held.resource.name)
        listed = [m for m in sorted(set(members) | set(targets))
                  if view.synced(m, kind.group, kind.resource)]
        found = {m: view.get(m, kind.group, kind.resource, held.namespace, held.resource.name)
                 for m in listed}
        observed_in = {m: o for m, o in found.items()
                       if o is not None and _names_binding(o, held)}
        held_at = self._held_at(view, held, targets, keep, observed_in, clusters)
        on_binding = recorded(stored)
        for member in listed:
            observed = found[member]
            ours = member in observed_in
            share = targets.get(member)
            if member in held_at:
                # Held above its share for now: only at the count the binding records.
                share = held_at[member] if on_binding.get(member) == held_at[member] else None
            if member in targets:
                wanted = member_copy(template, member, targets[member], held.name,
                                     held.namespace)
                if observed is None:
                    out.append(Desired(verb="create", target=target_ref, object=wanted,
                                       governor=rb, governor_generation=generation,
                                       cluster=member,
                                       reason=f"{kind_of(held)} {held.key} schedules "
                                              f"{targets[member]} to {member}"))
                    continue
                if not ours:
                    continue  # someone else's object of that name: Karmada would not adopt it
                assert observed is not None
                items.append(item(member, observed))
                if share is not None:
                    out.extend(self._patch(held, member, template, share, observed, target_ref,
                                           rb, generation))
            elif observed is not None and ours and member not in keep:
                if member not in held_at:
                    out.append(Desired(verb="delete", target=_with_uid(target_ref, observed),
                                       governor=rb, governor_generation=generation,
                                       cluster=member,
                                       reason=f"{kind_of(held)} {held.key} no longer schedules "
                                              f"to {member}"))
                    continue
                items.append(item(member, observed))
                if share is not None:
                    out.extend(self._patch(held, member, template, share, observed, target_ref,
                                           rb, generation))
            elif observed is not None and ours:
                items.append(item(member, observed))
        steps = (text_of(held_at),) if held_at != on_binding else None
        return out, items, steps

    def _held_at(self, view: KubeProjection, held: HeldBinding, targets: Mapping[str, int],
                 keep: Set[str], observed_in: Mapping[str, Mapping[str, Any]],
                 clusters: list[Cluster]) -> dict[str, int]:
        """The copies a budget of the host holds above their share for now
        (:mod:`..core.replica_steps`); none without a budget."""
        template = as_map(held.template)
        budgets = self._budgets_in(view).get(held.namespace)
        budget: Covering | None = (covering(budgets, template)
                                   if budgets and aggregates(template) else None)
        if budget is None:
            return {}
        # A Deployment's ReplicaSets remove the replicas not available first.
        unavailable_first = as_str(template.get("kind")) == "Deployment"
        ready = {c.name for c in clusters if c.ready == "True"}
        copies: dict[str, Copy] = {}
        shares = dict(targets)
        for member, observed in observed_in.items():
            replicas = replicas_in(observed) or 0
            available = as_int(as_map(observed.get("status")).get("availableReplicas")) or 0
            copies[member] = Copy(replicas=replicas,
                                  available=available if member in ready else 0,
                                  unavailable_first=unavailable_first)
            if member in keep and member not in targets:
                shares[member] = replicas  # a graceful eviction task keeps it as it is
        steps = step(copies, shares, budget.minimum, budget.allowed)
        return {c: r for c, r in held_above(steps, shares).items() if c in observed_in}

    def _budgets_in(self, view: KubeProjection) -> dict[str, list[JSON]]:
        """The host's budgets by namespace, read once a round."""
        if self._budgets is None:
            self._budgets = {}
            for _, budget in view.iter_decoded(self.home, BUDGET_GROUP, BUDGET_RESOURCE):
                namespace = as_str(as_map(budget.get("metadata")).get("namespace"))
                self._budgets.setdefault(namespace, []).append(budget)
        return self._budgets

    def _patch(self, held: HeldBinding, member: str, template: Mapping[str, Any], replicas: int,
               observed: Mapping[str, Any], target_ref: ObjectRef, rb: ObjectRef,
               generation: int) -> list[Desired]:
        wanted = member_copy(template, member, replicas, held.name, held.namespace)
        ops = copy_patch(wanted, observed)
        if ops is None:
            return []
        return [Desired(verb="patch", target=_with_uid(target_ref, observed), patch=ops,
                        patch_type="json", governor=rb, governor_generation=generation,
                        cluster=member, precondition="resource_version",
                        reason=f"{kind_of(held)} {held.key}: the copy in {member}")]

    def _release(self, view: KubeProjection, held: HeldBinding, stored: Mapping[str, Any],
                 members: list[str]) -> list[Desired]:
        """A binding being deleted: its copies go, then its finalizer."""
        finalizers = as_map(stored.get("metadata")).get("finalizers")
        if not isinstance(finalizers, list) or FINALIZER not in finalizers:
            return []
        rb = self._binding_ref(held, stored)
        generation = as_int(as_map(stored.get("metadata")).get("generation")) or 0
        resource = as_map(as_map(stored.get("spec")).get("resource"))
        kind = BY_KIND.get((_group(as_str(resource.get("apiVersion"))),
                            as_str(resource.get("kind"))))
        out: list[Desired] = []
        listed = True
        if as_map(stored.get("spec")).get("preserveResourcesOnDeletion") is True:
            kind = None  # the copies stay in the members: only the finalizer goes
        if kind is not None:
            target_ref = ObjectRef(group=kind.group, version=kind.version,
                                   resource=kind.resource, namespace=held.namespace,
                                   name=as_str(resource.get("name")))
            for member in sorted(members):
                if not view.synced(member, kind.group, kind.resource):
                    listed = False
                    continue
                observed = view.get(member, kind.group, kind.resource, held.namespace,
                                    target_ref.name)
                if observed is not None and _names_binding(observed, held):
                    out.append(Desired(verb="delete", target=_with_uid(target_ref, observed),
                                       governor=rb, governor_generation=generation,
                                       cluster=member,
                                       reason=f"{kind_of(held)} {held.key} is being deleted"))
        if not out and listed:
            out.append(Desired(
                verb="patch", target=rb, governor=rb, governor_generation=generation,
                patch={"metadata": {"finalizers": [f for f in finalizers if f != FINALIZER]}},
                precondition="resource_version",
                reason=f"{kind_of(held)} {held.key}: every copy is gone"))
        return out

    # -- the template's status in the host --------------------------------------------------------

    def _template_status(self, held: HeldBinding, governor: ObjectRef, generation: int,
                         stored: Mapping[str, Any], items: list[JSON]) -> list[Desired]:
        template = as_map(held.template)
        if not aggregates(template) or not as_map(stored.get("spec")).get("clusters"):
            return []
        status = template_status(template, items)
        return [Desired(verb="patch_status", target=governor, patch={"status": status},
                        governor=governor, governor_generation=generation, serial=True,
                        reason=f"{held.resource.kind} {held.key}: the status of its copies "
                               f"in the members, summed")]


def _with_uid(ref: ObjectRef, observed: Mapping[str, Any]) -> ObjectRef:
    uid = as_str(as_map(observed.get("metadata")).get("uid"))
    return ObjectRef(group=ref.group, version=ref.version, resource=ref.resource,
                     namespace=ref.namespace, name=ref.name, uid=uid)


def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def _kind_of(template: Mapping[str, Any]) -> TemplateKind | None:
    return BY_KIND.get((_group(as_str(template.get("apiVersion"))),
                        as_str(template.get("kind"))))


def _names_binding(obj: Mapping[str, Any], held: HeldBinding) -> bool:
    annotations = as_map(as_map(obj.get("metadata")).get("annotations"))
    return (as_str(annotations.get(BINDING_NAME_ANNOTATION)) == held.name
            and as_str(annotations.get(BINDING_NAMESPACE_ANNOTATION)) == held.namespace)
