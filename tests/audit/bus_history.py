"""Publishing the audit tests' messages where the services publish them."""

from __future__ import annotations

from nats.aio.client import Client

from events import subjects
from events.codec import encode
from events.messages import Admission, Event, Outcome, Plan, PodLifecycle, StatusChange
from spreadbus.audit.store import STREAM
from tests.fixtures.polling import wait_until_async


def subject_of(event: Event) -> str:
    if isinstance(event, Admission):
        return subjects.admission(event.cluster, event.namespace, event.workload)
    if isinstance(event, Plan | Outcome):
        t = event.target
        make = subjects.plan if isinstance(event, Plan) else subjects.outcome
        return make(event.cluster, event.verb, t.group, t.resource, t.namespace, t.name)
    if isinstance(event, PodLifecycle):
        return subjects.pod_history(event.cluster, event.namespace, event.name)
    if isinstance(event, StatusChange):
        return subjects.status_history(event.cluster, event.group, event.resource,
                                       event.namespace, event.name)
    raise TypeError(type(event))


async def publish_all(nc: Client, events: list[object]) -> None:
    """Each message to its own stream, acknowledged, then wait until HISTORY holds them all."""
    js = nc.jetstream()
    before = (await js.stream_info(STREAM)).state.messages
    for event in events:
        await js.publish(subject_of(event), encode(event))  # type: ignore[arg-type]

    async def copied() -> bool:
        return (await js.stream_info(STREAM)).state.messages >= before + len(events)

    await wait_until_async(copied, what="HISTORY to copy every message", timeout=20)
