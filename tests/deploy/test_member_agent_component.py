"""The member-agent component: in a member cluster's overlay (naming the member), deploy/ becomes
the member's agent, its watcher, actuator and webhook each ``--cluster`` the member and connected
as the member's own bus users to a single leaf nats-server in the member's JetStream domain,
which dials the hub with the member's leaf credential; no planner, no audit log. The Secrets it
mounts are exactly those ``spreadbus bus-users --member`` prints, the services' settings load as
the member's, and a real nats-server runs the rendered leaf configuration and links to a hub."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.actuator.settings import ActuatorSettings
from services.watcher.settings import WatcherSettings
from services.webhook.service import WebhookSettings
from spreadbus.cli import main
from spreadbus.runtime import member_bus
from spreadbus.runtime.nats_server import NatsServer, ServerConfig
from spreadbus.runtime.settings import ServiceSettings, add_settings_arguments, load_settings
from tests.deploy.test_readme_install_steps import pod_specs
from tests.fixtures.member_bus import ADMIN, leaf_connections
from tests.fixtures.polling import wait_until
from tlsserving import issue_server_cert, make_ca

from .conftest import KUBECTL, ROOT

MEMBER = "member1"
SERVICES: dict[str, type[ServiceSettings]] = {
    "watcher": WatcherSettings, "actuator": ActuatorSettings, "webhook": WebhookSettings}


@pytest.fixture(scope="module")
def member(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """deploy/ with the component and the member named, through an overlay as a user writes it."""
    overlay = tmp_path_factory.mktemp("member-overlay")
    base = os.path.relpath(ROOT / "deploy", overlay)
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [base], "components": [f"{base}/components/member-agent"],
        "patches": [{"target": {"kind": "ConfigMap", "name": "spreadbus-config"},
                     "patch": json.dumps([{"op": "replace", "path": "/data/SPREADBUS_CLUSTER",
                                           "value": MEMBER}])}],
    }))
    out = subprocess.run([str(KUBECTL), "kustomize", str(overlay)], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def one(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


def config(docs: list[dict[str, Any]]) -> dict[str, str]:
    data: dict[str, str] = one(docs, "ConfigMap", "spreadbus-config")["data"]
    return data


def container_environment(docs: list[dict[str, Any]], container: dict[str, Any]
                          ) -> dict[str, str]:
    """The container's variables as the kubelet sets them: the ConfigMap, then ``env`` with its
    ConfigMap references read and ``$(VAR)`` expanded from what came before."""
    environment = dict(config(docs))
    for entry in container.get("env", []):
        if "value" in entry:
            environment[entry["name"]] = re.sub(
                r"\$\((\w+)\)", lambda m: environment[m.group(1)], entry["value"])
        elif "configMapKeyRef" in entry.get("valueFrom", {}):
            environment[entry["name"]] = config(docs)[entry["valueFrom"]["configMapKeyRef"]["key"]]
    return environment


def test_the_member_runs_its_agent_only(member: list[dict[str, Any]]) -> None:
    names = {(d["kind"], d["metadata"]["name"]) for d in member
             if d["kind"] in ("Deployment", "StatefulSet", "Job")}
    assert names == {("Deployment", "spreadbus-watcher"), ("Deployment", "spreadbus-actuator"),
                     ("Deployment", "spreadbus-webhook"), ("StatefulSet", "spreadbus-nats"),
                     ("Job", "spreadbus-bus-setup")}
    assert not [d for d in member if "planner" in d["metadata"]["name"]
                or "audit" in d["metadata"]["name"]]


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_each_service_is_the_members_with_the_members_bus_user(
    member: list[dict[str, Any]], service: str,
) -> None:
    deployment = one(member, "Deployment", f"spreadbus-{service}")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    environment = container_environment(member, container)
    args = [re.sub(r"\$\((\w+)\)", lambda m: environment[m.group(1)], a)
            for a in container["args"][1:]]
    assert f"--cluster={MEMBER}" in args
    parser = argparse.ArgumentParser()
    add_settings_arguments(parser, SERVICES[service])
    settings = load_settings(SERVICES[service], parser.parse_args(args), env=environment)
    assert isinstance(settings, SERVICES[service]), settings
    assert settings.cluster == MEMBER
    assert settings.nats_user == f"{MEMBER}-{service}"
    assert list(settings.nats_url) == ["tls://spreadbus-nats-0.spreadbus-nats-headless:4222"]
    if isinstance(settings, WatcherSettings | ActuatorSettings):
        # The watcher registers the member there; the actuator reads there the binding that
        # governs each copy it writes: each with a credential of its own.
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        assert settings.host_kubeconfig
        assert Path(settings.host_kubeconfig).parent == Path(mounts["host"])
        volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
        assert volumes["host"]["secret"]["secretName"] == {
            "watcher": "spreadbus-host-kubeconfig",
            "actuator": "spreadbus-actuator-host-kubeconfig"}[service]
    if isinstance(settings, ActuatorSettings):  # the hub's cluster, as plans name it
        assert settings.host_cluster == "default" == yaml.safe_load(
            (ROOT / "deploy" / "config.yaml").read_text())["data"]["SPREADBUS_CLUSTER"]
    if isinstance(settings, WatcherSettings):  # the templates propagation copies whole
        assert "v1/configmaps" in settings.resources


def test_the_setup_job_sets_up_the_members_domain(member: list[dict[str, Any]]) -> None:
    job = one(member, "Job", "spreadbus-bus-setup")
    environment = container_environment(member, job["spec"]["template"]["spec"]["containers"][0])
    assert environment["SPREADBUS_MEMBER"] == MEMBER
    assert environment["SPREADBUS_NATS_REPLICAS"] == "1"


def test_bus_users_prints_exactly_the_secrets_the_member_mounts(
    member: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bus-users", "--out", str(tmp_path), "--member", MEMBER]) == 0
    out = capsys.readouterr().out
    printed = set(re.findall(r"create secret generic (\S+)", out.split(f"in cluster {MEMBER}")[1]))
    mounted = {v["secret"]["secretName"] for spec in pod_specs(member)
               for v in spec.get("volumes", []) if "secret" in v}
    mounted |= {e["valueFrom"]["secretKeyRef"]["name"] for spec in pod_specs(member)
                for c in spec["containers"] for e in c.get("env", [])
                if "secretKeyRef" in e.get("valueFrom", {})}
    issued = {d["spec"]["secretName"] for d in member if d["kind"] == "Certificate"}
    assert printed == mounted - issued
    assert f"--from-file=seed={tmp_path / (MEMBER + '-watcher.nk')}" in out


def test_the_rendered_leaf_server_links_to_a_hub_in_the_members_domain(
    member: list[dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    ca = make_ca("hub and member CA")
    ca_paths = ca.write(tmp_path / "tls", "ca")
    pair = issue_server_cert(ca, ["127.0.0.1", "localhost"]).write(tmp_path / "tls", "tls")
    assert main(["bus-users", "--out", str(tmp_path / "users"), "--member", MEMBER]) == 0
    password = member_bus.leaf_password_file(tmp_path / "users", MEMBER).read_text().strip()
    hub = member_bus.start_hub(tmp_path / "hub", tmp_path / "conf", {MEMBER: password},
                               users=[ADMIN], monitor=True,
                               base=ServerConfig(tls_cert=pair.cert, tls_key=pair.key))
    conf = (one(member, "ConfigMap", "spreadbus-nats")["data"]["nats.conf"]
            .replace("/etc/nats/tls/tls.crt", str(pair.cert))
            .replace("/etc/nats/tls/tls.key", str(pair.key))
            .replace("/etc/nats/tls/ca.crt", str(ca_paths.cert))
            .replace("/etc/nats/hub-ca/ca.crt", str(ca_paths.cert))
            .replace("./auth/users.conf", "./users/users.conf")  # beside member.conf
            .replace("  store_dir: /data/jetstream\n", "")  # the fixture's -sd instead
            .replace("/var/run/nats/", f"{tmp_path}/")
            .replace("http: 0.0.0.0:8222\n", ""))  # the fixture's own monitor port instead
    (tmp_path / "member.conf").write_text(conf)
    for name, value in (("POD_NAME", "spreadbus-nats-0"), ("SPREADBUS_CLUSTER", MEMBER),
                        ("SPREADBUS_HUB_LEAF_URL",
                         f"nats-leaf://{member_bus.leaf_user(MEMBER)}:{password}"
                         f"@127.0.0.1:{hub.leaf_port}")):
        monkeypatch.setenv(name, value)
    leaf = NatsServer(store_dir=tmp_path / "member", monitor=True,
                      extra_args=["-c", str(tmp_path / "member.conf")])
    try:
        leaf.start()
        wait_until(lambda: leaf_connections(hub.server) == 1 and leaf_connections(leaf) == 1,
                   what="the member's leaf link", timeout=30, interval=0.1)
        url = f"http://127.0.0.1:{leaf.monitor_port}/jsz"
        with urllib.request.urlopen(url, timeout=5) as response:
            assert json.loads(response.read())["config"]["domain"] == MEMBER
    finally:
        leaf.stop()
        hub.stop()
