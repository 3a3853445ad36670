"""The host-control-plane component: the hub's overlay gains an API server of its own with etcd
and a kube-controller-manager running exactly the namespace, garbage-collector and
service-account-token controllers, every certificate they mount issued by the host's own CA;
the hub's watcher and actuator act on that API server through a kubeconfig whose files are
mounted where it names them; and the host's RBAC grants them there what their ServiceAccounts
have in a cluster, members only the registration of their Cluster, and members' actuators only
the reads of the bindings that govern their copies; the hub's watcher watches ConfigMaps."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.actuator.settings import ActuatorSettings
from services.watcher.settings import WatcherSettings
from spreadbus.engine.feature_set import plan_grants
from spreadbus.features.registry import BUILTIN
from spreadbus.runtime.settings import ServiceSettings, load_settings

from .conftest import KUBECTL, ROOT

COMPONENT = ROOT / "deploy" / "components" / "host-control-plane"


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    overlay = tmp_path_factory.mktemp("host-overlay")
    base = os.path.relpath(ROOT / "deploy", overlay)
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [base], "components": [f"{base}/components/host-control-plane"],
    }))
    out = subprocess.run([str(KUBECTL), "kustomize", str(overlay)], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def one(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


def container(workload: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = workload["spec"]["template"]["spec"]["containers"][0]
    return found


def flags(workload: dict[str, Any]) -> dict[str, str]:
    return dict(a.removeprefix("--").split("=", 1) for a in container(workload)["command"][1:])


def mounted_files(workload: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Mount path -> (kind, name) of the Secret or ConfigMap mounted there."""
    volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"]["volumes"]}
    found = {}
    for mount in container(workload)["volumeMounts"]:
        volume = volumes.get(mount["name"], {})
        if "secret" in volume:
            found[mount["mountPath"]] = ("Secret", volume["secret"]["secretName"])
        elif "configMap" in volume:
            found[mount["mountPath"]] = ("ConfigMap", volume["configMap"]["name"])
    return found


def source_of(workload: dict[str, Any], path: str) -> tuple[str, str]:
    """What the file at ``path`` comes from, by the mount it lies under."""
    mounts = mounted_files(workload)
    (directory,) = [m for m in mounts if Path(path).parent == Path(m)]
    return mounts[directory]


