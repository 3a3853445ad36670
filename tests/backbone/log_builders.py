"""Build realistic bus logs for the fold tests: (seq, subject, data) as the follower delivers."""

from __future__ import annotations

import random
from typing import Any

from events import codec, subjects
from events.messages import Observation, SyncMarker

Entry = tuple[int, str, bytes]


def deployment(name: str, generation: int, rv: int, annotations: dict[str, str] | None = None,
               namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{namespace}-{name}",
            "generation": generation,
            "resourceVersion": str(rv),
            "annotations": annotations or {},
        },
        "spec": {"replicas": generation},
    }


def observe(obj: dict[str, Any], event: str = "MODIFIED", cluster: str = "c1",
            ts: float = 0.0) -> tuple[str, bytes]:
    meta = obj["metadata"]
    message = Observation(
        cluster=cluster, group="apps", version="v1", resource="deployments",
        event=event, object=obj, ts=ts,  # type: ignore[arg-type]
    )
    subject = subjects.observation(cluster, "apps", "deployments", meta.get("namespace", ""),
                                   meta["name"])
    return subject, codec.encode(message)


def synced(cluster: str = "c1", complete: bool = True) -> tuple[str, bytes]:
    marker = SyncMarker(cluster=cluster, group="apps", version="v1", resource="deployments",
                        complete=complete)
    return subjects.sync(cluster, "apps", "deployments"), codec.encode(marker)


def random_log(seed: int, count: int = 400) -> list[Entry]:
    """Creates, updates and deletes of a few dozen Deployments, with sync markers."""
    rng = random.Random(seed)
    log: list[Entry] = []
    generations: dict[str, int] = {}
    rv = 0
    for seq in range(1, count + 1):
        rv += 1
        name = f"d{rng.randrange(30)}"
        if seq % 97 == 0:
            log.append((seq, *synced()))
            continue
        if name in generations and rng.random() < 0.1:
            del generations[name]
            obj = deployment(name, 1, rv)
            log.append((seq, *observe(obj, "DELETED", ts=float(seq))))
            continue
        generations[name] = generations.get(name, 0) + 1
        obj = deployment(name, generations[name], rv)
        event = "ADDED" if generations[name] == 1 else "MODIFIED"
        log.append((seq, *observe(obj, event, ts=float(seq))))
    return log
