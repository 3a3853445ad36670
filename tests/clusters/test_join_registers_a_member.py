"""``spreadbus join NAME`` creates the member's Cluster in the host (Pull, no status: the
control plane keeps that), says so again without change when it is there, and refuses a name
that cannot be a cluster's, naming the field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kubesim import KubeSimThread
from spreadbus.cli import main

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = str(Path(sys.executable).parent / "kubectl")
CRD = ROOT / "deploy" / "crds" / "cluster.karmada.io_clusters.yaml"


def kubectl(kubeconfig: Path, *args: str) -> str:
    return subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args], capture_output=True,
                          text=True, timeout=60, check=True).stdout


def test_join_creates_the_cluster_once(kubesim: KubeSimThread, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    kubeconfig = kubesim.write_kubeconfig(tmp_path / "kubeconfig")
    kubectl(kubeconfig, "apply", "-f", str(CRD))
    assert main(["join", "member2", "--kubeconfig", str(kubeconfig)]) == 0
    assert capsys.readouterr().out == "cluster.cluster.karmada.io/member2 created\n"
    assert main(["join", "member2", "--kubeconfig", str(kubeconfig)]) == 0
    assert capsys.readouterr().out == "cluster.cluster.karmada.io/member2 unchanged\n"
    listed = json.loads(kubectl(kubeconfig, "get", "clusters.cluster.karmada.io", "-o", "json"))
    assert [(c["metadata"]["name"], c["spec"]["syncMode"], c.get("status") or {})
            for c in listed["items"]] == [("member2", "Pull", {})]


def test_join_refuses_a_name_that_is_no_clusters(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["join", "Member_2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spreadbus join: name: Invalid value: 'Member_2'")
