"""The shared pod view: pods keyed per cluster, re-kept only when what a feature keeps changes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from events.messages import Observation
from spreadbus.projection.pod_view import PodView, pod_identity


def _pod(name: str, namespace: str | None = "default", phase: str = "Running") -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "resourceVersion": "1"}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "status": {"phase": phase}}


def _observed(obj: dict[str, Any], cluster: str = "east", resource: str = "pods",
              group: str = "") -> Observation:
    return Observation(cluster=cluster, group=group, version="v1", resource=resource,
                       event="ADDED", object=obj)


def _phase(pod: Mapping[str, Any], name: str, namespace: str) -> tuple[str, str, object]:
    return (namespace, name, pod.get("status", {}).get("phase"))


def test_a_pod_is_identified_only_in_its_own_cluster() -> None:
    assert pod_identity(_observed(_pod("a")), "east") == ("default", "a")
    assert pod_identity(_observed(_pod("a"), cluster="west"), "east") is None
    assert pod_identity(_observed(_pod("a"), resource="replicasets", group="apps"), "east") is None


def test_a_pod_without_a_namespace_is_in_the_empty_one_and_a_bad_name_is_no_pod() -> None:
    assert pod_identity(_observed(_pod("a", namespace=None)), "east") == ("", "a")
    nameless = _pod("a")
    nameless["metadata"]["name"] = 7
    assert pod_identity(_observed(nameless), "east") is None
    assert pod_identity(_observed({"metadata": "oops"}), "east") is None


def test_only_a_change_in_what_is_kept_counts_as_a_change() -> None:
    view = PodView("east", _phase)
    assert view.observe(("default", "a"), _pod("a"))
    bumped = _pod("a")
    bumped["metadata"]["resourceVersion"] = "2"
    assert not view.observe(("default", "a"), bumped), "a version the feature does not keep"
    assert view.observe(("default", "a"), _pod("a", phase="Succeeded"))
    assert view.get("default", "a") == ("default", "a", "Succeeded")


def test_a_pod_gone_is_a_change_once_and_same_names_in_two_namespaces_stay_apart() -> None:
    view = PodView("east", _phase)
    view.observe(("one", "a"), _pod("a", "one"))
    view.observe(("two", "a"), _pod("a", "two", phase="Pending"))
    assert view.observe(("one", "a"), None)
    assert not view.observe(("one", "a"), None)
    assert view.kept == {("two", "a"): ("two", "a", "Pending")}


def test_the_key_given_is_the_key_kept() -> None:
    view = PodView("east", _phase)
    at = ("default", "a")
    view.observe(at, _pod("a"))
    assert next(iter(view.kept)) is at, "a feature's own index shares the key"
