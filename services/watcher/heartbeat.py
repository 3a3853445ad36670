"""The member agent's side of the cluster registry: registration and heartbeats.

- Registration (pull mode, as karmada-agent registers): when the watcher is given the host's
  kubeconfig (``--host-kubeconfig``), it creates its Cluster object in the host once, on its
  first connection, retrying until the host answers. The watcher does it because it is the
  member's first service to talk to its API server and the one that observes; its host
  credential needs only ``create`` on ``clusters`` (a Cluster already there is taken as its own),
  and everything after that (status, taints) is written by the host's actuator from the
  control plane's plans, not with the member's credential.
- Heartbeats: every ``--heartbeat-seconds`` it probes its API server (``/readyz``, then
  ``/version``) and puts the result in the heartbeat bucket under its own cluster's key, which
  its bus user alone may write (:mod:`spreadbus.runtime.member_permissions`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable

from nats.aio.client import Client
from nats.errors import Error as NatsError
from nats.js.errors import Error as JetStreamError

from retrydelay import Backoff
from spreadbus.clusterregistry.cluster_health import ApiServerHealth
from spreadbus.clusterregistry.heartbeat import Heartbeat, encode, heartbeat_subject
from spreadbus.clusterregistry.registration import cluster_object, clusters_path
from spreadbus.runtime.kube_client import Conflict, KubeAPIError, KubeClient, Unreachable
from spreadbus.runtime.shutdown import sleep_unless_stopping

log = logging.getLogger(__name__)

REGISTER_RETRY = Backoff(first=0.5, cap=30.0)
PROBE_TIMEOUT_SECONDS = 5.0


async def register(host: KubeClient, member: str, stopping: asyncio.Event) -> bool:
    """Create the member's Cluster in the host; True once it exists, False if stopped first."""
    failures = 0
    while not stopping.is_set():
        try:
            await host.arequest("POST", clusters_path(), body=cluster_object(member))
            log.info("cluster registered", extra={"cluster": member})
            return True
        except Conflict:
            log.info("cluster already registered", extra={"cluster": member})
            return True
        except KubeAPIError as exc:
            failures += 1
            log.warning("cluster not registered yet", extra={"cluster": member,
                                                             "error": str(exc)})
            if await sleep_unless_stopping(stopping, REGISTER_RETRY.delay(failures)):
                return False
    return False


async def probe(kube: KubeClient, now: Callable[[], float]) -> Heartbeat:
    """What the member's API server answers now."""
    try:
        await kube.arequest("GET", "/readyz", timeout=PROBE_TIMEOUT_SECONDS)
    except Unreachable:
        return Heartbeat(health=ApiServerHealth.UNREACHABLE.value, at=now())
    except KubeAPIError:
        return Heartbeat(health=ApiServerHealth.UNHEALTHY.value, at=now())
    version = ""
    try:
        answer = json.loads(await kube.arequest("GET", "/version",
                                                timeout=PROBE_TIMEOUT_SECONDS))
        version = str(answer.get("gitVersion") or "") if isinstance(answer, dict) else ""
    except (KubeAPIError, ValueError):
        pass
    return Heartbeat(health=ApiServerHealth.HEALTHY.value, at=now(), kubernetesVersion=version)


async def beat_forever(nc: Client, kube: KubeClient, member: str, stopping: asyncio.Event, *,
                       every: float, now: Callable[[], float] = time.time) -> None:
    """One heartbeat every ``every`` seconds until stopping; a put the bus refuses is logged
    and the next one tries again (a missed heartbeat is what the grace period is for)."""
    js = nc.jetstream()
    subject = heartbeat_subject(member)
    while True:
        beat = await probe(kube, now)
        try:
            await js.publish(subject, encode(beat))
        except (NatsError, JetStreamError, TimeoutError) as exc:
            log.warning("heartbeat not sent", extra={"cluster": member, "error": repr(exc)})
        if await sleep_unless_stopping(stopping, every):
            return
