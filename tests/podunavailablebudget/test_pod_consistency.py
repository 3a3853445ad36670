"""When a ready pod still counts as unavailable: mid in-place update ("inconsistent")."""

from __future__ import annotations

import json
from typing import Any

import pytest

from spreadbus.features.podunavailablebudget.core.pod_health import available, consistent
from tests.podunavailablebudget.builders import pod

JSON = dict[str, Any]
DIGEST = "sha256:" + "a" * 64
OTHER = "sha256:" + "b" * 64


def with_containers(*containers: tuple[str, str, str | None, str | None],
                    annotations: dict[str, str] | None = None) -> JSON:
    """(name, spec image, status image, status imageID); None leaves the status out."""
    p = pod("p", annotations=annotations)
    p["spec"]["containers"] = [{"name": n, "image": image} for n, image, _, _ in containers]
    p["status"]["containerStatuses"] = [
        {"name": n, "image": s_image, "imageID": s_id}
        for n, _, s_image, s_id in containers if s_id is not None
    ]
    return p


def inplace_state(**state: Any) -> dict[str, str]:
    return {"apps.kruise.io/inplace-update-state": json.dumps(state)}


CASES = [
    ("no annotations", with_containers(("main", "nginx:1", "nginx:1", "id1")), True),
    ("digest running", with_containers(
        ("main", f"reg/app@{DIGEST}", f"reg/app@{DIGEST}", f"docker-pullable://reg/app@{DIGEST}")),
     True),
    ("digest with a tag running", with_containers(
        ("main", f"reg/app:v1@{DIGEST}", "reg/app:v1", f"reg/app@{DIGEST}")), True),
    ("another digest running", with_containers(
        ("main", f"reg/app@{DIGEST}", "x", f"reg/app@{OTHER}")), False),
    ("a bare config digest as imageID", with_containers(
        ("main", f"reg/app@{DIGEST}", "x", DIGEST)), False),
    ("a digest container without status", with_containers(
        ("main", f"reg/app@{DIGEST}", None, None)), False),
    ("one stale digest among tagged containers", with_containers(
        ("main", "nginx:1", "nginx:1", "id1"),
        ("side", f"reg/app@{DIGEST}", "x", f"reg/app@{OTHER}")), False),
    ("in-place update in its grace period", with_containers(
        ("main", "nginx:1", "nginx:1", "id1"),
        annotations={"apps.kruise.io/inplace-update-grace": "{}"}), False),
    ("in-place update with a next batch", with_containers(
        ("main", "nginx:1", "nginx:1", "id1"),
        annotations=inplace_state(nextContainerImages={"main": "nginx:2"})), False),
    ("kubelet still runs the recorded image", with_containers(
        ("main", "nginx:2", "nginx:1", "id1"),
        annotations=inplace_state(lastContainerStatuses={"main": {"imageID": "id1"}})), False),
    ("kubelet runs the new image", with_containers(
        ("main", "nginx:2", "nginx:2", "id2"),
        annotations=inplace_state(lastContainerStatuses={"main": {"imageID": "id1"}})), True),
    ("an untagged spec image compares as :latest", with_containers(
        ("main", "nginx", "nginx:latest", "id1"),
        annotations=inplace_state(lastContainerStatuses={"main": {"imageID": "id1"}})), True),
    ("a recorded container without status", with_containers(
        ("main", "nginx:2", "nginx:2", "id2"),
        annotations=inplace_state(lastContainerStatuses={"gone": {"imageID": "id1"}})), False),
    ("an unreadable in-place state", with_containers(
        ("main", "nginx:1", "nginx:1", "id1"),
        annotations={"apps.kruise.io/inplace-update-state": "{"}), False),
]


@pytest.mark.parametrize(("the_pod", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_consistency(the_pod: JSON, expected: bool) -> None:
    assert consistent(the_pod) is expected
    assert available(the_pod) is expected


def sidecar_pod(status_id: str, status_image: str, sets: str = "mesh") -> JSON:
    p = with_containers(
        ("main", "nginx:1", "nginx:1", "id1"),
        ("envoy", "envoy:2", status_image, status_id),
        annotations={
            "kruise.io/sidecarset-injected-list": sets,
            "kruise.io/sidecarset-inplace-update-state": json.dumps(
                {"mesh": {"lastContainerStatuses": {"envoy": {"imageID": "envoy-1"}}}}),
        },
    )
    p["spec"]["containers"][1]["env"] = [{"name": "IS_INJECTED", "value": "true"}]
    return p


def test_a_sidecar_not_yet_updated_in_place_is_inconsistent() -> None:
    assert not consistent(sidecar_pod("envoy-1", "envoy:1"))
    assert consistent(sidecar_pod("envoy-2", "envoy:2"))
    assert consistent(sidecar_pod("envoy-1", "envoy:1", sets="other"))
