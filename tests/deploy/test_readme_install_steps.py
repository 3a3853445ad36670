"""The README's cluster install works as written: its overlays render with kubectl's kustomize,
the objects and Secrets its commands name are the ones the installation has."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.cli import main
from tests.deploy.conftest import KUBECTL, ROOT

README = (ROOT / "README.md").read_text()
SECTION = README[README.index("## Install on a cluster"):README.index("## How it is built")]
FENCE = re.compile(r"^ *```(\w+) ?([^\n]*)\n(.*?)^ *```", re.M | re.S)
OUR_IMAGE = "ghcr.io/spreadbus/spreadbus"


def blocks(language: str) -> list[tuple[str, str]]:
    """(info, dedented body) of the section's fenced blocks in ``language``."""
    out = []
    for match in FENCE.finditer(SECTION):
        if match.group(1) == language:
            lines = match.group(3).splitlines()
            indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
            out.append((match.group(2).strip(), "\n".join(line[indent:] for line in lines) + "\n"))
    return out


def overlay(tmp_path: Path, *, managed: bool) -> Path:
    """The README's ``my-install/`` beside a link to ``deploy/``."""
    (tmp_path / "deploy").symlink_to(ROOT / "deploy")
    text = ""
    for info, body in blocks("yaml"):
        if info == "file=my-install/kustomization.yaml":
            text = body + text
        elif info == "append=my-install/kustomization.yaml" and managed:
            text += body
    assert text, "the README shows my-install/kustomization.yaml"
    (tmp_path / "my-install").mkdir()
    (tmp_path / "my-install" / "kustomization.yaml").write_text(text)
    return tmp_path / "my-install"


def render(directory: Path) -> list[dict[str, Any]]:
    out = subprocess.run([str(KUBECTL), "kustomize", str(directory)], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def pod_specs(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d["spec"]["template"]["spec"] for d in docs
            if d["kind"] in ("Deployment", "StatefulSet", "Job")]


def webhook_args(docs: list[dict[str, Any]]) -> list[str]:
    (webhook,) = [d for d in docs if d["kind"] == "Deployment"
                  and d["metadata"]["name"] == "spreadbus-webhook"]
    args: list[str] = webhook["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def test_the_overlay_runs_every_service_from_the_pushed_image(tmp_path: Path) -> None:
    docs = render(overlay(tmp_path, managed=False))
    images = {c["image"] for spec in pod_specs(docs) for c in spec["containers"]}
    assert "registry.example.com/spreadbus:0.1.0" in images
    assert not any(image.startswith(OUR_IMAGE) for image in images), images
    assert any(a.startswith("--client-ca=") for a in webhook_args(docs))


def test_the_managed_cluster_patch_drops_only_the_client_ca(
    tmp_path: Path, rendered: list[dict[str, Any]],
) -> None:
    docs = render(overlay(tmp_path, managed=True))
    before, after = webhook_args(rendered), webhook_args(docs)
    assert [a for a in before if not a.startswith("--client-ca=")] == after
    assert len(after) == len(before) - 1


def test_the_commands_name_what_the_installation_has(rendered: list[dict[str, Any]]) -> None:
    names = {(d["kind"], d["metadata"]["name"]) for d in rendered}
    for kind, name in re.findall(r"\b(statefulset|deployment)/([a-z0-9-]+)", SECTION):
        assert (kind.capitalize().replace("set", "Set"), name) in names, (kind, name)
    for secret in re.findall(r"secret (spreadbus-[a-z0-9-]+)", SECTION):
        mounted = {v["secret"]["secretName"] for spec in pod_specs(rendered)
                   for v in spec.get("volumes", []) if "secret" in v}
        issued = {d["spec"]["secretName"] for d in rendered if d["kind"] == "Certificate"}
        assert secret in mounted | issued, secret
    for path in re.findall(r"\b((?:examples|deploy)/[\w./-]+\.yaml)", SECTION):
        assert (ROOT / path).is_file(), path


def test_bus_users_prints_exactly_the_secrets_the_installation_mounts(
    tmp_path: Path, rendered: list[dict[str, Any]], capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bus-users", "--out", str(tmp_path)]) == 0
    printed = set(re.findall(r"create secret generic (\S+)", capsys.readouterr().out))
    mounted = {v["secret"]["secretName"] for spec in pod_specs(rendered)
               for v in spec.get("volumes", []) if "secret" in v}
    bus_secrets = {s for s in mounted if s.startswith("spreadbus-bus-") or s.endswith("-users")}
    assert printed == bus_secrets
    assert len(printed) == 7, \
        "spreadbus-nats-users, one per service and the setup step's, as the README says"
