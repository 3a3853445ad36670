"""The admission answer waits for nothing it does not need, and says what it could not compute."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from nats.aio.client import Client

from events.codec import decode
from events.messages import Admission
from spreadbus.cli import main
from spreadbus.features.workloadspread.admission.admission import SpreadAdmission
from spreadbus.features.workloadspread.admission.view import View
from spreadbus.features.workloadspread.admission.view_progress import ViewProgress
from tests.webhook.admission_reviews import request
from tests.workloadspread.webhook.cluster_state import (
    Feed,
    deployment,
    new_pod,
    replicaset,
    spread,
    synced_feed,
    zone_subset,
)
from tests.workloadspread.webhook.spread_admission import spread_admission

BROKEN_PATH = "spec.template.spec.nope"


async def test_progress_notifications_schedule_nothing_and_wake_every_waiter() -> None:
    view = View(cluster="c1")
    progress = ViewProgress(view)
    waiters = [asyncio.create_task(progress.wait_for(3, timeout=30)) for _ in range(3)]
    await asyncio.sleep(0)
    tasks_before = len(asyncio.all_tasks())
    for seq in (1, 2):
        view.seq = seq
        progress.notify()
    assert len(asyncio.all_tasks()) == tasks_before, "a notification must not start a task"
    await asyncio.sleep(0)
    assert not any(w.done() for w in waiters), "sequence 2 does not satisfy a wait for 3"
    view.seq = 3
    progress.notify()
    assert await asyncio.gather(*waiters) == [True, True, True]
    assert await progress.wait_for(4, timeout=0.01) is False


async def test_waiting_for_more_of_the_view_gives_up_only_once_the_deadline_passed() -> None:
    view = View(cluster="c1")
    progress = ViewProgress(view)
    loop = asyncio.get_running_loop()
    assert await progress.wait_for_more(loop.time() - 1) is False
    waiting = asyncio.create_task(progress.wait_for_more(loop.time() + 30))
    await asyncio.sleep(0)
    assert not waiting.done()
    view.seq = 1
    progress.notify()
    for _ in range(20):
        if waiting.done():
            break
        await asyncio.sleep(0)
    assert waiting.done(), "a notification wakes the waiter at once"
    assert waiting.result() is True


@pytest.fixture
async def admission(nats_client: Client) -> SpreadAdmission:
    feed = synced_feed()
    feed.put(deployment(replicas=4))
    feed.put(replicaset())
    feed.put(spread([zone_subset("zone-a", "50%"), zone_subset("zone-b")]))
    return await spread_admission(feed.view, nats_client)


async def test_the_answer_is_given_before_its_admission_event_is_published(
    admission: SpreadAdmission,
) -> None:
    assert admission.nc is not None
    sub = await admission.nc.subscribe("admission.>")
    body = request(operation="CREATE", resource="pods", obj=new_pod())
    answer = await admission.mutate_pod(body)
    assert answer["response"]["allowed"] is True
    assert admission.announcements.pending == 1, "the publication is still under way"
    await admission.announcements.drain(timeout=5)
    assert admission.announcements.pending == 0
    event = decode((await sub.next_msg(timeout=5)).data)
    assert isinstance(event, Admission)
    assert (event.subset, event.request_uid) == ("zone-a", body.uid)


async def test_a_burst_of_admission_events_is_published_whole_and_in_order(
    admission: SpreadAdmission,
) -> None:
    assert admission.nc is not None
    sub = await admission.nc.subscribe("admission.>")
    bodies = [request(operation="CREATE", resource="pods", obj=new_pod()) for _ in range(20)]
    for body in bodies:
        admission.announcements.announce(body, "ws", "zone-a", "key")
    await admission.announcements.drain(timeout=5)
    received = [decode((await sub.next_msg(timeout=5)).data) for _ in bodies]
    assert [e.request_uid for e in received if isinstance(e, Admission)] == [
        body.uid for body in bodies
    ]


async def test_a_stop_publishes_the_gathered_admission_events_at_once_and_in_order(
    admission: SpreadAdmission,
) -> None:
    assert admission.nc is not None
    announcements = admission.announcements
    announcements.batch_seconds = 600.0  # a batch that would outlast the drain's bound
    sub = await admission.nc.subscribe("admission.>")
    bodies = [request(operation="CREATE", resource="pods", obj=new_pod()) for _ in range(5)]
    for body in bodies:
        announcements.announce(body, "ws", "zone-a", "key")
    for _ in range(10):
        await asyncio.sleep(0)
    assert announcements.pending == len(bodies), "the batch is still gathering"
    await announcements.drain(timeout=5)
    assert (announcements.pending, announcements.dropped) == (0, 0)
    received = [decode((await sub.next_msg(timeout=5)).data) for _ in bodies]
    assert [e.request_uid for e in received if isinstance(e, Admission)] == [
        body.uid for body in bodies
    ]
    late = request(operation="CREATE", resource="pods", obj=new_pod())
    announcements.announce(late, "ws", "zone-a", "key")
    await announcements.drain(timeout=5)
    event = decode((await sub.next_msg(timeout=5)).data)
    assert isinstance(event, Admission)
    assert event.request_uid == late.uid


async def test_admission_events_beyond_the_bound_are_dropped_and_counted(
    admission: SpreadAdmission,
) -> None:
    admission.announcements.max_pending = 2
    body = request(operation="CREATE", resource="pods", obj=new_pod())
    for _ in range(5):
        admission.announcements.announce(body, "ws", "zone-a", "key")
    assert admission.announcements.pending == 2
    assert admission.announcements.dropped == 3
    await admission.announcements.drain(timeout=5)
    assert admission.announcements.pending == 0


def _with_broken_path(body: dict[str, Any]) -> dict[str, Any]:
    body["spec"]["targetFilter"] = {
        "selector": {"matchLabels": {"app": "web"}},
        "replicasPathList": ["spec.replicas", BROKEN_PATH],
    }
    return body


async def test_a_replicas_path_that_does_not_resolve_is_a_warning_naming_the_field(
    admission: SpreadAdmission, caplog: pytest.LogCaptureFixture
) -> None:
    Feed(admission.view).put(
        _with_broken_path(spread([zone_subset("zone-a", "50%"), zone_subset("zone-b")])),
        "MODIFIED",
    )
    logger = "spreadbus.features.workloadspread.admission.admission"
    with caplog.at_level(logging.WARNING, logger=logger):
        answer = await admission.mutate_pod(
            request(operation="CREATE", resource="pods", obj=new_pod())
        )
    response = answer["response"]
    assert response["allowed"] is True
    [warning] = response["warnings"]
    assert "spec.targetFilter.replicasPathList[1]" in warning
    assert BROKEN_PATH in warning
    fields = [getattr(r, "field", None) for r in caplog.records]
    assert "spec.targetFilter.replicasPathList[1]" in fields


def test_the_offline_answer_refuses_a_replicas_path_that_does_not_resolve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = _with_broken_path(spread([zone_subset("zone-a", "50%"), zone_subset("zone-b")]))
    objects = tmp_path / "objects.yaml"
    objects.write_text(yaml.safe_dump_all([ws, deployment(replicas=4), replicaset()]))
    pod_file = tmp_path / "pod.yaml"
    pod_file.write_text(yaml.safe_dump(new_pod()))
    code = main(["admit", "-f", str(objects), "--pod", str(pod_file), "-o", "json"])
    captured = capsys.readouterr()
    assert code == 2
    answer = json.loads(captured.out)
    assert "spec.targetFilter.replicasPathList[1]" in answer["error"]
    assert "spec.targetFilter.replicasPathList[1]" in captured.err
    assert BROKEN_PATH in captured.err
