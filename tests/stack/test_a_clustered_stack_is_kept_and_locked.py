"""``spreadbus up --nats-servers 3`` keeps what a one-server stack keeps: the data directory is
locked while it runs, a server that dies is started again on its port and store and catches
up, and started again the stack finds its bus (each server's store) and kubesim's objects
together. A directory kept for one number of servers is refused for another, naming
what to do, and an even number of servers is refused before anything starts."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

import nats
import pytest
from kubernetes import client

from events.streams import ALL
from spreadbus.audit.settings import AuditSettings, with_local_stack
from spreadbus.cli import up
from spreadbus.cli.data_dir_lock import DataDirInUse
from spreadbus.cli.local_stack import Stack
from spreadbus.cli.stack_errors import StackError
from spreadbus.runtime.nats_cluster import member_names
from tests.fixtures.nats_cluster import caught_up
from tests.workloadspread_e2e.stack import (
    create_namespace,
    deployment,
    live_pods,
    running_stack,
    wait_for,
)

NS = "kept"


async def replicas_of_every_stream(stack: Stack) -> dict[str, int]:
    nc = await nats.connect(stack.nats_urls, **stack.bus_options())
    try:
        js = nc.jetstream()
        return {spec.name: (await js.stream_info(spec.name)).config.num_replicas
                for spec in ALL}
    finally:
        await nc.close()


def running_pods(api: client.ApiClient) -> list[Any]:
    return [p for p in live_pods(api, NS, "web") if p.status.phase == "Running"]


def pod_uids(api: client.ApiClient) -> set[str]:
    return {p.metadata.uid for p in live_pods(api, NS, "web")}


@pytest.mark.e2e
def test_a_three_server_stack_is_locked_and_started_again_keeps_its_bus_and_cluster(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "stack"
    with running_stack(data_dir, "elastic", {}, nats_servers=3) as (stack, api):
        assert len(set(stack.nats_urls)) == 3
        assert (data_dir / "nats-url").read_text().strip().split(",") == stack.nats_urls
        with pytest.raises(DataDirInUse):
            Stack(data_dir=data_dir, cluster="local", kubesim_args=[], nats_servers=3).claim()
        assert asyncio.run(replicas_of_every_stream(stack)) == {s.name: 3 for s in ALL}
        create_namespace(api, NS)
        client.AppsV1Api(api).create_namespaced_deployment(NS, deployment("web", 2))
        wait_for("2 pods running", lambda: len(running_pods(api)) == 2, 120)
        before = pod_uids(api)
        killed = stack.nats_members[1]
        killed.kill()

        def restarted() -> bool:
            stack.supervise()
            return caught_up(stack.nats_members) is not None

        wait_for("the killed server started again by the stack and caught up", restarted, 60)
    for name in member_names(3):
        assert any((data_dir / "nats" / name / "jetstream").glob("*/streams/KUBE")), name

    with running_stack(data_dir, "elastic", {}, nats_servers=3) as (stack, api):
        assert pod_uids(api) == before, "the same pods, kept with the bus"
        assert asyncio.run(replicas_of_every_stream(stack)) == {s.name: 3 for s in ALL}


@pytest.mark.parametrize(("kept", "asked"), [(3, 1), (1, 3)])
def test_a_bus_kept_for_another_number_of_servers_is_refused(
    tmp_path: Path, kept: int, asked: int
) -> None:
    data_dir = tmp_path / "stack"
    stores = [data_dir / "nats"] if kept == 1 else [data_dir / "nats" / n
                                                     for n in member_names(kept)]
    for store in stores:
        (store / "jetstream" / "$G" / "streams" / "KUBE").mkdir(parents=True)
    stack = Stack(data_dir=data_dir, cluster="local", kubesim_args=[], nats_servers=asked)
    with pytest.raises(StackError) as refused:
        stack.start(1.0)
    stack.stop()
    assert f"--nats-servers {kept}" in str(refused.value)
    assert stack.nats is None, "nothing was started"


@pytest.mark.parametrize("servers", [0, 2])
def test_up_refuses_a_number_of_servers_that_cannot_elect_a_leader(
    tmp_path: Path, servers: int, capsys: Any
) -> None:
    parser = argparse.ArgumentParser()
    up.add_arguments(parser)
    args = parser.parse_args(["--data-dir", str(tmp_path / "stack"),
                              "--nats-servers", str(servers)])
    assert up.run(args) == 2
    assert "--nats-servers" in capsys.readouterr().err
    assert not (tmp_path / "stack").exists(), "nothing was started"


def test_the_audit_commands_read_every_url_a_clustered_stack_names(tmp_path: Path) -> None:
    urls = ["tls://127.0.0.1:4001", "tls://127.0.0.1:4002", "tls://127.0.0.1:4003"]
    (tmp_path / "nats-url").write_text(",".join(urls) + "\n")
    settings = with_local_stack(AuditSettings(data_dir=str(tmp_path)))
    assert list(settings.nats_url) == urls
