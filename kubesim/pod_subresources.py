"""Pod subresources that are verbs of their own: ``binding`` (the scheduler's assignment) and
``eviction`` (a deletion guarded by PodDisruptionBudgets).

Eviction follows upstream's order of checks: a pod that is terminating, finished or still
Pending is deleted without consulting budgets; more than one matching budget is a 500; a
budget whose status is older than its spec is a 429 "still being processed"; an unready pod
goes without spending the budget when ``unhealthyPodEvictionPolicy`` allows (AlwaysAllow, or
the default IfHealthyBudget while the budget is met);
``disruptionsAllowed < 1`` is a 429 with the upstream message; otherwise the budget's
``disruptionsAllowed`` is decremented, the pod is recorded in ``disruptedPods``, and the pod is
deleted gracefully. Budget status itself is computed by the simulated disruption controller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesemantics import label_selector
from kubesim import errors
from kubesim.admission import Attributes
from kubesim.interface import GVR

if TYPE_CHECKING:
    from kubesim.apiserver import ApiServer

JsonObject = dict[str, Any]


def success_status() -> JsonObject:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


async def bind(
    server: ApiServer, namespace: str, name: str, binding: Any, *, dry_run: bool = False
) -> JsonObject:
    rt = server.rt_for(GVR("", "v1", "pods"))
    if not isinstance(binding, dict):
        raise errors.bad_request("the body of the request must be a Binding object")
    target = binding.get("target") or {}
    node = target.get("name")
    if not node:
        raise errors.invalid_object("Binding", "", name, [errors.required("target.name")])
    old = server.existing(rt, namespace, name)
    if old["metadata"].get("deletionTimestamp"):
        raise errors.conflict(
            "pods", "", name, "pod is being deleted, cannot be assigned to a host"
        )
    current = (old.get("spec") or {}).get("nodeName")
    if current:
        raise errors.conflict(
            "pods", "", name, f'pod {name} is already assigned to node "{current}"'
        )
    attrs = Attributes(
        "CREATE",
        rt,
        "binding",
        namespace,
        name,
        dry_run,
        {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
    )
    if server.admission.applies("CREATE", rt, "binding"):
        await server.admission.mutate(attrs, binding, None)
        await server.admission.validate(attrs, binding, None)
    if dry_run:
        return success_status()
    status = dict(old.get("status") or {})
    conds = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conds.append(
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": server.now(),
        }
    )
    status["conditions"] = conds
    new = {
        **old,
        "spec": {**old["spec"], "nodeName": node},
        "status": status,
        "metadata": {**old["metadata"], "resourceVersion": str(server.store.next_rv())},
    }
    ev = server.store.write(rt.storage_key, new, "MODIFIED", old)
    server.after_write(ev)
    return success_status()


async def evict(
    server: ApiServer, namespace: str, name: str, eviction: Any, *, dry_run: bool = False
) -> JsonObject:
    rt = server.rt_for(GVR("", "v1", "pods"))
    pod = server.existing(rt, namespace, name)
    if not isinstance(eviction, dict):
        raise errors.bad_request("the body of the request must be an Eviction object")
    ev_name = (eviction.get("metadata") or {}).get("name")
    if ev_name and ev_name != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    attrs = Attributes(
        "CREATE",
        rt,
        "eviction",
        namespace,
        name,
        dry_run,
        {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
    )
    if server.admission.applies("CREATE", rt, "eviction"):
        await server.admission.mutate(attrs, eviction, None)
        await server.admission.validate(attrs, eviction, None)
    options = eviction.get("deleteOptions") or {}
    grace = options.get("gracePeriodSeconds")
    preconditions = options.get("preconditions")
    if not isinstance(preconditions, dict):
        preconditions = None

    async def evicted() -> JsonObject:
        """The pod deleted as the eviction asks, and the success answer. A dry run goes through
        the same deletion, which checks the preconditions and stops before any effect."""
        await server.delete_obj(
            rt,
            namespace,
            name,
            grace_period_seconds=grace,
            preconditions=preconditions,
            dry_run=dry_run,
            skip_admission=True,
        )
        return success_status()

    # Upstream's canIgnorePDB: finished, pending or terminating pods are not protected.
    unprotected = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed", "Pending")
    if pod["metadata"].get("deletionTimestamp") or unprotected:
        return await evicted()
    pdb_rt = server.rt_for(GVR("policy", "v1", "poddisruptionbudgets"))
    labels = pod["metadata"].get("labels") or {}
    matching = []
    for pdb in server.store.items(pdb_rt.storage_key, namespace):
        sel = (pdb.get("spec") or {}).get("selector")
        try:
            if (
                sel is not None
                and label_selector.from_label_selector(sel).matches(labels)
                and (sel.get("matchLabels") or sel.get("matchExpressions"))
            ):
                matching.append(pdb)
        except label_selector.SelectorError:
            continue
    if len(matching) > 1:
        raise errors.internal(
            "This pod has more than one PodDisruptionBudget, which the eviction "
            "subresource does not support."
        )
    if matching:
        pdb = matching[0]
        status = pdb.get("status") or {}
        pdb_name = pdb["metadata"]["name"]
        msg = "Cannot evict pod as it would violate the pod's disruption budget."
        if not _ready(pod) and _unhealthy_evictable(pdb):
            # An unready pod does not count as healthy, so its eviction spends nothing.
            return await evicted()
        if int(status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 0):
            raise errors.too_many_requests(
                msg,
                [
                    {
                        "reason": "DisruptionBudget",
                        "message": f"The disruption budget {pdb_name} is still being "
                        "processed by the server.",
                    }
                ],
            )
        allowed = int(status.get("disruptionsAllowed") or 0)
        if allowed < 0:
            raise errors.forbidden(
                "poddisruptionbudgets", "policy", pdb_name, "pdb disruptions allowed is negative"
            )
        if allowed < 1:
            raise errors.too_many_requests(
                msg,
                [
                    {
                        "reason": "DisruptionBudget",
                        "message": f"The disruption budget {pdb_name} needs "
                        f"{status.get('desiredHealthy', 0)} healthy pods and has "
                        f"{status.get('currentHealthy', 0)} currently",
                    }
                ],
            )
        if not dry_run:
            disrupted = dict(status.get("disruptedPods") or {})
            disrupted[name] = server.now()
            new_status = {
                **status,
                "disruptionsAllowed": allowed - 1,
                "disruptedPods": disrupted,
            }
            new = {**pdb, "status": new_status}
            await server.write_update(pdb_rt, pdb, new, "status", skip_admission=True)
    return await evicted()


def _ready(pod: JsonObject) -> bool:
    conds = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def _unhealthy_evictable(pdb: JsonObject) -> bool:
    """``unhealthyPodEvictionPolicy``: AlwaysAllow, or IfHealthyBudget (the default) while the
    budget is met."""
    if (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
        return True
    status = pdb.get("status") or {}
    desired = int(status.get("desiredHealthy") or 0)
    return desired > 0 and int(status.get("currentHealthy") or 0) >= desired
