"""The optional monitoring component: it scrapes every service deploy/ renders, and its alerts
and dashboard query only series the code declares (docs/metrics.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from typing import Any

import pytest
import yaml

from spreadbus.metric_reference import declarations

from .conftest import KUBECTL, ROOT

COMPONENT = ROOT / "deploy" / "components" / "monitoring"
PROMETHEUS_OWN = frozenset({"up"})
"""Series Prometheus writes itself for every target."""
KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right", "offset",
                      "bool", "and", "or", "unless", "le", "inf", "nan"})


@pytest.fixture(scope="module")
def monitored(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """deploy/ with the component, through an overlay as a user writes one."""
    overlay = tmp_path_factory.mktemp("overlay")
    base = os.path.relpath(ROOT / "deploy", overlay)
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [base], "components": [f"{base}/components/monitoring"],
    }))
    out = subprocess.run([str(KUBECTL), "kustomize", str(overlay)], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def metric_names(expr: str) -> set[str]:
    """The series a PromQL expression selects: every bare identifier that is not a function,
    a keyword, a label (in braces or a grouping list) or a duration."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"(?<![\w.$])[A-Za-z_:][\w:]*", text):
        is_function = text[match.end():].lstrip().startswith("(")
        if not is_function and match.group().lower() not in KEYWORDS:
            names.add(match.group())
    return names


def known_series() -> set[str]:
    return {s for m in declarations() for s in m.samples} | PROMETHEUS_OWN


def test_metric_names_are_read_out_of_expressions() -> None:
    assert metric_names(
        'sum by (le, path) (rate(spreadbus_a_bucket{path=~"x|y",le!="1"}[5m])) / on(job) '
        "ignoring(pod) group_left(rule) spreadbus_b offset 5m > bool 1e3 and up"
    ) == {"spreadbus_a_bucket", "spreadbus_b", "up"}
    assert metric_names("histogram_quantile(0.99, x_bucket[$__rate_interval])") == {"x_bucket"}
    # a counter named without its _total is a series no one writes
    assert metric_names("rate(spreadbus_actuator_outcomes[5m])") - known_series() == {
        "spreadbus_actuator_outcomes"}


def alert_rules(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    (rule,) = [d for d in docs if d["kind"] == "PrometheusRule"]
    return [r for group in rule["spec"]["groups"] for r in group["rules"]]


def test_alerts_query_only_declared_series(monitored: list[dict[str, Any]]) -> None:
    rules = alert_rules(monitored)
    known = known_series()
    used: set[str] = set()
    for rule in rules:
        names = metric_names(rule["expr"])
        assert names, f"{rule['alert']} selects no series"
        assert names <= known, f"{rule['alert']} names unknown series {sorted(names - known)}"
        assert rule["labels"]["severity"] in {"warning", "critical"}, rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
        used |= names
    # the alerts the operators asked for, each on what the code measures
    for series in ("spreadbus_actuator_forbidden_plans_total", "spreadbus_actuator_outcomes_total",
                   "spreadbus_ready", "spreadbus_ready_condition", "spreadbus_follower_pending"):
        assert series in used


def test_the_dashboard_queries_only_declared_series() -> None:
    dashboard = json.loads((COMPONENT / "dashboard.json").read_text())
    known = known_series()
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 20
    for expr in exprs:
        names = metric_names(expr)
        assert names, f"{expr!r} selects no series"
        assert names <= known, f"{expr!r} names unknown series {sorted(names - known)}"
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))


def test_the_dashboard_ships_as_a_configmap_grafana_loads(monitored: list[dict[str, Any]]) -> None:
    (config,) = [d for d in monitored
                 if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "spreadbus-dashboard"]
    assert config["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(config["data"]["spreadbus.json"]) == json.loads(
        (COMPONENT / "dashboard.json").read_text())


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def test_the_service_monitor_scrapes_every_service_health_port(
    monitored: list[dict[str, Any]],
) -> None:
    (monitor,) = [d for d in monitored if d["kind"] == "ServiceMonitor"]
    spec = monitor["spec"]
    namespaces = set(spec["namespaceSelector"]["matchNames"])
    services = [d for d in monitored if d["kind"] == "Service"
                and d["metadata"]["namespace"] in namespaces
                and matches(spec["selector"]["matchLabels"], d["metadata"].get("labels", {}))]
    workloads = [d for d in monitored if d["kind"] in ("Deployment", "StatefulSet")]
    scraped: set[str] = set()
    for service in services:
        ports = {p["name"]: p for p in service["spec"]["ports"]}
        selected = [w for w in workloads
                    if matches(service["spec"]["selector"], w["spec"]["template"]["metadata"]
                               ["labels"])]
        assert len(selected) == 1, service["metadata"]["name"]
        (workload,) = selected
        container_ports = {p["name"]: p["containerPort"]
                           for c in workload["spec"]["template"]["spec"]["containers"]
                           for p in c.get("ports", [])}
        for endpoint in spec["endpoints"]:
            port = ports[endpoint["port"]]
            assert endpoint["path"] == "/metrics"
            # the port the service shell serves /metrics on, as the probes reach it
            assert container_ports[port["targetPort"]] == 8080
        assert service["metadata"]["labels"][spec["jobLabel"]]
        scraped.add(workload["metadata"]["name"])
    serving = {w["metadata"]["name"] for w in workloads
               if w["metadata"]["name"].startswith("spreadbus-")
               and w["metadata"]["name"] != "spreadbus-nats"}
    assert scraped == serving == {"spreadbus-watcher", "spreadbus-planner", "spreadbus-actuator",
                                  "spreadbus-webhook", "spreadbus-audit"}


