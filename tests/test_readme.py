"""The README tells the truth: its commands, make targets, links and example files exist."""

from __future__ import annotations

import re
from pathlib import Path

from kubesemantics.node_affinity import node_matches_term
from kubesim.behaviour.topology import load_topology, shipped_topologies
from spreadbus.cli import COMMANDS, build_parser
from tests.examples.manifests import node_terms

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_every_spreadbus_command_in_the_readme_exists() -> None:
    named = set(re.findall(r"(?:`|bin/)spreadbus ([\w-]+)", README))
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


def test_every_example_file_the_readme_names_exists() -> None:
    named = set(re.findall(r"\bexamples/[\w./-]+\.yaml", README))
    assert named, "the quickstart applies a shipped example"
    assert [path for path in sorted(named) if not (ROOT / path).is_file()] == []


def test_the_quickstart_starts_kubesim_on_nodes_every_example_it_applies_can_use() -> None:
    (topology,) = re.findall(r"^\.venv/bin/spreadbus up --topology ([\w-]+)", README, re.MULTILINE)
    assert topology in shipped_topologies()
    nodes = load_topology(topology).nodes("2026-01-01T00:00:00Z")
    applied = re.findall(r"kubectl apply -f (examples/\S+?\.yaml)", README)
    assert applied
    for path in applied:
        for where, term, _ in node_terms(ROOT / path):
            assert any(node_matches_term(node, term) for node in nodes), f"{path}: {where}"