def issued(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Secret name -> the Certificate that issues it."""
    return {d["spec"]["secretName"]: d for d in docs if d["kind"] == "Certificate"}


def test_the_controller_manager_runs_only_what_a_control_plane_needs(
    host: list[dict[str, Any]],
) -> None:
    manager = one(host, "Deployment", "spreadbus-host-controller-manager")
    given = flags(manager)
    assert given["controllers"].split(",") == ["namespace", "garbagecollector",
                                               "serviceaccount-token"]
    assert given["leader-elect"] == "true"
    assert source_of(manager, given["kubeconfig"]) == ("ConfigMap", "spreadbus-host-kubeconfig")
    assert source_of(manager, given["service-account-private-key-file"]) == (
        "Secret", "spreadbus-host-service-account-key")
    kubeconfig = yaml.safe_load(one(host, "ConfigMap", "spreadbus-host-kubeconfig")["data"][
        Path(given["kubeconfig"]).name])
    user = kubeconfig["users"][0]["user"]
    (_, secret) = source_of(manager, user["client-certificate"])
    assert issued(host)[secret]["spec"]["commonName"] == "system:kube-controller-manager"


def test_the_api_server_stores_in_the_hosts_etcd_over_tls(host: list[dict[str, Any]]) -> None:
    apiserver = one(host, "Deployment", "spreadbus-host-apiserver")
    given = flags(apiserver)
    etcd = one(host, "StatefulSet", "spreadbus-host-etcd")
    service = etcd["spec"]["serviceName"]
    assert given["etcd-servers"] == (
        f"https://{etcd['metadata']['name']}-0.{service}.spreadbus.svc:2379")
    assert one(host, "Service", service)["spec"]["clusterIP"] == "None"
    # The same key signs service-account tokens (controller manager) and verifies them.
    manager = flags(one(host, "Deployment", "spreadbus-host-controller-manager"))
    assert source_of(apiserver, given["service-account-signing-key-file"]) == source_of(
        one(host, "Deployment", "spreadbus-host-controller-manager"),
        manager["service-account-private-key-file"])
    assert given["anonymous-auth"] == "false"
    assert "RBAC" in given["authorization-mode"].split(",")


def test_every_certificate_of_the_control_plane_is_the_host_cas(
    host: list[dict[str, Any]],
) -> None:
    certificates = issued(host)
    issuers = {d["metadata"]["name"] for d in host if d["kind"] == "Issuer"}
    for name in ("spreadbus-host-apiserver", "spreadbus-host-etcd",
                 "spreadbus-host-controller-manager"):
        workload = next(d for d in host if d["metadata"]["name"] == name
                        and d["kind"] in ("Deployment", "StatefulSet"))
        for kind, secret in mounted_files(workload).values():
            if kind != "Secret":
                continue
            certificate = certificates[secret]
            assert certificate["spec"]["issuerRef"]["name"] == "spreadbus-host-ca", secret
    assert "spreadbus-host-ca" in issuers
    ca = certificates["spreadbus-host-ca"]
    assert ca["spec"]["isCA"]
    assert ca["spec"]["issuerRef"]["name"] in issuers


@pytest.mark.parametrize(("service", "settings_class"), [
    ("watcher", WatcherSettings), ("actuator", ActuatorSettings)])
def test_the_hubs_watcher_and_actuator_act_on_the_hosts_api_server(
    host: list[dict[str, Any]], service: str, settings_class: type[ServiceSettings],
) -> None:
    deployment = one(host, "Deployment", f"spreadbus-{service}")
    environment = {**one(host, "ConfigMap", "spreadbus-config")["data"],
                   **{e["name"]: e["value"] for e in container(deployment)["env"]}}
    settings = load_settings(settings_class, env=environment)
    assert isinstance(settings, settings_class), settings
    assert source_of(deployment, settings.kubeconfig) == ("ConfigMap",
                                                          "spreadbus-host-kubeconfig")
    kubeconfig = yaml.safe_load(one(host, "ConfigMap", "spreadbus-host-kubeconfig")["data"][
        Path(settings.kubeconfig).name])
    assert kubeconfig["clusters"][0]["cluster"]["server"] == (
        "https://spreadbus-host-apiserver.spreadbus.svc:443")
    (_, secret) = source_of(deployment, kubeconfig["users"][0]["user"]["client-certificate"])
    assert issued(host)[secret]["spec"]["commonName"] == f"spreadbus:host:{service}"
    assert deployment["spec"]["template"]["spec"]["automountServiceAccountToken"] is False
    if isinstance(settings, WatcherSettings):  # the templates the members get copies of
        assert "v1/configmaps" in settings.resources


def test_the_hosts_rbac_is_the_services_own_and_members_only_register() -> None:
    granted = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(
        (COMPONENT / "host-api" / "rbac.yaml").read_text()) if d}
    for service in ("watcher", "actuator"):
        cluster = [d for d in yaml.safe_load_all(
            (ROOT / "deploy" / "rbac" / f"{service}.yaml").read_text())
            if d and d["kind"] == "ClusterRole"]
        (role,) = cluster
        assert granted["ClusterRole", f"spreadbus-host-{service}"]["rules"] == role["rules"]
        binding = granted["ClusterRoleBinding", f"spreadbus-host-{service}"]
        assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                        "name": f"spreadbus:host:{service}"}]
    registration = granted["ClusterRole", "spreadbus-member-registration"]
    assert registration["rules"] == [{"apiGroups": ["cluster.karmada.io"],
                                      "resources": ["clusters"], "verbs": ["create"]}]
    # A member's actuator reads in the host the governors that live there, and nothing else.
    in_host = sorted({(g.governor.group, g.governor.resource) for g in plan_grants(BUILTIN)
                      if g.governor is not None and g.governor.in_host})
    assert granted["ClusterRole", "spreadbus-member-actuator"]["rules"] == [
        {"apiGroups": [group], "resources": [resource], "verbs": ["get"]}
        for group, resource in in_host]
    assert granted["ClusterRoleBinding", "spreadbus-member-actuator"]["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
         "name": "spreadbus:member-actuators"}]
