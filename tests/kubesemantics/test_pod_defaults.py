"""Kubernetes' pod-spec defaults for workload templates (core/v1 defaulters)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesemantics.pod_defaults import default_claim_template, default_pod_spec, image_tag_is_latest


@pytest.mark.parametrize(("image", "latest"), [
    ("nginx", True), ("nginx:latest", True), ("nginx:1.25", False),
    ("registry:5000/nginx", True), ("registry:5000/nginx:1.2", False),
    ("nginx@sha256:abc", False), ("nginx:latest@sha256:abc", True),
    ("nginx:1@sha256:abc", False),
])
def test_which_images_read_as_latest(image: str, latest: bool) -> None:
    assert image_tag_is_latest(image) is latest


def test_an_empty_spec_gets_the_pod_level_defaults() -> None:
    spec: dict[str, Any] = {}
    default_pod_spec(spec)
    assert spec == {"dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
                    "securityContext": {}, "terminationGracePeriodSeconds": 30,
                    "schedulerName": "default-scheduler"}


def test_values_given_are_kept_including_zero() -> None:
    spec: dict[str, Any] = {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                            "securityContext": {"runAsUser": 1}}
    default_pod_spec(spec)
    assert spec["restartPolicy"] == "Never"
    assert spec["terminationGracePeriodSeconds"] == 0
    assert spec["securityContext"] == {"runAsUser": 1}


def test_container_probe_port_and_env_defaults() -> None:
    spec: dict[str, Any] = {"containers": [{
        "name": "main", "image": "nginx:1.25",
        "ports": [{"containerPort": 80}],
        "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "readinessProbe": {"httpGet": {"port": 80}},
        "lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/stop"}}},
    }]}
    default_pod_spec(spec)
    (container,) = spec["containers"]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert container["terminationMessagePolicy"] == "File"
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert container["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1"
    assert container["readinessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
        "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
    assert container["lifecycle"]["preStop"]["httpGet"] == {"port": 80, "path": "/stop",
                                                            "scheme": "HTTP"}


def test_always_pull_applies_to_regular_containers_only() -> None:
    spec: dict[str, Any] = {"containers": [{"name": "a", "image": "nginx:1"}],
                            "initContainers": [{"name": "b", "image": "nginx:1"}]}
    default_pod_spec(spec, always_pull=True)
    assert spec["containers"][0]["imagePullPolicy"] == "Always"
    assert spec["initContainers"][0]["imagePullPolicy"] == "IfNotPresent"


def test_volume_defaults() -> None:
    spec: dict[str, Any] = {"volumes": [
        {"name": "scratch"},
        {"name": "conf", "configMap": {"name": "c"}},
        {"name": "host", "hostPath": {"path": "/x"}},
        {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
    ]}
    default_pod_spec(spec)
    scratch, conf, host, token = spec["volumes"]
    assert scratch == {"name": "scratch", "emptyDir": {}}
    assert conf["configMap"]["defaultMode"] == 420
    assert host["hostPath"]["type"] == ""
    assert token["projected"]["defaultMode"] == 420
    assert token["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"] == 3600


def test_wrong_types_are_left_alone() -> None:
    spec: dict[str, Any] = {"containers": "x", "volumes": [3, None], "initContainers": [[]]}
    default_pod_spec(spec)
    assert spec["containers"] == "x"
    assert spec["volumes"] == [3, None]


def test_claim_template_status_phase() -> None:
    claim: dict[str, Any] = {"metadata": {"name": "data"}}
    default_claim_template(claim)
    assert claim["status"] == {"phase": "Pending"}
