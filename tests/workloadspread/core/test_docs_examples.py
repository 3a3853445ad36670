"""Every example in docs/workloadspread.md runs and prints what the page says."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.fixtures.doc_pages import commands, run_documented

PAGE = "workloadspread.md"


def test_the_page_has_examples_of_all_three_commands() -> None:
    used = {shlex.split(cmd)[1] for cmd, _ in commands(PAGE)}
    assert used == {"validate", "admit", "plan"}


@pytest.mark.parametrize(("command", "expected"), commands(PAGE), ids=lambda v: str(v)[:40])
def test_documented_command_output(
    command: str,
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_documented(PAGE, command, expected, tmp_path, monkeypatch, capsys)