def test_the_component_only_adds_to_the_installation(
    monitored: list[dict[str, Any]], rendered: list[dict[str, Any]],
) -> None:
    assert not [d for d in rendered
                if d["apiVersion"].startswith("monitoring.coreos.com/")]
    for doc in rendered:
        assert doc in monitored, f"{doc['kind']} {doc['metadata']['name']} changed"


def test_the_component_is_documented() -> None:
    readme = (ROOT / "deploy" / "README.md").read_text()
    assert "components/monitoring" in readme


@pytest.fixture(scope="module")
def monitored_shards(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """deploy/ with the monitoring and the planner-shards components."""
    overlay = tmp_path_factory.mktemp("overlay-shards")
    base = os.path.relpath(ROOT / "deploy", overlay)
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [base], "components": [f"{base}/components/monitoring",
                                            f"{base}/components/planner-shards"],
    }))
    out = subprocess.run([str(KUBECTL), "kustomize", str(overlay)], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


LEADER_COUNT = re.compile(r"^sum by \((\w+)\) \(spreadbus_planner_leader\) ([<>]) (\d+)$")


def planner_series(docs: list[dict[str, Any]], leaders: dict[str, int]) -> list[dict[str, Any]]:
    """One ``spreadbus_planner_leader`` series per planner pod the render runs, labelled as
    its ServiceMonitor labels it (a pod label in ``podTargetLabels`` becomes a target label, its
    name's other characters underscores, as the Prometheus Operator writes it; empty where the
    pod lacks it); ``leaders[deployment]`` of a Deployment's pods say 1."""
    (monitor,) = [d for d in docs if d["kind"] == "ServiceMonitor"]
    keys = monitor["spec"].get("podTargetLabels", [])
    series = []
    for workload in docs:
        name = workload["metadata"]["name"]
        if workload["kind"] != "Deployment" or not name.startswith("spreadbus-planner"):
            continue
        labels = workload["spec"]["template"]["metadata"]["labels"]
        target = {re.sub(r"[^A-Za-z0-9_]", "_", key): labels.get(key, "") for key in keys}
        for pod in range(workload["spec"]["replicas"]):
            series.append({**target, "deployment": name,
                           "value": 1 if pod < leaders.get(name, 0) else 0})
    return series


def firing(rule: dict[str, Any], series: list[dict[str, Any]]) -> set[str]:
    """The groups (the grouping label's values) for which a leader-count rule fires."""
    match = LEADER_COUNT.match(" ".join(rule["expr"].split()))
    assert match, f"{rule['alert']} does not count leaders by group: {rule['expr']}"
    label, op, threshold = match.group(1), match.group(2), int(match.group(3))
    assert all(label in s for s in series), f"{rule['alert']} groups by {label}, not a label " \
                                            "the ServiceMonitor gives the planners' series"
    sums: dict[str, int] = {}
    for s in series:
        sums[s[label]] = sums.get(s[label], 0) + s["value"]
    return {g for g, n in sums.items() if (n > threshold if op == ">" else n < threshold)}


@pytest.mark.parametrize("render", ["monitored", "monitored_shards"])
def test_the_planner_alerts_want_one_leader_per_planner_group(
    render: str, request: pytest.FixtureRequest,
) -> None:
    docs: list[dict[str, Any]] = request.getfixturevalue(render)
    rules = {r["alert"]: r for r in alert_rules(docs)}
    none, many = rules["SpreadbusNoPlannerLeader"], rules["SpreadbusPlannerLeaders"]
    groups = sorted(d["metadata"]["name"] for d in docs if d["kind"] == "Deployment"
                    and d["metadata"]["name"].startswith("spreadbus-planner"))
    assert len(groups) == (3 if render == "monitored_shards" else 1)
    for group in groups:
        assert sum(1 for d in docs if d["kind"] == "Deployment"
                   and d["metadata"]["name"] == group
                   and d["spec"]["replicas"] >= 2) == 1, "a leader and a standby per group"
    one_each = planner_series(docs, {g: 1 for g in groups})
    assert firing(none, one_each) == firing(many, one_each) == set()
    first, last = groups[0], groups[-1]
    doubled = planner_series(docs, {**{g: 1 for g in groups}, first: 2})
    assert len(firing(many, doubled)) == 1
    assert firing(none, doubled) == set()
    if len(groups) > 1:
        leaderless = planner_series(docs, {g: 1 for g in groups if g != last})
        assert len(firing(none, leaderless)) == 1
        assert firing(many, leaderless) == set()
        assert firing(many, doubled) != firing(none, leaderless), "each alert names its shard"
