"""The Containerfile builds the image deploy/ runs, as deploy/ runs it.

No image can be built here (buildah installs from Debian, but no container registry is reachable
for the base image), so the file is read and linted (hadolint), not built: the image it is
tagged as (the Makefile's ``IMAGE``, its OCI labels) is the one every Deployment names, at the
project's version; its last stage runs as the user the Deployments require, from the virtual
environment only, with ``spreadbus`` as the entrypoint; it copies every package the project
installs; and every Deployment's arguments parse as a real sub-command of that entrypoint.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from spreadbus.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[2]


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per instruction, continuation lines joined, comments dropped."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    out = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


ALL = instructions((ROOT / "Containerfile").read_text())
LAST_STAGE = ALL[max(i for i, (word, _) in enumerate(ALL) if word == "FROM"):]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def pairs(instruction: str) -> dict[str, str]:
    """``KEY=value`` pairs of the last stage's LABEL or ENV instructions."""
    out: dict[str, str] = {}
    for word, rest in LAST_STAGE:
        if word == instruction:
            out.update(item.split("=", 1) for item in shlex.split(rest))  # type: ignore[misc]
    return out


def one(word: str) -> str:
    (rest,) = [r for w, r in LAST_STAGE if w == word]
    return rest


def spreadbus_containers(rendered: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        container
        for doc in rendered if doc["kind"] == "Deployment"
        for container in doc["spec"]["template"]["spec"]["containers"]
        if "/spreadbus/" in container["image"]
    ]


def test_the_image_is_the_one_every_deployment_names_at_the_projects_version(
    rendered: list[dict[str, Any]],
) -> None:
    images = {c["image"] for c in spreadbus_containers(rendered)}
    assert len(spreadbus_containers(rendered)) >= 4
    (image,) = images
    makefile = re.search(r"^IMAGE\s*\?=\s*(\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert makefile is not None, "the Makefile names the image it builds"
    assert makefile.group(1) == image
    labels = pairs("LABEL")
    assert labels["org.opencontainers.image.ref.name"] == image
    assert image.rpartition(":")[2] == labels["org.opencontainers.image.version"]
    assert labels["org.opencontainers.image.version"] == PROJECT["project"]["version"]


def test_it_runs_as_the_non_root_user_the_deployments_require(
    rendered: list[dict[str, Any]],
) -> None:
    user = one("USER").split(":")
    assert user == ["65532", "65532"]
    for doc in rendered:
        if doc["kind"] != "Deployment":
            continue
        pod = doc["spec"]["template"]["spec"]
        if not any("/spreadbus/" in c["image"] for c in pod["containers"]):
            continue
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert str(pod["securityContext"]["runAsUser"]) == user[0]
        for container in pod["containers"]:
            assert container["securityContext"]["readOnlyRootFilesystem"] is True


def test_it_writes_nothing_at_run_time_and_carries_only_the_virtual_environment() -> None:
    env = pairs("ENV")
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    venv = json.loads(one("ENTRYPOINT"))[0].rsplit("/bin/", 1)[0]
    assert any(w == "RUN" and "compileall" in r and venv in r for w, r in ALL), \
        "the modules are compiled while building, as nothing may write them later"
    copies = [r for w, r in LAST_STAGE if w in ("COPY", "ADD")]
    assert copies == [f"--from=build {venv} {venv}"]
    assert env["PATH"].startswith(f"{venv}/bin:")


def test_the_entrypoint_is_the_projects_spreadbus_command() -> None:
    entrypoint = json.loads(one("ENTRYPOINT"))  # the exec form: signals reach the service
    assert len(entrypoint) == 1
    assert entrypoint[0].rsplit("/", 1)[1] == "spreadbus"
    assert "spreadbus" in PROJECT["project"]["scripts"]


def test_every_package_the_project_installs_is_copied_into_the_build() -> None:
    copied = {r.split()[0].rstrip("/") for w, r in ALL if w == "COPY" and "--from" not in r}
    for pattern in PROJECT["tool"]["setuptools"]["packages"]["find"]["include"]:
        assert pattern.rstrip("*") in copied, pattern
    assert {"pyproject.toml", "constraints.txt", PROJECT["project"]["readme"]} <= set(
        " ".join(r for w, r in ALL if w == "COPY").split()
    )


def test_every_deployments_arguments_are_a_real_sub_command(
    rendered: list[dict[str, Any]],
) -> None:
    for container in spreadbus_containers(rendered):
        args = [str(a) for a in container["args"]]
        assert args[0] in COMMANDS, args
        parser, chosen = build_parser(args)
        assert chosen == args[0]
        try:
            parsed = parser.parse_args(args)
        except SystemExit:
            pytest.fail(f"spreadbus {' '.join(args)} does not parse")
        assert parsed.command == args[0]


def test_hadolint_finds_nothing_to_warn_about() -> None:
    """No container engine runs here, so the file is linted as well as read."""
    hadolint = Path(sys.executable).parent / "hadolint"
    result = subprocess.run([str(hadolint), "--failure-threshold", "info",
                             str(ROOT / "Containerfile")],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
