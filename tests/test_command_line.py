"""The ``spreadbus`` command line as a new user meets it: a version, a description, help for every
option with its default, only the flags a command uses, and no noise around the answers."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest
from rich.console import Console
from rich.live import Live

from spreadbus.cli import build_parser
from spreadbus.cli.demo import print_final, render
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.parent_death import die_with_parent
from tlsserving import issue_server_cert, make_ca

ROOT = Path(__file__).resolve().parents[1]
SERVICE_ONLY = ("--http-port", "--http-host", "--nats-replicas", "--kubeconfig",
                "--kube-context", "--cluster", "--history-max-age", "--log-level")


def spreadbus(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spreadbus", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False,
                          preexec_fn=die_with_parent())


def parser_of(*path: str) -> argparse.ArgumentParser:
    """The parser of ``spreadbus COMMAND [ACTION]``."""
    parser, _ = build_parser(list(path))
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser


def options(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        if action.option_strings and not isinstance(
                action, argparse._HelpAction | argparse._VersionAction):
            yield action


def test_the_version_is_the_installed_one() -> None:
    done = spreadbus("--version")
    assert (done.returncode, done.stdout) == (0, f"spreadbus {version('spreadbus')}\n")


def test_the_help_opens_with_what_spreadbus_is() -> None:
    done = spreadbus("--help")
    assert done.returncode == 0
    after_usage = done.stdout.split("\n\n")[1]
    assert after_usage.startswith("spreadbus: spread a workload's pods over zones")
    assert "--version" in done.stdout
    assert "spreadbus COMMAND --help" in done.stdout


@pytest.mark.parametrize("command", [("why",), ("audit", "replay")])
def test_history_readers_list_only_the_flags_they_use(command: tuple[str, ...]) -> None:
    flags = {f for a in options(parser_of(*command)) for f in a.option_strings}
    assert {"--db", "--nats-url", "--nats-nkey-seed", "--nats-tls-ca", "--data-dir",
            "--feature-plugins"} <= flags
    assert not flags & set(SERVICE_ONLY)


@pytest.mark.parametrize("command", [
    ("validate",), ("admit",), ("plan",), ("why",), ("demo",), ("up",), ("audit", "serve"),
    ("audit", "replay"),
])
def test_every_option_says_what_it_is_and_its_default(command: tuple[str, ...]) -> None:
    parser = parser_of(*command)
    for action in options(parser):
        assert action.help, f"{command} {action.option_strings} has no help"
        if action.default not in (None, False, [], ""):
            rendered = parser.formatter_class(prog="x")._expand_help(action)
            assert "default" in rendered, f"{command} {action.option_strings}: {rendered}"
    assert parser.description


def test_audit_replay_over_tls_prints_only_its_summary(tmp_path: Path) -> None:
    ca = make_ca("test CA")
    ca.write(tmp_path, "ca")
    issue_server_cert(ca, ["127.0.0.1", "localhost"]).write(tmp_path, "nats")
    config = tmp_path / "nats.conf"
    config.write_text(f"tls {{\n  cert_file: {json.dumps(str(tmp_path / 'nats.crt'))}\n"
                      f"  key_file: {json.dumps(str(tmp_path / 'nats.key'))}\n}}\n")
    with NatsServer(store_dir=tmp_path / "store", extra_args=["-c", str(config)]) as server:
        db = tmp_path / "audit.db"
        done = spreadbus("audit", "replay", "--db", str(db), "--quiet",
                         "--nats-url", server.url, "--nats-tls-ca", str(tmp_path / "ca.crt"),
                         "--data-dir", str(tmp_path / "no-stack"))
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"{db}: 0 messages folded, position 0\n"


def test_the_final_split_starts_on_a_line_of_its_own_off_a_terminal() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=80)
    assert not console.is_terminal
    split = {"ACK": Counter(Running=80), "ECI": Counter(Terminating=3)}
    with Live(console=console) as live:
        live.update(render("scale in to 80", split))
    print_final(console, split)
    lines = out.getvalue().splitlines()
    assert "final split" in [line.strip() for line in lines]
    assert lines[-1].startswith("└"), "the final table ends the output"


def complete(line: str, tmp_path: Path) -> tuple[list[str], set[str]]:
    """What the installed ``spreadbus`` offers for ``line`` under argcomplete's shell protocol
    (the cursor at its end), and the modules its import statements loaded to answer (Python's
    import timing does not see ``importlib.import_module``, so a command module shows through
    what it imports)."""
    out = tmp_path / "completions"
    env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n",
           "_ARGCOMPLETE_STDOUT_FILENAME": str(out), "COMP_LINE": line,
           "COMP_POINT": str(len(line)), "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run([str(Path(sys.executable).with_name("spreadbus"))], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60, check=False,
                          preexec_fn=die_with_parent())
    assert done.returncode == 0, done.stderr
    imported = {row.rsplit("|", 1)[1].strip() for row in done.stderr.splitlines()
                if row.startswith("import time:") and row.count("|") == 2}
    return out.read_text().split("\n"), imported


HEAVY = ("services", "kubesim", "nats", "kubernetes", "aiohttp", "pydantic", "datasette")


def test_the_shell_completes_commands_without_importing_them(tmp_path: Path) -> None:
    words, imported = complete("spreadbus ", tmp_path)
    assert {"up", "validate", "audit", "why", "demo", "--version"} <= set(words)
    assert "argcomplete" in imported
    assert {m for m in imported if m.startswith("spreadbus")} == {
        "spreadbus", "spreadbus.cli", "spreadbus.cli.shell_completion"}
    assert not {m for m in imported if m.startswith(HEAVY)}
    assert complete("spreadbus va", tmp_path)[0] == ["validate "]


def test_the_shell_completes_a_commands_options_and_actions(tmp_path: Path) -> None:
    words, imported = complete("spreadbus validate --", tmp_path)
    assert {"--filename", "--output", "--crds"} <= set(words)
    assert "spreadbus.features.registry" in imported, "validate's own imports are seen"
    assert not {m for m in imported if m.startswith(("services", "kubesim", "kubernetes"))}
    assert set(complete("spreadbus audit ", tmp_path)[0]) >= {"replay", "follow", "serve"}
    replay = set(complete("spreadbus audit replay --", tmp_path)[0])
    assert {"--db", "--since", "--until", "--quiet"} <= replay
    assert not replay & set(SERVICE_ONLY)
    assert complete("spreadbus audit serve --po", tmp_path)[0] == ["--port "]


def test_the_readmes_bash_registration_completes_the_command_typed_as_a_path() -> None:
    readme = (ROOT / "README.md").read_text()
    (registration,) = re.findall(r'`(eval "\$\(\.venv/bin/register-python-argcomplete [^`]+)`',
                                 readme)
    script = f"""{registration}
spec=$(complete -p spreadbus) && function=${{spec##*-F }} && function=${{function%% *}}
COMP_LINE=".venv/bin/spreadbus audit serve --po" COMP_POINT=${{#COMP_LINE}}
COMP_WORDS=(.venv/bin/spreadbus audit serve --po) COMP_CWORD=3
"$function" .venv/bin/spreadbus --po serve
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=False, preexec_fn=die_with_parent())
    assert (done.returncode, done.stdout.split()) == (0, ["--port"]), done.stderr
