"""The smallest real rule: every Deployment carries its generation in an annotation.

``spreadbus.io/observed-generation`` equal to ``metadata.generation`` shows, on the object
itself, that the whole pipe (watcher, planner, actuator) has seen its latest spec. It exercises
everything a placement rule needs (read the projection, want a patch, let the planner diff) while
being trivially checkable from outside with kubectl.

The plan names the uid only, not the observed ``resourceVersion``: a Deployment's controller
rewrites its status many times while it rolls out, and a version precondition would fail the
annotation's plan on each of those writes. Writing a stale generation is harmless here: the write
is observed like any change, the annotation then differs from the generation, and the rule plans
the newer one.
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
                )
            )
        return out
