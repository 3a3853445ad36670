"""The installation renders with kubectl's own kustomize and keeps its safety properties."""

from __future__ import annotations

from typing import Any

from spreadbus.runtime.bus_permissions import DEFAULT_CLUSTERS

SERVICES = ("watcher", "planner", "actuator", "webhook")


def find(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [
        d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]


def test_every_service_has_a_deployment_with_its_own_service_account(
    rendered: list[dict[str, Any]],
) -> None:
    accounts = {d["metadata"]["name"] for d in find(rendered, "ServiceAccount")}
    for name in SERVICES:
        (deployment,) = find(rendered, "Deployment", f"spreadbus-{name}")
        pod = deployment["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == f"spreadbus-{name}"
        assert pod["serviceAccountName"] in accounts
        assert pod["containers"][0]["args"][0] == name
        container = pod["containers"][0]
        probes = {container[p]["httpGet"]["path"] for p in ("readinessProbe", "livenessProbe")}
        assert probes == {"/readyz", "/healthz"}


def rules_of(docs: list[dict[str, Any]], account: str) -> list[dict[str, Any]]:
    roles: list[dict[str, Any]] = []
    for binding in find(docs, "ClusterRoleBinding") + find(docs, "RoleBinding"):
        if any(s["name"] == account for s in binding["subjects"]):
            roles += find(docs, binding["roleRef"]["kind"], binding["roleRef"]["name"])
    return [rule for role in roles for rule in role["rules"]]


WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection", "*"}


def test_planner_and_webhook_have_no_kubernetes_access(rendered: list[dict[str, Any]]) -> None:
    for name in ("planner", "webhook"):
        assert rules_of(rendered, f"spreadbus-{name}") == []
        pod = find(rendered, "Deployment", f"spreadbus-{name}")[0]["spec"]["template"]["spec"]
        assert pod["automountServiceAccountToken"] is False


def test_pod_mutation_fails_open_quickly_and_skips_the_control_plane(
    rendered: list[dict[str, Any]],
) -> None:
    (config,) = find(rendered, "MutatingWebhookConfiguration")
    (hook,) = [h for h in config["webhooks"] if h["name"] == "mpod.spreadbus.io"]
    assert hook["failurePolicy"] == "Ignore"
    assert hook["timeoutSeconds"] <= 5
    assert hook["sideEffects"] == "NoneOnDryRun"
    assert hook["admissionReviewVersions"] == ["v1"]
    assert hook["rules"] == [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CREATE"],
            "resources": ["pods"],
            "scope": "Namespaced",
        }
    ]
    (namespace,) = find(rendered, "Namespace", "spreadbus")
    excluded = {e["key"]: e for e in hook["namespaceSelector"]["matchExpressions"]}[
        "spreadbus.io/control-plane"
    ]
    assert excluded["operator"] == "DoesNotExist"
    assert "spreadbus.io/control-plane" in namespace["metadata"]["labels"]


def test_uniteddeployments_are_defaulted_and_validated_failing_closed(
    rendered: list[dict[str, Any]],
) -> None:
    hooks = {
        hook["clientConfig"]["service"]["path"]: hook
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        for hook in find(rendered, kind)[0]["webhooks"]
    }
    mutate, validate = hooks["/mutate-uniteddeployment"], hooks["/validate-uniteddeployment"]
    assert (mutate["failurePolicy"], validate["failurePolicy"]) == ("Fail", "Fail")
    for hook, operations in ((mutate, ["CREATE", "UPDATE"]),
                             (validate, ["CREATE", "UPDATE", "DELETE"])):
        (rule,) = hook["rules"]
        assert rule["resources"] == ["uniteddeployments"]  # neither /scale nor /status
        assert rule["operations"] == operations
        assert rule["apiGroups"] == ["apps.kruise.io"]


def test_validation_covers_pod_removal_and_update_workloadspreads_uds_and_budgets(
    rendered: list[dict[str, Any]],
) -> None:
    (config,) = find(rendered, "ValidatingWebhookConfiguration")
    covered = {
        (group, resource, op)
        for hook in config["webhooks"]
        for rule in hook["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for op in rule["operations"]
    }
    assert covered == {
        ("", "pods", "DELETE"),
        ("", "pods", "UPDATE"),
        ("", "pods/eviction", "CREATE"),
        ("apps.kruise.io", "workloadspreads", "CREATE"),
        ("apps.kruise.io", "workloadspreads", "UPDATE"),
        ("apps.kruise.io", "uniteddeployments", "CREATE"),
        ("apps.kruise.io", "uniteddeployments", "UPDATE"),
        ("apps.kruise.io", "uniteddeployments", "DELETE"),
        ("apps.karmada.io", "workloadrebalancers", "CREATE"),
        ("apps.karmada.io", "workloadrebalancers", "UPDATE"),
        ("policy.kruise.io", "podunavailablebudgets", "CREATE"),
        ("policy.kruise.io", "podunavailablebudgets", "UPDATE"),
    }
    paths = {hook["clientConfig"]["service"]["path"]: hook["failurePolicy"]
             for hook in config["webhooks"]}
    assert paths == {"/validate-pod": "Ignore", "/validate-workloadspread": "Fail",
                     "/validate-uniteddeployment": "Fail",
                     "/validate-workloadrebalancer": "Fail",
                     "/validate-podunavailablebudget": "Fail"}


def test_nats_runs_as_a_three_node_jetstream_cluster(rendered: list[dict[str, Any]]) -> None:
    (sts,) = find(rendered, "StatefulSet", "spreadbus-nats")
    assert sts["spec"]["replicas"] == 3
    headless = find(rendered, "Service", sts["spec"]["serviceName"])[0]
    assert headless["spec"]["clusterIP"] == "None"
    conf = find(rendered, "ConfigMap", "spreadbus-nats")[0]["data"]["nats.conf"]
    assert "jetstream" in conf
    routes = [line for line in conf.splitlines() if line.strip().startswith("nats://")]
    assert len(routes) == 3


def test_workloadspread_crd_serves_both_versions_with_their_field_names(
    rendered: list[dict[str, Any]],
) -> None:
    (crd,) = find(rendered, "CustomResourceDefinition", "workloadspreads.apps.kruise.io")
    assert crd["spec"]["names"]["shortNames"] == ["ws"]
    versions = {v["name"]: v for v in crd["spec"]["versions"]}
    assert {n: (v["served"], v["storage"]) for n, v in versions.items()} == {
        "v1alpha1": (True, False),
        "v1beta1": (True, True),
    }
    for name, required, preferred in (
        ("v1alpha1", "requiredNodeSelectorTerm", "preferredNodeSelectorTerms"),
        ("v1beta1", "requiredNodeSelector", "preferredNodeSelector"),
    ):
        schema = versions[name]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        subset = schema["subsets"]["items"]["properties"]
        assert {required, preferred} <= subset.keys()
        assert subset["maxReplicas"]["x-kubernetes-int-or-string"] is True
        assert subset["patch"]["x-kubernetes-preserve-unknown-fields"] is True
        assert schema["scheduleStrategy"]["properties"]["type"]["enum"] == ["Adaptive", "Fixed", ""]
        assert versions[name]["subresources"] == {"status": {}}


def test_uniteddeployment_scales_and_workloadrebalancer_is_cluster_scoped(
    rendered: list[dict[str, Any]],
) -> None:
    (ud,) = find(rendered, "CustomResourceDefinition", "uniteddeployments.apps.kruise.io")
    assert ud["spec"]["names"]["shortNames"] == ["ud"]
    assert ud["spec"]["versions"][0]["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.labelSelector",
    }
    (wr,) = find(rendered, "CustomResourceDefinition", "workloadrebalancers.apps.karmada.io")
    assert wr["spec"]["scope"] == "Cluster"
    assert wr["spec"]["versions"][0]["subresources"] == {"status": {}}


def test_workloadspread_versions_convert_through_the_webhook(
    rendered: list[dict[str, Any]],
) -> None:
    (crd,) = find(rendered, "CustomResourceDefinition", "workloadspreads.apps.kruise.io")
    conversion = crd["spec"]["conversion"]
    assert conversion["strategy"] == "Webhook"
    assert conversion["webhook"]["conversionReviewVersions"] == ["v1"]
    service = conversion["webhook"]["clientConfig"]["service"]
    assert (service["name"], service["namespace"], service["path"]) == (
        "spreadbus-webhook",
        "spreadbus",
        "/convert",
    )


def test_the_services_replicate_what_they_create_on_every_nats_server(
    rendered: list[dict[str, Any]],
) -> None:
    (config,) = find(rendered, "ConfigMap", "spreadbus-config")
    (nats,) = find(rendered, "StatefulSet", "spreadbus-nats")
    assert int(config["data"]["SPREADBUS_NATS_REPLICAS"]) == nats["spec"]["replicas"]
    for name in SERVICES:
        (deployment,) = find(rendered, "Deployment", f"spreadbus-{name}")
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        sources = {s["configMapRef"]["name"] for s in container.get("envFrom", [])}
        assert "spreadbus-config" in sources, name


def test_the_local_stack_and_the_deployment_give_nats_the_same_max_payload(
    rendered: list[dict[str, Any]],
) -> None:
    from spreadbus.cli.local_stack import NATS_MAX_PAYLOAD

    [config] = [d for d in rendered if d["kind"] == "ConfigMap"
                and d["metadata"]["name"] == "spreadbus-nats"]
    assert f"max_payload: {NATS_MAX_PAYLOAD}\n" in config["data"]["nats.conf"]


def test_every_replicated_workload_keeps_a_replica_through_voluntary_disruptions(
    rendered: list[dict[str, Any]],
) -> None:
    budgets = {d["metadata"]["name"]: d["spec"] for d in rendered
               if d["kind"] == "PodDisruptionBudget"}
    for workload in rendered:
        if workload["kind"] not in ("Deployment", "StatefulSet"):
            continue
        if workload["spec"].get("replicas", 1) < 2:
            continue
        name = workload["metadata"]["name"]
        labels = workload["spec"]["template"]["metadata"]["labels"]
        assert name in budgets, f"{name} has no PodDisruptionBudget"
        assert budgets[name]["selector"]["matchLabels"].items() <= labels.items()
        if workload["kind"] == "Deployment":
            affinity = workload["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
            [term] = affinity["preferredDuringSchedulingIgnoredDuringExecution"]
            assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"


def test_the_nats_stop_hook_signals_the_pid_file_the_server_writes(
    rendered: list[dict[str, Any]],
) -> None:
    [config] = [d for d in rendered if d["kind"] == "ConfigMap"
                and d["metadata"]["name"] == "spreadbus-nats"]
    [nats] = find(rendered, "StatefulSet", "spreadbus-nats")
    [container] = nats["spec"]["template"]["spec"]["containers"]
    command = container["lifecycle"]["preStop"]["exec"]["command"]
    pid_file = command[-1].split("=", 1)[1]
    assert f"pid_file: {pid_file}\n" in config["data"]["nats.conf"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    directory = pid_file.rsplit("/", 1)[0]
    volumes = {v["name"]: v for v in nats["spec"]["template"]["spec"]["volumes"]}
    assert "emptyDir" in volumes[mounts[directory]], "a writable directory for the pid file"


def test_every_service_connects_to_the_bus_as_its_own_user_over_tls(
    rendered: list[dict[str, Any]],
) -> None:
    (config,) = find(rendered, "ConfigMap", "spreadbus-config")
    settings = config["data"]
    assert all(url.startswith("tls://") for url in settings["SPREADBUS_NATS_URL"].split(","))
    for name in SERVICES:
        (deployment,) = find(rendered, "Deployment", f"spreadbus-{name}")
        pod = deployment["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        mounts = {m["mountPath"]: m["name"] for m in pod["containers"][0]["volumeMounts"]}
        seed_dir = settings["SPREADBUS_NATS_NKEY_SEED"].rsplit("/", 1)[0]
        assert volumes[mounts[seed_dir]]["secret"]["secretName"] == f"spreadbus-bus-{name}"
        ca_dir = settings["SPREADBUS_NATS_TLS_CA"].rsplit("/", 1)[0]
        ca = volumes[mounts[ca_dir]]["secret"]
        assert ca["secretName"] == "spreadbus-nats-tls"
        assert ca["items"] == [{"key": "ca.crt", "path": "ca.crt"}], "the CA only, not the key"


def test_the_nats_servers_require_tls_and_the_generated_users(
    rendered: list[dict[str, Any]],
) -> None:
    (config,) = find(rendered, "ConfigMap", "spreadbus-nats")
    text = config["data"]["nats.conf"]
    assert "include ./auth/users.conf" in text
    assert text.count("tls {") == 3, "clients, routes and leaf nodes"
    (nats,) = find(rendered, "StatefulSet", "spreadbus-nats")
    pod = nats["spec"]["template"]["spec"]
    secrets = {v["secret"]["secretName"]: v["name"] for v in pod["volumes"] if "secret" in v}
    mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    assert mounts[secrets["spreadbus-nats-users"]] == "/etc/nats/auth"
    assert mounts[secrets["spreadbus-nats-tls"]] == "/etc/nats/tls"


def test_cert_manager_issues_every_certificate_the_pods_mount(
    rendered: list[dict[str, Any]],
) -> None:
    issued = {c["spec"]["secretName"]: c for c in find(rendered, "Certificate")}
    assert {"spreadbus-webhook-tls", "spreadbus-nats-tls"} <= set(issued)
    assert "spreadbus-webhook.spreadbus.svc" in issued["spreadbus-webhook-tls"]["spec"]["dnsNames"]
    nats_names = issued["spreadbus-nats-tls"]["spec"]["dnsNames"]
    assert "*.spreadbus-nats-headless.spreadbus.svc" in nats_names
    (webhook_cert,) = find(rendered, "Certificate", "spreadbus-webhook")
    for config in find(rendered, "MutatingWebhookConfiguration") + find(
            rendered, "ValidatingWebhookConfiguration"):
        injected = config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
        assert injected == f"spreadbus/{webhook_cert['metadata']['name']}"


def test_only_spreadbus_pods_and_reader_namespaces_reach_the_bus(
    rendered: list[dict[str, Any]],
) -> None:
    (policy,) = find(rendered, "NetworkPolicy", "spreadbus-nats")
    assert policy["spec"]["podSelector"] == {
        "matchLabels": {"app.kubernetes.io/name": "spreadbus-nats"}}
    (client_rule,) = [r for r in policy["spec"]["ingress"] if r["ports"] == [{"port": 4222}]]
    assert client_rule["from"] == [
        {"podSelector": {"matchLabels": {"app.kubernetes.io/part-of": "spreadbus"}}},
        {"namespaceSelector": {"matchLabels": {"spreadbus.io/bus-reader": "true"}}},
    ]


def test_the_audit_follower_keeps_its_database_on_a_volume_and_has_no_api_access(
    rendered: list[dict[str, Any]],
) -> None:
    (audit,) = find(rendered, "StatefulSet", "spreadbus-audit")
    pod = audit["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert "serviceAccountName" not in pod
    container = pod["containers"][0]
    assert container["args"][:2] == ["audit", "follow"]
    db = next(a for a in container["args"] if a.startswith("--db="))
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert db.removeprefix("--db=").startswith(mounts["data"] + "/")
    assert [t["metadata"]["name"] for t in audit["spec"]["volumeClaimTemplates"]] == ["data"]
    secrets = {v["name"]: v.get("secret", {}).get("secretName") for v in pod["volumes"]}
    assert secrets["bus"] == "spreadbus-bus-audit"
    assert not rules_of(rendered, "spreadbus-audit")


def test_a_job_sets_up_the_bus_as_the_setup_user_with_the_services_settings(
    rendered: list[dict[str, Any]],
) -> None:
    (config,) = find(rendered, "ConfigMap", "spreadbus-config")
    settings = config["data"]
    (job,) = find(rendered, "Job", "spreadbus-bus-setup")
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"] == ["bus-setup"]
    assert container["envFrom"] == [{"configMapRef": {"name": "spreadbus-config"}}]
    assert pod["automountServiceAccountToken"] is False
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    seed_dir = settings["SPREADBUS_NATS_NKEY_SEED"].rsplit("/", 1)[0]
    assert volumes[mounts[seed_dir]]["secret"]["secretName"] == "spreadbus-bus-setup"
    ca_dir = settings["SPREADBUS_NATS_TLS_CA"].rsplit("/", 1)[0]
    assert volumes[mounts[ca_dir]]["secret"]["items"] == [{"key": "ca.crt", "path": "ca.crt"}]
    # The network policy lets spreadbus's own pods reach NATS; the Job's is one of them.
    assert job["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/part-of"] == \
        "spreadbus"
    # No other workload mounts the setup user's seed.
    for kind in ("Deployment", "StatefulSet"):
        for workload in find(rendered, kind):
            secrets = [v.get("secret", {}).get("secretName")
                       for v in workload["spec"]["template"]["spec"].get("volumes", [])]
            assert "spreadbus-bus-setup" not in secrets, workload["metadata"]["name"]


def test_the_actuators_plan_consumer_is_protected_for_the_cluster_deploy_names(
    rendered: list[dict[str, Any]],
) -> None:
    (config,) = find(rendered, "ConfigMap", "spreadbus-config")
    # `spreadbus bus-users` protects these clusters' consumers unless told others (--cluster).
    assert (config["data"]["SPREADBUS_CLUSTER"],) == DEFAULT_CLUSTERS
