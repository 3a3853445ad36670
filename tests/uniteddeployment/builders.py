"""UnitedDeployment objects for the tests, as JSON the API server would hold."""

from __future__ import annotations

from typing import Any

from spreadbus.features.uniteddeployment.core.model import UnitedDeployment, from_object

_UNSET = object()


def subset_json(
    name: str,
    *,
    replicas: object = _UNSET,
    min_replicas: object = _UNSET,
    max_replicas: object = _UNSET,
) -> dict[str, Any]:
    found: dict[str, Any] = {"name": name}
    for key, value in (
        ("replicas", replicas),
        ("minReplicas", min_replicas),
        ("maxReplicas", max_replicas),
    ):
        if value is not _UNSET:
            found[key] = value
    return found


def ud_json(
    subsets: list[dict[str, Any]],
    *,
    replicas: int | None = None,
    strategy: dict[str, Any] | None = None,
    name: str = "sample-ud",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "sample"}},
        "template": {
            "deploymentTemplate": {
                "metadata": {"labels": {"app": "sample"}},
                "spec": {
                    "selector": {"matchLabels": {"app": "sample"}},
                    "template": {
                        "metadata": {"labels": {"app": "sample"}},
                        "spec": {"containers": [{"name": "main", "image": "nginx:alpine"}]},
                    },
                },
            }
        },
        "topology": {"subsets": subsets},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    if strategy is not None:
        spec["topology"]["scheduleStrategy"] = strategy
    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "UnitedDeployment",
        "metadata": {"namespace": "default", "name": name},
        "spec": spec,
    }


def ud(
    subsets: list[dict[str, Any]],
    *,
    replicas: int | None = None,
    strategy: dict[str, Any] | None = None,
) -> UnitedDeployment:
    return from_object(ud_json(subsets, replicas=replicas, strategy=strategy))


def elastic_subsets(minimums: list[int | None], maximums: list[int | None]) -> list[dict[str, Any]]:
    """``subset-0``, ``subset-1``, ... with the given bounds (``None``: not set)."""
    out = []
    for index, (low, high) in enumerate(zip(minimums, maximums, strict=True)):
        extra: dict[str, Any] = {}
        if low is not None:
            extra["min_replicas"] = low
        if high is not None:
            extra["max_replicas"] = high
        out.append(subset_json(f"subset-{index}", **extra))
    return out


ADAPTIVE = {"type": "Adaptive"}
RESERVATION = {"type": "Adaptive", "adaptive": {"reserveUnschedulablePods": True}}
