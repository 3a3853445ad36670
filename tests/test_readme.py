"""The README tells the truth: its commands exist, its links resolve, its make targets exist."""

from __future__ import annotations

import re
from pathlib import Path

from spreadbus.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_every_spreadbus_command_in_the_readme_exists() -> None:
    named = set(re.findall(r"(?:`|bin/)spreadbus (\w+)", README))
    assert named, "the README names spreadbus commands"
    assert named <= set(COMMANDS), named - set(COMMANDS)


def test_every_make_target_in_the_readme_exists() -> None:
    targets = set(re.findall(r"^make (\w+)", README, flags=re.MULTILINE))
    targets |= set(re.findall(r"`make (\w+)", README))
    makefile = (ROOT / "Makefile").read_text()
    defined = set(re.findall(r"^(\w+):", makefile, flags=re.MULTILINE))
    assert {"up", "test"} <= targets
    assert targets <= defined, targets - defined


def test_every_relative_link_resolves() -> None:
    links = re.findall(r"\]\(([^)#]+)\)", README)
    assert links
    missing = [link for link in links if not link.startswith("http") and not (ROOT / link).exists()]
    assert missing == []


def test_ci_runs_the_readme_test_command() -> None:
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_offline_examples_parse_with_the_real_command_line() -> None:
    for line in re.findall(r"^\.venv/bin/spreadbus (.+?)\s*(?:#.*)?$", README, re.MULTILINE):
        argv = line.split()
        parser, chosen = build_parser(argv)
        assert chosen == argv[0]
        parser.parse_args(argv)
