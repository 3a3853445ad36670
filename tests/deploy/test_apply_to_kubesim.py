"""The rendered installation is accepted by an API server, checked with a server-side dry run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kubernetes import client

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = Path(sys.executable).parent / "kubectl"
CERT_MANAGER = Path(__file__).parent / "data" / "cert-manager-crds.yaml"
"""The installation uses cert-manager's kinds, which a cluster with cert-manager has."""


def kubectl(
    kubeconfig: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KUBECTL), f"--kubeconfig={kubeconfig}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_installation_passes_a_server_side_dry_run_and_stores_nothing(
    kubeconfig_path: Path, kube_api_client: client.ApiClient
) -> None:
    # CRDs and the namespace first, for real: a dry run cannot create the kinds and the
    # namespace the rest of the output needs, on kubesim as on a real API server.
    for path in (ROOT / "deploy" / "crds", ROOT / "deploy" / "namespace.yaml", CERT_MANAGER):
        setup = kubectl(kubeconfig_path, "apply", "-f", str(path))
        assert setup.returncode == 0, setup.stderr
    rendered = kubectl(kubeconfig_path, "kustomize", str(ROOT / "deploy"))
    assert rendered.returncode == 0, rendered.stderr
    result = kubectl(kubeconfig_path, "apply", "--dry-run=server", "-f", "-", stdin=rendered.stdout)
    assert result.returncode == 0, result.stderr
    applied = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(applied) == rendered.stdout.count("\nkind: ") + rendered.stdout.startswith("kind: ")
    assert all("(server dry run)" in line for line in applied)
    apps = client.AppsV1Api(kube_api_client)
    assert apps.list_deployment_for_all_namespaces().items == []
    core = client.CoreV1Api(kube_api_client)
    items = core.list_namespaced_service_account("spreadbus").items
    accounts = {sa.metadata.name for sa in items if sa.metadata is not None}
    assert not {"spreadbus-webhook", "spreadbus-watcher"} & accounts
    admission = client.AdmissionregistrationV1Api(kube_api_client)
    assert admission.list_mutating_webhook_configuration().items == []
