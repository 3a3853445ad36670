"""The ``spreadbus plan`` example of docs/uniteddeployment.md prints what the page shows."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from spreadbus.cli import main
from tests.fixtures.doc_pages import blocks as page_blocks


def blocks(lang: str, info: str) -> list[str]:
    return [body for found, attrs, body in page_blocks("uniteddeployment.md")
            if found == lang and attrs == info]


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
