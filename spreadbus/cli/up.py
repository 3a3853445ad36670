"""``spreadbus up``: the whole stack on this machine, on the embedded defaults.

The command's side: arguments, signals, the printed summary and the supervision loop. The
processes themselves (what starts in which order, on which ports, restarts and the orderly stop)
are :class:`spreadbus.cli.local_stack.Stack`'s.

``DIR/kubeconfig`` and ``DIR/nats-url`` are written (atomically) only once every service answers
``/readyz``, so a script can wait for them; both are removed again on shutdown, so a stale file
never suggests a stack that is gone. One stack runs per data directory: a second
``spreadbus up`` on a directory in use says which process holds it and exits 2, touching
nothing. Ctrl-C or SIGTERM stops the services first (SIGTERM, then SIGKILL after a grace
period), then kubesim, then nats-server. A service that exits on its own is restarted with a
growing delay, as a Deployment's pod would be.

``--members a,b`` runs member clusters beside a control-plane host
(:class:`~spreadbus.cli.local_stack.MemberCluster`); ``--topology`` then applies to every member,
or names one per member (``a=elastic,b=three-zones``). A member's name that is no DNS label, is
named twice, is ``hub`` (the hub's JetStream domain) or is the host's ``--cluster`` exits 2.

No child outlives ``spreadbus up``: every exit path of :func:`run` goes through
:meth:`Stack.stop` (signals include SIGHUP), and the exits that cannot (SIGKILL, a crash) are
covered by the children's parent-death signal (:mod:`spreadbus.runtime.parent_death`).
"""

from __future__ import annotations

import argparse
import signal
import time
from pathlib import Path
from types import FrameType

from events.shards import MAX_SHARDS
from kubesemantics.qualified_names import is_dns1123_label
from spreadbus.cli.data_dir_lock import DataDirInUse
from spreadbus.cli.local_stack import Stack, say
from spreadbus.cli.stack_errors import StackError
from spreadbus.runtime.bus_users import local_ca
from spreadbus.runtime.member_bus import HUB_DOMAIN

