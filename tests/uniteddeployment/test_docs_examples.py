"""Every ``spreadbus`` example in docs/uniteddeployment.md runs and prints what the page says."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.doc_pages import commands, run_documented

PAGE = "uniteddeployment.md"


def test_the_page_shows_an_allowed_and_a_denied_object() -> None:
    assert len(commands(PAGE)) == 2


@pytest.mark.parametrize(("command", "expected"), commands(PAGE), ids=lambda v: str(v)[:40])
def test_documented_command_output(
    command: str,
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_documented(PAGE, command, expected, tmp_path, monkeypatch, capsys)
