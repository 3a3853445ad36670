# PYTHON_ARGCOMPLETE_OK: shells with argcomplete's global completion complete this command.
"""The ``spreadbus`` command: one sub-command per service or tool, each in its own module.

Sub-command modules are imported only when chosen, so ``spreadbus validate`` never pays for
importing the NATS or Kubernetes clients. Each module exposes ``add_arguments(parser)`` and
``run(args) -> int``. Tab completion follows the same rule (see ``shell_completion``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

import spreadbus
from spreadbus.cli import shell_completion

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "up": ("spreadbus.cli.up", "run the whole stack locally on the embedded defaults"),
    "watcher": ("services.watcher.cli", "stream Kubernetes changes into JetStream"),
    "planner": ("services.planner.cli", "replay observations and decide plans"),
    "actuator": ("services.actuator.cli", "apply plans to the Kubernetes API"),
    "webhook": ("services.webhook.cli", "admission webhook for pods and spreadbus resources"),
    "kubesim": ("kubesim.cli", "run the Kubernetes API simulator"),
    "validate": ("spreadbus.cli.validate", "validate WorkloadSpreads, UnitedDeployments, "
                 "PodUnavailableBudgets and WorkloadRebalancers offline"),
    "admit": ("spreadbus.cli.admit", "show the webhook's answer for a pod offline"),
    "plan": ("spreadbus.cli.plan", "show what the planner would write, offline"),
    "events": ("spreadbus.cli.events", "event contract tools (JSON Schema)"),
    "bus-users": ("spreadbus.cli.bus_users", "write the NATS users and seeds of an installation"),
    "join": ("spreadbus.cli.join", "register a member cluster in the host's cluster registry"),
    "bus-setup": ("spreadbus.cli.bus_setup", "create or update the streams and buckets of the bus"),
    "audit": ("spreadbus.cli.audit", "the audit log in SQLite: replay, follow, serve"),
    "why": ("spreadbus.cli.why", "why a pod is where it is, or a spread's subsets at a time"),
    "demo": ("spreadbus.cli.demo", "run the elastic WorkloadSpread example on the local stack"),
}


EPILOG = """\
Start here: `spreadbus up` runs the whole stack on this machine (kubesim as the cluster), and
`spreadbus validate -f FILE` checks a manifest without one. `spreadbus COMMAND --help` tells
more about each command."""


def installed_version() -> str:
    try:
        return version("spreadbus")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def build_parser(argv: Sequence[str]) -> tuple[argparse.ArgumentParser, str | None]:
    parser = argparse.ArgumentParser(
        prog="spreadbus", description=spreadbus.__doc__,
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version",
                        version=f"spreadbus {installed_version()}")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, (module_name, help_text) in COMMANDS.items():
        sub = subs.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            importlib.import_module(module_name).add_arguments(sub)
    return parser, chosen if chosen in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    typed = shell_completion.typed_words() if argv is None else None
    parser, chosen = build_parser(args_list if typed is None else typed)
    if typed is not None:
        shell_completion.complete(parser)
    args = parser.parse_args(args_list)
    if chosen is None:
        parser.print_help()
        return 2
    module = importlib.import_module(COMMANDS[chosen][0])
    code: int = module.run(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