SHIPPED_TOPOLOGIES = ("three-zones", "elastic", "seed-examples", "bench-100")
"""The topologies kubesim ships (``kubesim/topologies/``), named here for ``--help``."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".spreadbus"),
        metavar="DIR",
        help="state directory; one stack at a time may use it (default: .spreadbus/)",
    )
    parser.add_argument(
        "--cluster", default="local", help="cluster name on the bus (default local)"
    )
    parser.add_argument(
        "--ready-timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="how long to wait for every service to be ready before giving up (default: "
        "%(default)s)",
    )
    parser.add_argument(
        "--webhook-replicas",
        type=int,
        default=1,
        metavar="N",
        help="webhook processes behind the webhook Service (default 1); kubesim spreads its "
        "admission calls over them",
    )
    parser.add_argument(
        "--nats-servers",
        type=int,
        default=1,
        metavar="N",
        help="nats-servers in the bus (default 1); 3 runs a JetStream cluster whose streams and "
        "buckets have three replicas, every service given every server's URL",
    )
    parser.add_argument(
        "--shards",
        type=int,
        default=1,
        metavar="N",
        help="planner shard groups (default 1): N planners, each deciding for its partition of "
        "the namespaces (deploy/components/planner-shards)",
    )
    parser.add_argument(
        "--topology",
        metavar="NAME",
        help="kubesim's nodes: a topology YAML file or one kubesim ships: "
        f"{', '.join(SHIPPED_TOPOLOGIES)} (default three-zones; seed-examples carries every "
        "label the manifests in examples/ select on); with --members it applies to every "
        "member, or give each its own: member1=elastic,member2=three-zones",
    )
    parser.add_argument(
        "--members",
        default="",
        metavar="NAME,...",
        help="member clusters, each with its own kubesim, leaf nats-server and agent; the "
        "stack's own cluster is then a control-plane host (no nodes, no workloads) running the "
        "planner, and the kubeconfig has a context per cluster (host, the current one, and each "
        "member's)",
    )
    parser.add_argument(
        "--kubesim-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra argument for kubesim (repeatable), e.g. --kubesim-arg=--ready-delay=0.5",
    )


def kubesim_args(args: argparse.Namespace, topology: str | None = None) -> list[str]:
    """``--topology`` goes to kubesim ahead of the ``--kubesim-arg`` list, which can override it.

    A topology file is named by its absolute path: kubesim runs in the project's directory, not
    in the one ``spreadbus up`` was started from. ``topology`` replaces ``--topology`` (a
    member's own).
    """
    chosen = args.topology if topology is None else topology
    if not chosen:
        return list(args.kubesim_arg)
    path = Path(chosen)
    named = str(path.resolve()) if path.is_file() else chosen
    return [f"--topology={named}", *args.kubesim_arg]


def member_names(text: str) -> list[str]:
    """``--members a,b``: each a DNS label, none twice, none ``hub`` (the hub's domain).
    Raises ValueError naming the flag and the name."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    for name in names:
        problems = is_dns1123_label(name)
        if problems or name == HUB_DOMAIN:
            raise ValueError(f"--members {name!r}: " + ("; ".join(problems) if problems else
                                                         "is the hub's domain"))
    if len(set(names)) != len(names):
        raise ValueError(f"--members {text!r}: a member is named twice")
    return names


def member_topologies(topology: str | None, members: list[str]) -> dict[str, str | None]:
    """Member -> its topology: ``--topology NAME`` for every member, or ``m1=NAME,m2=NAME``
    (a member left out gets kubesim's default). Raises ValueError naming the flag."""
    if not topology or "=" not in topology:
        return dict.fromkeys(members, topology)
    chosen: dict[str, str | None] = dict.fromkeys(members)
    for part in topology.split(","):
        member, sep, name = part.partition("=")
        member, name = member.strip(), name.strip()
        if not sep or not name:
            raise ValueError(f"--topology {part!r}: give MEMBER=TOPOLOGY for each member")
        if member not in chosen:
            raise ValueError(f"--topology {part!r}: {member!r} is none of the --members "
                             f"({', '.join(members)})")
        chosen[member] = name
    return chosen


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signal.Signals(signum).name)


def run(args: argparse.Namespace) -> int:
    if args.webhook_replicas < 1:
        say("--webhook-replicas must be at least 1")
        return 2
    if args.nats_servers < 1 or args.nats_servers % 2 == 0:
        say("--nats-servers must be 1 or an odd number (3, 5): a JetStream cluster elects its "
            "leaders by majority")
        return 2
    try:
        members = member_names(args.members)
        topologies = member_topologies(args.topology, members)
    except ValueError as exc:
        say(str(exc))
        return 2
    if members and args.nats_servers != 1:
        say("--members runs one hub nats-server: leave out --nats-servers")
        return 2
    if args.cluster in members:
        say(f"--members {args.cluster!r}: is the host's cluster (--cluster)")
        return 2
    if not 1 <= args.shards <= MAX_SHARDS:
        say(f"--shards must be from 1 to {MAX_SHARDS}")
        return 2
    if members and args.shards != 1:
        say("--members runs one planner: leave out --shards")
        return 2
    stack = Stack(
        data_dir=args.data_dir.resolve(),
        cluster=args.cluster,
        # The host of members is a control plane: no nodes, so no topology.
        kubesim_args=list(args.kubesim_arg) if members else kubesim_args(args),
        webhook_replicas=args.webhook_replicas,
        nats_servers=args.nats_servers,
        members={m: kubesim_args(args, topologies[m] or "") for m in members},
        planner_shards=args.shards,
    )
    try:
        stack.claim()
    except DataDirInUse as exc:
        say(str(exc))
        return 2
    # SIGHUP too: closing the terminal must stop the stack, not orphan it.
    stopping_signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, _raise_stop) for s in stopping_signals}
    code = 0
    try:
        stack.start(args.ready_timeout)
        print(f"kubeconfig: {stack.data_dir / 'kubeconfig'}")
        if members:
            print(f"contexts:   host (current), {', '.join(members)}")
        print(f"nats-url:   {','.join(stack.nats_urls)}")
        reader = stack.bus_options()
        print(f"nats-user:  {reader['nkeys_seed']} (read-only nkey seed; "
              f"inbox prefix {reader['inbox_prefix']}; TLS trusting "
              f"{local_ca(stack.data_dir)})")
        print("services:")
        for line in stack.status_lines():
            print(line)
        print("export KUBECONFIG=" + str(stack.data_dir / "kubeconfig"), flush=True)
        while True:
            stack.supervise()
            time.sleep(0.5)
    except _Stop as why:
        say(f"{why}: stopping")
    except StackError as exc:
        say(str(exc))
        code = 1
    finally:
        # A second signal during shutdown must not interrupt the orderly stop.
        for s in previous:
            signal.signal(s, signal.SIG_IGN)
        stack.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    say("stopped")
    return code
