"""The smallest real rule: every Deployment carries its generation in an annotation.

``spreadbus.io/observed-generation`` equal to ``metadata.generation`` shows, on the object
itself, that the whole pipe (watcher, planner, actuator) has seen its latest spec. It exercises
everything a placement rule needs (read the projection, want a patch, let the planner diff) while
being trivially checkable from outside with kubectl.

The annotation's value is read from the object (its generation), so the plan keeps the observed
``resourceVersion`` as precondition. Under faults an actuator may apply a plan long after it was
decided (a replica killed mid-plan, the plan redelivered); without the precondition such a plan
would write an older generation over a newer one. The price: while a Deployment's controller
keeps rewriting its status, a plan can fail with Conflict, and the newer observation (or the
failure itself) brings a plan decided on the newer version.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Final

from events.messages import ObjectRef, ResourceRef
from spreadbus.projection.kube_state import KubeProjection, decode_object, resource_key
from spreadbus.projection.planning import Desired

ANNOTATION: Final = "spreadbus.io/observed-generation"
DEPLOYMENTS: Final = ResourceRef(group="apps", version="v1", resource="deployments")


class ObservedGeneration:
    name: str = "observed-generation"
    resources: tuple[ResourceRef, ...] = (DEPLOYMENTS,)

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self._rkey = resource_key(cluster, DEPLOYMENTS.group, DEPLOYMENTS.resource)

    def desired(
        self, view: KubeProjection, changed: Set[tuple[str, str]], now: float
    ) -> list[Desired]:
        out: list[Desired] = []
        bucket = view.state.objects.get(self._rkey, {})
        for rkey, okey in sorted(changed):
            if rkey != self._rkey or okey not in bucket:
                continue
            obj = decode_object(bucket[okey])
            metadata = obj.get("metadata", {})
            generation = metadata.get("generation")
            if generation is None or metadata.get("deletionTimestamp"):
                continue
            out.append(
                Desired(
                    verb="patch",
                    target=ObjectRef(
                        group=DEPLOYMENTS.group,
                        version=DEPLOYMENTS.version,
                        resource=DEPLOYMENTS.resource,
                        namespace=str(metadata.get("namespace", "")),
                        name=str(metadata.get("name", "")),
                        uid=str(metadata.get("uid", "")),
                    ),
                    patch={"metadata": {"annotations": {ANNOTATION: str(generation)}}},
                    reason=f"generation is {generation}",
                    precondition="resource_version",
                )
            )
        return out
