"""500 pods created at once through three webhook replicas never overfill a subset.

The stack runs three webhook processes behind the one webhook Service (its Endpoints list a port
each) and kubesim spreads the admission calls over them, as an API server does over a Service's
ready endpoints. Every replica decides from its own view of the bus and reserves slots in the
shared ledger by compare-and-set; the limited subsets (150 + 150) sum below the 500 replicas, so
every admission near the limits races the other replicas for the last slots.
"""

from __future__ import annotations

import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from spreadbus.cli.local_stack import Stack
from tests.fixtures.apiserver_metrics import failed_open
from tests.workloadspread_e2e.stack import (
    create_spread,
    deployment,
    live_pods,
    node_zones,
    running_stack,
    split,
    spread,
    wait_for,
    zone_subset,
)

pytestmark = pytest.mark.e2e
NS = "burst"
REPLICAS = 500
LIMITS = {"zone-a": 150, "zone-b": 150}
STEERED = "spreadbus_webhook_pods_steered"


WORKLOADSPREAD = spread("ws-burst", "burst", [
    zone_subset("zone-a", "zone-a", 150), zone_subset("zone-b", "zone-b", 150),
    zone_subset("zone-c", "zone-c"),
])


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, client.ApiClient]]:
    data_dir: Path = tmp_path_factory.mktemp("burst-stack")
    with running_stack(data_dir, "three-zones", {}, webhook_replicas=3) as running:
        yield running


def steered_by(stack: Stack) -> dict[str, float]:
    """Each webhook replica's count of pods it steered, from its /metrics."""
    out: dict[str, float] = {}
    for child in stack.services:
        if not child.name.startswith("webhook"):
            continue
        url = f"http://127.0.0.1:{child.health_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            text = response.read().decode()
        values = [float(line.split()[-1]) for line in text.splitlines()
                  if line.startswith(STEERED + " ")]
        out[child.name] = values[0] if values else 0.0
    return out


def test_500_pods_created_at_once_through_three_webhooks_never_overfill_a_subset(
    stack: tuple[Stack, client.ApiClient],
) -> None:
    running, api = stack
    assert [c.name for c in running.services if c.name.startswith("webhook")] == [
        "webhook", "webhook-2", "webhook-3"]
    create_spread(api, NS, WORKLOADSPREAD)
    apps: Any = client.AppsV1Api(api)
    apps.create_namespaced_deployment(NS, deployment("burst", REPLICAS))

    most: Counter[str] = Counter()

    def landed() -> Any:
        pods = live_pods(api, NS, "burst")
        counts = split(pods)
        for name, count in counts.items():
            most[name] = max(most[name], count)
        over = {name: counts[name] for name, limit in LIMITS.items() if counts[name] > limit}
        assert not over, (f"a subset went over its limit while growing: {dict(counts)}; "
                          f"{failed_open(api, 'mpod.spreadbus.io')} pod creations failed open")
        running_split = split(pods, running=True)
        expected = {**LIMITS, "zone-c": REPLICAS - sum(LIMITS.values())}
        return pods if running_split == expected and len(pods) == REPLICAS else None

    pods = wait_for(f"{REPLICAS} pods running 150/150/200", landed, 90,
                    lambda: split(live_pods(api, NS, "burst")))
    assert all(most[name] <= limit for name, limit in LIMITS.items())
    zones = node_zones(api)
    for pod in pods:
        assert zones[pod.spec.node_name] == (pod.metadata.labels or {})["deploy/zone"]

    steered = steered_by(running)
    assert sorted(steered) == ["webhook", "webhook-2", "webhook-3"]
    assert all(count > 0 for count in steered.values()), f"every replica admitted: {steered}"
    assert sum(steered.values()) >= REPLICAS, steered
