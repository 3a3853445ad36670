"""The NATS cluster deploy/ renders has what a production cluster needs (docs/events.md, "A
production cluster"): an odd number of servers, each routed to all, the streams and buckets at
as many replicas, placement tags JetStream keeps replicas apart by, one ``max_payload``, and the
leaf-node port member clusters connect to, reachable through a Service and the network policy;
and the real nats-server accepts the configuration."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from spreadbus.cli.local_stack import NATS_MAX_PAYLOAD
from spreadbus.engine.feature_set import bus_accesses
from spreadbus.features.registry import BUILTIN
from spreadbus.runtime.bus_permissions import server_users
from spreadbus.runtime.bus_users import ensure_users
from spreadbus.runtime.nats_server import nats_server_binary
from tests.deploy.conftest import ROOT
from tests.deploy.test_kustomize_render import find
from tlsserving import issue_server_cert, make_ca

LEAF_PORT = 7422


def nats_conf(rendered: list[dict[str, Any]]) -> str:
    (config,) = find(rendered, "ConfigMap", "spreadbus-nats")
    conf: str = config["data"]["nats.conf"]
    return conf


def test_an_odd_number_of_servers_each_routed_to_all_holding_every_replica(
    rendered: list[dict[str, Any]],
) -> None:
    (sts,) = find(rendered, "StatefulSet", "spreadbus-nats")
    servers = sts["spec"]["replicas"]
    assert servers >= 3, "a cluster that survives a lost server"
    assert servers % 2 == 1, "leaders are elected by a majority"
    routes = re.findall(r"nats://spreadbus-nats-(\d+)\.", nats_conf(rendered))
    assert sorted(int(r) for r in routes) == list(range(servers))
    (config,) = find(rendered, "ConfigMap", "spreadbus-config")
    assert int(config["data"]["SPREADBUS_NATS_REPLICAS"]) == servers
    urls = config["data"]["SPREADBUS_NATS_URL"].split(",")
    assert len(urls) == servers, "every service is given every server"


def test_replicas_are_placed_apart_by_tag(rendered: list[dict[str, Any]]) -> None:
    conf = nats_conf(rendered)
    (unique,) = re.findall(r'unique_tag: "([^"]+)"', conf)
    (tags,) = re.findall(r"server_tags: \[(.*)\]", conf)
    assert any(tag.strip().strip('"').startswith(unique) for tag in tags.split(","))


def test_every_server_takes_the_same_max_payload(rendered: list[dict[str, Any]]) -> None:
    assert re.findall(r"max_payload: (\S+)", nats_conf(rendered)) == [NATS_MAX_PAYLOAD]


def test_member_clusters_leaf_nodes_reach_the_servers(rendered: list[dict[str, Any]]) -> None:
    conf = nats_conf(rendered)
    leaf = conf[conf.index("leafnodes {"):]
    assert f"listen: 0.0.0.0:{LEAF_PORT}" in leaf
    assert "tls {" in leaf, "leaf connections speak TLS"
    (sts,) = find(rendered, "StatefulSet", "spreadbus-nats")
    ports = {p["name"]: p["containerPort"]
             for p in sts["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert ports["leafnodes"] == LEAF_PORT
    (service,) = find(rendered, "Service", "spreadbus-nats-leafnodes")
    assert [p["port"] for p in service["spec"]["ports"]] == [LEAF_PORT]
    assert service["spec"]["selector"] == sts["spec"]["selector"]["matchLabels"]
    (policy,) = find(rendered, "NetworkPolicy", "spreadbus-nats")
    leaf_rules = [rule for rule in policy["spec"]["ingress"]
                  if [p["port"] for p in rule["ports"]] == [LEAF_PORT]]
    assert leaf_rules, "the network policy admits leaf nodes"


def test_the_nats_server_accepts_the_configuration(
    rendered: list[dict[str, Any]], tmp_path: Path
) -> None:
    """``nats-server -t`` on the rendered file, its mounted paths moved under ``tmp_path``."""
    tls = tmp_path / "tls"
    ca = make_ca("test CA")
    ca.write(tls, "ca")
    pair = issue_server_cert(ca, ["localhost"])
    pair.write(tls, "tls")
    auth = tmp_path / "auth"
    auth.mkdir()
    (auth / "users.conf").write_text(server_users(ensure_users(tmp_path / "seeds"),
                                                  bus_accesses(BUILTIN)))
    conf = (nats_conf(rendered).replace("/etc/nats/tls/", f"{tls}/")
            .replace("/data/jetstream", str(tmp_path / "store"))
            .replace("/var/run/nats/", f"{tmp_path}/"))
    path = tmp_path / "nats.conf"
    path.write_text(conf)
    done = subprocess.run([nats_server_binary(), "-c", str(path), "-t"], cwd=tmp_path,
                          env={"POD_NAME": "spreadbus-nats-0"}, capture_output=True,
                          text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr or done.stdout


def test_the_settings_are_documented() -> None:
    events = (ROOT / "docs" / "events.md").read_text()
    section = events[events.index("## A production cluster"):]
    section = section[:section.index("\n## ", 1)] if "\n## " in section[1:] else section
    for setting in ("SPREADBUS_NATS_REPLICAS", "server_tags", "unique_tag", "max_payload",
                    str(LEAF_PORT), "--nats-servers 3"):
        assert setting in section, setting
