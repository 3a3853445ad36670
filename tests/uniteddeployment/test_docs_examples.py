"""Every ``spreadbus`` example in docs/uniteddeployment.md runs and prints what the page says."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from spreadbus.cli import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "uniteddeployment.md"
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.M | re.S)


def _blocks() -> list[tuple[str, str, str]]:
    return [(m.group(1), m.group(2).strip(), m.group(3)) for m in FENCE.finditer(DOC.read_text())]


def _files() -> dict[str, str]:
    return {
        attrs.removeprefix("file="): body
        for lang, attrs, body in _blocks()
        if lang == "yaml" and attrs.startswith("file=")
    }


def _commands() -> list[tuple[str, str]]:
    out = []
    for lang, _, body in _blocks():
        if lang == "console":
            first, _, rest = body.partition("\n")
            out.append((first.removeprefix("$ "), rest))
    return out


def test_the_page_shows_an_allowed_and_a_denied_object() -> None:
    assert len(_commands()) == 2


@pytest.mark.parametrize(("command", "expected"), _commands(), ids=lambda v: str(v)[:40])
def test_documented_command_output(
    command: str,
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, body in _files().items():
        (tmp_path / name).write_text(body)
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(command)
    assert argv[0] == "spreadbus"
    code = main(argv[1:])
    out = capsys.readouterr().out
    try:
        wanted = json.loads(expected)
    except ValueError:
        assert out == expected
        denied = expected.startswith("denied")
    else:
        assert json.loads(out) == wanted
        denied = wanted.get("allowed") is False
    assert code == (1 if denied else 0)
