"""A webhook replica that goes down leaves the Service's ready endpoints until it is back.

The local stack's supervisor plays the endpoints controller for its webhook processes: a replica
that stops answering ``/readyz`` is listed under ``notReadyAddresses`` (kubesim then sends it
nothing) and returns to ``addresses`` once restarted and caught up, on the port it had.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from spreadbus.cli.local_install import CONVERSION, REVIEWS, SERVICE_NAME, SERVICE_NAMESPACE
from spreadbus.cli.local_stack import Stack
from tests.workloadspread_e2e.stack import running_stack, wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, client.ApiClient]]:
    data_dir: Path = tmp_path_factory.mktemp("replicas-stack")
    with running_stack(data_dir, "three-zones", {}, webhook_replicas=2) as running:
        yield running


def listed(api: client.ApiClient, name: str = REVIEWS) -> tuple[list[int], list[int]]:
    """Ports named ``name`` listed as ready and as not ready."""
    core: Any = client.CoreV1Api(api)
    endpoints = core.read_namespaced_endpoints(SERVICE_NAME, SERVICE_NAMESPACE)
    ready: list[int] = []
    unready: list[int] = []
    for subset in endpoints.subsets or []:
        ports = [p.port for p in subset.ports or [] if p.name == name]
        ready += ports * len(subset.addresses or [])
        unready += ports * len(subset.not_ready_addresses or [])
    return sorted(ready), sorted(unready)


def test_a_stopped_replica_is_not_ready_in_the_service_until_it_is_back(
    stack: tuple[Stack, client.ApiClient],
) -> None:
    running, api = stack
    first, second = running.webhook_ports
    assert listed(api) == (sorted([first, second]), [])
    replica = next(c for c in running.services if c.name == "webhook-2")
    assert replica.process is not None
    replica.process.kill()
    replica.process.wait()

    def supervised(expected: tuple[list[int], list[int]]) -> bool:
        running.supervise()
        return listed(api) == expected

    wait_for("the stopped replica listed as not ready",
             lambda: supervised(([first], [second])), 30, lambda: listed(api))
    wait_for("the restarted replica ready again on its port",
             lambda: supervised((sorted([first, second]), [])), 60, lambda: listed(api))
    assert replica.backoff.restarts == 1
    assert listed(api, CONVERSION) == (sorted(running.conversion_ports), [])
