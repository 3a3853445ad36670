"""The shared pod view: pods keyed per cluster, one entry per pod for every feature that keeps
pods, re-kept and told only when what a feature keeps changes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from events import subjects
from events.codec import encode
from events.messages import Observation
from spreadbus.projection.pod_view import PodView, is_pod_subject, pod_identity


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
    view = PodView("east", (_phase,))
    assert view.observe(("default", "a"), _pod("a"))
    bumped = _pod("a")
    bumped["metadata"]["resourceVersion"] = "2"
    assert not view.observe(("default", "a"), bumped), "a version the feature does not keep"
    assert view.observe(("default", "a"), _pod("a", phase="Succeeded"))
    assert view.get("default", "a") == ("default", "a", "Succeeded")


def test_a_pod_gone_is_a_change_once_and_same_names_in_two_namespaces_stay_apart() -> None:
    view = PodView("east", (_phase,))
    view.observe(("one", "a"), _pod("a", "one"))
    view.observe(("two", "a"), _pod("a", "two", phase="Pending"))
    assert view.observe(("one", "a"), None)
    assert not view.observe(("one", "a"), None)
    assert view.kept == {("two", "a"): ("two", "a", "Pending")}


def test_the_key_given_is_the_key_kept() -> None:
    view = PodView("east", (_phase,))
    at = ("default", "a")
    view.observe(at, _pod("a"))
    assert next(iter(view.kept)) is at, "a feature's own index shares the key"


def _labels(pod: Mapping[str, Any], name: str, namespace: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(pod.get("metadata", {}).get("labels", {}).items()))


def _fold(view: PodView, seq: int, observed: Observation) -> None:
    name = observed.object.get("metadata", {}).get("name", "x")
    subject = subjects.observation(observed.cluster, observed.group, observed.resource,
                                   "default", name if isinstance(name, str) else "x")
    view.fold(seq, subject, encode(observed))


def test_two_features_share_one_entry_per_pod_and_each_is_told_of_its_own_changes() -> None:
    view = PodView("east", (_phase, _labels))
    phases, labels = view.part(0), view.part(1)
    told: dict[str, list[tuple[tuple[str, str], bool]]] = {"phase": [], "labels": []}
    phases.listen(lambda at, pod, changed: told["phase"].append((at, changed)))
    labels.listen(lambda at, pod, changed: told["labels"].append((at, changed)))
    pod = _pod("a")
    _fold(view, 1, _observed(pod))
    assert len(view.kept) == 1
    assert phases[("default", "a")] == ("default", "a", "Running")
    assert labels[("default", "a")] == ()
    pod["metadata"]["labels"] = {"app": "web"}
    _fold(view, 2, _observed(pod))
    assert phases[("default", "a")] == ("default", "a", "Running")
    assert labels[("default", "a")] == (("app", "web"),)
    assert told["phase"] == [(("default", "a"), True), (("default", "a"), False)]
    assert told["labels"] == [(("default", "a"), True), (("default", "a"), True)]
    _fold(view, 3, Observation(cluster="east", group="", version="v1", resource="pods",
                               event="DELETED", object=pod))
    assert len(view.kept) == len(phases) == len(labels) == 0
    assert told["phase"][-1] == told["labels"][-1] == (("default", "a"), True)


def test_the_fold_keeps_only_the_pods_of_its_cluster() -> None:
    view = PodView("east", (_phase,))
    _fold(view, 1, _observed(_pod("a"), cluster="west"))
    _fold(view, 2, _observed(_pod("b"), resource="replicasets", group="apps"))
    _fold(view, 3, _observed(_pod("c")))
    assert list(view.kept) == [("default", "c")]
    assert is_pod_subject(subjects.observation("east", "", "pods", "default", "c"))
    assert not is_pod_subject(subjects.observation("east", "apps", "replicasets", "default", "c"))
    view.fold(4, subjects.observation("east", "", "pods", "default", "d"), b"not json")
    assert view.skipped == 1
