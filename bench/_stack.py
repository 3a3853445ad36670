"""The local stack a benchmark measures on: one it starts for itself, or one it is handed.

A benchmark normally starts ``spreadbus up``'s stack (:class:`Stack`) for itself, from empty
stores, so that what it times is its own. ``python -m bench --tiny`` instead starts one secured
and one open stack (:func:`shared_stacks`) and hands them to the benchmarks that can share
(:data:`SHARERS`) as files, ``--stack FILE`` and ``--open-stack FILE``: a tiny run measures
nothing, and each stack started costs seconds of CPU. A benchmark on a shared stack works in
namespaces named for itself, so several can follow each other on one.

:class:`RunningStack` is what a benchmark reads of a running stack, whoever started it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from spreadbus.cli.local_stack import WEBHOOK, Stack

STACK, OPEN_STACK = "--stack", "--open-stack"
SHARERS: Mapping[str, tuple[str, ...]] = {
    "bus_security_end_to_end": (STACK, OPEN_STACK),
    "bus_security_webhook": (STACK, OPEN_STACK),
    "pub_delete_admission": (STACK,),
    "uniteddeployment_end_to_end": (STACK,),
    "webhook_admission": (STACK,),
    "webhook_idle_connections": (STACK,),
    "workloadspread_end_to_end": (STACK,),
}
"""Benchmarks that can share, and the stacks each takes: ``--stack`` a secured one (as
``spreadbus up`` runs), ``--open-stack`` one whose bus is open (the bus security comparisons)."""

SHARED_KUBELET = ("--create-delay=0.01", "--start-delay=0.02", "--ready-delay=0.01",
                  "--max-termination-grace=0.05", "--no-events")
SHARED_TOPOLOGY = "bench-100"
SHARED_ENV = {"SPREADBUS_KUBE_QPS": "1000", "SPREADBUS_KUBE_BURST": "1000",
              "SPREADBUS_WORKERS": "16"}
SHARED_WEBHOOKS = 2
"""The idle-connections benchmark floods one replica and reviews both."""
STACK_HELP = ("measure on this running stack (a file `python -m bench --tiny` writes) instead of "
              "starting one")


@dataclass(frozen=True)
class RunningStack:
    """A running local stack: its directory (kubeconfig, TLS), its webhook replicas' ports, and
    each process's id and health port by name (``kubesim``, ``nats-server``, the services)."""

    data_dir: Path
    webhook_ports: tuple[int, ...]
    pids: Mapping[str, int]
    health_ports: Mapping[str, int]

    @classmethod
    def of(cls, stack: Stack) -> RunningStack:
        assert stack.kubesim is not None
        assert stack.kubesim.process is not None
        assert stack.nats is not None
        assert stack.nats.process is not None
        pids = {"kubesim": stack.kubesim.process.pid, "nats-server": stack.nats.process.pid,
                **{c.name: c.process.pid for c in stack.services if c.process is not None}}
        return cls(stack.data_dir, tuple(stack.webhook_ports), pids,
                   {c.name: c.health_port for c in stack.services})

    @classmethod
    def read(cls, path: Path) -> RunningStack:
        fields = json.loads(path.read_text())
        return cls(Path(fields["data_dir"]), tuple(fields["webhook_ports"]), fields["pids"],
                   fields["health_ports"])

    def write(self, path: Path) -> None:
        path.write_text(json.dumps({"data_dir": str(self.data_dir),
                                    "webhook_ports": list(self.webhook_ports),
                                    "pids": dict(self.pids),
                                    "health_ports": dict(self.health_ports)}))

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "kubeconfig"

    @property
    def tls(self) -> Path:
        return self.data_dir / "tls"

    @property
    def webhooks(self) -> list[str]:
        """The webhook replicas' names, in the order of :attr:`webhook_ports`."""
        return [name for name in self.pids if name.startswith(WEBHOOK)]


@contextlib.contextmanager
def local_stack(given: Path | None, data_dir: Path, *, kubesim_args: Sequence[str],
                webhook_replicas: int = 1, service_env: Mapping[str, str] | None = None,
                secured_bus: bool = True) -> Iterator[RunningStack]:
    """The stack described in ``given``, or else one started in ``data_dir`` as asked and
    stopped on leaving."""
    if given is not None:
        yield RunningStack.read(given)
        return
    stack = Stack(data_dir=data_dir, cluster="bench", kubesim_args=list(kubesim_args),
                  webhook_replicas=webhook_replicas, service_env=dict(service_env or {}),
                  secured_bus=secured_bus)
    try:
        stack.start(120.0)
        yield RunningStack.of(stack)
    finally:
        stack.stop()


@contextlib.contextmanager
def shared_stacks(directory: Path, names: Sequence[str]) -> Iterator[dict[str, list[str]]]:
    """The stacks the benchmarks ``names`` of :data:`SHARERS` take, under ``directory``, alike
    but for their bus; for each of those benchmarks, the options that hand it its stacks."""
    wanted = {option for name in names for option in SHARERS.get(name, ())}
    files: dict[str, Path] = {}
    with contextlib.ExitStack() as running:
        for option in (STACK, OPEN_STACK):
            if option not in wanted:
                continue
            stack = running.enter_context(local_stack(
                None, directory / option.strip("-"),
                kubesim_args=[f"--topology={SHARED_TOPOLOGY}", *SHARED_KUBELET],
                webhook_replicas=SHARED_WEBHOOKS, service_env=SHARED_ENV,
                secured_bus=option == STACK))
            files[option] = directory / f"{option.strip('-')}.json"
            stack.write(files[option])
        yield {name: [f"{option}={files[option]}" for option in SHARERS[name]]
               for name in names if name in SHARERS}
