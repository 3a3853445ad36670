"""The smallest real rule: every Deployment carries its generation in an annotation.

``spreadbus.io/observed-generation`` equal to ``metadata.generation`` shows, on the object
itself, that the whole pipe (watcher, planner, actuator) has seen its latest spec. It exercises
everything a placement rule needs (read the projection, want a patch, let the planner diff) while
being trivially checkable from outside with kubectl.

The annotation's value is read from the object (its generation), and under faults an actuator
may apply a plan long after it was decided (a replica killed mid-plan, the plan redelivered): such
a plan must never write an older generation over a newer one. The plan says exactly that, as a
JSON patch: ``test /metadata/generation`` equal to the generation it names, then ``add`` the
annotation. It lands whatever else changed meanwhile (the controller rewriting the status, a
label), and a stale one fails (the server rejects a failed ``test``) while the observation of the
newer generation brings the plan for it. The whole condition is in the patch, so the intent
does not depend on the observed version and an equal plan in flight is not re-planned.

A Deployment without any annotation has no map to add the key to, and adding the map would
replace one written in between; only then the patch also tests ``/metadata/resourceVersion``.
The rule skips Deployments whose annotation is already right (a JSON patch is never taken as
already true downstream).
"""

from __future__ import annotations

from collections.abc import Set
from typing import Final

from events.messages import ObjectRef, ResourceRef
from spreadbus.projection.kube_state import KubeProjection, decode_object, resource_key
from spreadbus.projection.planning import Desired

ANNOTATION: Final = "spreadbus.io/observed-generation"
ANNOTATION_PATH: Final = "/metadata/annotations/" + ANNOTATION.replace("~", "~0").replace("/", "~1")
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
            annotations = metadata.get("annotations")
            value = str(generation)
            if isinstance(annotations, dict) and annotations.get(ANNOTATION) == value:
                continue
            patch: list[dict[str, object]] = [
                {"op": "test", "path": "/metadata/generation", "value": generation},
            ]
            if isinstance(annotations, dict):
                patch.append({"op": "add", "path": ANNOTATION_PATH, "value": value})
            else:
                patch += [
                    {"op": "test", "path": "/metadata/resourceVersion",
                     "value": metadata.get("resourceVersion", "")},
                    {"op": "add", "path": "/metadata/annotations", "value": {ANNOTATION: value}},
                ]
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
                    patch=patch,
                    patch_type="json",
                    reason=f"generation is {generation}",
                )
            )
        return out


def written_value(patch: object) -> str | None:
    """The annotation value a plan of this rule writes, if ``patch`` is one."""
    if not isinstance(patch, list):
        return None
    for op in patch:
        if not isinstance(op, dict) or op.get("op") != "add":
            continue
        if op.get("path") == ANNOTATION_PATH:
            return str(op["value"])
        value = op.get("value")
        if op.get("path") == "/metadata/annotations" and isinstance(value, dict):
            return str(value.get(ANNOTATION))
    return None
