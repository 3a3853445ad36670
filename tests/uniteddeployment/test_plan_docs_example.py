"""The ``spreadbus plan`` example of docs/uniteddeployment.md prints what the page shows."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from spreadbus.cli import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "uniteddeployment.md"
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.M | re.S)


def blocks(lang: str, attrs: str) -> list[str]:
    return [
        m.group(3)
        for m in FENCE.finditer(DOC.read_text())
        if m.group(1) == lang and m.group(2).strip() == attrs
    ]


def contains(whole: Any, part: Any, path: str = "") -> None:
    """Every key of ``part`` is in ``whole`` with a value that contains ``part``'s."""
    if isinstance(part, dict):
        assert isinstance(whole, dict), path
        for key, value in part.items():
            assert key in whole, f"{path}.{key} missing"
            contains(whole[key], value, f"{path}.{key}")
    else:
        assert whole == part, path


def test_the_plan_example_matches_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (command,) = blocks("sh", "plan")
    (excerpt,) = blocks("json", "excerpt")
    (manifest,) = blocks("yaml", "file=three-zones.yaml")
    (tmp_path / "three-zones.yaml").write_text(manifest)
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(command.strip())
    assert argv[0] == "spreadbus"
    assert main(argv[1:]) == 0
    contains(json.loads(capsys.readouterr().out), json.loads(excerpt))


def test_the_excerpt_check_can_fail() -> None:
    with pytest.raises(AssertionError):
        contains({"a": {"b": 1}}, {"a": {"b": 2}})
    with pytest.raises(AssertionError):
        contains({"a": {}}, {"a": {"c": None}})
