"""``spreadbus up`` end to end through real processes: kubectl, watcher, planner, actuator."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client, config

from events.messages import Observation, Outcome, Plan
from spreadbus.cli.data_dir_lock import DataDirLock
from spreadbus.cli.local_stack import bus_options
from spreadbus.runtime.bus_permissions import USERS
from spreadbus.runtime.parent_death import die_with_parent
from tests.backbone.bus_recording import KubeRecorder, last_seq, read_stream
from tests.fixtures.generation_feature import PLUGIN as GENERATION_PLUGIN
from tests.fixtures.observed_generation import ANNOTATION, written_value
from tests.fixtures.polling import wait_until

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = Path(sys.executable).parent / "kubectl"
T = TypeVar("T")

pytestmark = pytest.mark.e2e

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx
"""


def children_of(pid: int) -> set[int]:
    """Every live descendant of ``pid``, from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def secret_files(data_dir: Path) -> dict[str, int]:
    """The mode of every file of ``data_dir`` that holds a token, a key or a seed."""
    return {
        str(path.relative_to(data_dir)): stat.S_IMODE(path.stat().st_mode)
        for path in data_dir.rglob("*")
        if path.is_file() and (path.name == "kubeconfig" or path.suffix in (".key", ".nk"))
    }


def while_up(proc: subprocess.Popen[str], check: Callable[[], T | None]) -> Callable[[], T | None]:
    """``check``, failing at once instead of waiting on when ``spreadbus up`` has exited."""

    def checked() -> T | None:
        if proc.poll() is not None:
            raise AssertionError(f"spreadbus up exited with code {proc.returncode}")
        return check()

    return checked


def start_up(data_dir: Path, log_path: Path) -> subprocess.Popen[str]:
    with log_path.open("w") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "spreadbus", "up", "--data-dir", str(data_dir)],
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
            # The test feature makes the chain visible: every Deployment gets its generation.
            env={**os.environ, "SPREADBUS_FEATURE_PLUGINS": GENERATION_PLUGIN},
            preexec_fn=die_with_parent(),
        )


def tear_down(proc: subprocess.Popen[str], known: AbstractSet[int] = frozenset()) -> None:
    """Stop ``spreadbus up`` as an operator would, then make sure nothing it started is left."""
    # Collected while it still runs: once it is gone its children belong to PID 1.
    descendants = children_of(proc.pid) | known
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for pid in descendants | children_of(proc.pid):
        if alive(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path, Path]]:
    data_dir = tmp_path / "stack"
    log_path = tmp_path / "up.log"
    proc = start_up(data_dir, log_path)
    try:
        yield proc, data_dir, log_path
    finally:
        tear_down(proc)


def create_and_annotate(
    proc: subprocess.Popen[str], kubeconfig: Path, nats_url: str, recorder: KubeRecorder,
    reader: dict[str, Any],
) -> list[tuple[int, Any]]:
    """Create the Deployment, wait for its annotation; what ``KUBE`` carried meanwhile.

    ``KUBE`` keeps only each object's latest observation, so the observations a plan names
    as its causes are taken from the recorder, which saw every one go by.
    """
    created = subprocess.run(
        [str(KUBECTL), f"--kubeconfig={kubeconfig}", "apply", "-f", "-"],
        input=DEPLOYMENT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr

    api = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    try:
        apps = client.AppsV1Api(api)

        def annotated() -> dict[str, str] | None:
            metadata = apps.read_namespaced_deployment("web", "default").metadata
            assert metadata is not None
            annotations = metadata.annotations or {}
            if annotations.get(ANNOTATION) == str(metadata.generation):
                return dict(annotations)
            return None

        wait_until(
            while_up(proc, annotated),
            what="the observed-generation annotation",
            timeout=60,
            interval=0.2,
        )
    finally:
        api.close()
    published = asyncio.run(last_seq(nats_url, "KUBE", **reader))
    wait_until(lambda: recorder.last_seq >= published, what=f"KUBE recorded up to {published}")
    return recorder.messages()


def test_a_deployment_created_with_kubectl_gets_its_annotation_through_the_bus(
    stack: tuple[subprocess.Popen[str], Path, Path],
) -> None:
    proc, data_dir, log_path = stack
    kubeconfig = data_dir / "kubeconfig"
    wait_until(
        while_up(proc, kubeconfig.exists), what="the stack to be ready", timeout=150, interval=0.2
    )
    nats_url = (data_dir / "nats-url").read_text().strip()
    descendants = children_of(proc.pid)
    assert len(descendants) >= 6, "nats-server, kubesim and four services"
    assert secret_files(data_dir) == {
        "kubeconfig": 0o600, "run/kubeconfig": 0o600, "tls/ca.key": 0o600,
        "tls/webhook.key": 0o600, "tls/apiserver-client.key": 0o600, "tls/nats.key": 0o600,
        **{f"credentials/{user}.nk": 0o600 for user in USERS},
    }
    with KubeRecorder(nats_url, **bus_options(data_dir)) as recorder:
        history = create_and_annotate(proc, kubeconfig, nats_url, recorder,
                                      bus_options(data_dir))

    observations = [(seq, o) for seq, o in history if isinstance(o, Observation)]
    deployment_seqs = {
        seq
        for seq, o in observations
        if o.resource == "deployments" and o.object["metadata"]["name"] == "web"
    }
    reader = bus_options(data_dir)
    plans = [p for _, p in asyncio.run(read_stream(nats_url, "PLANS", **reader))
             if isinstance(p, Plan)]
    web_plans = [p for p in plans if p.target.name == "web" and p.target.resource == "deployments"]

    def every_plan_answered() -> list[Outcome] | None:
        # A plan published just before PLANS was read may still be with the actuator.
        outcomes = [
            o for _, o in asyncio.run(read_stream(nats_url, "OUTCOMES", **reader))
            if isinstance(o, Outcome)
        ]
        answered = {o.plan_id for o in outcomes}
        return outcomes if all(p.id in answered for p in web_plans) else None

    assert web_plans, "the planner published a plan for the deployment"
    outcomes = wait_until(every_plan_answered, what="an outcome for every plan", timeout=30)
    # The plan tests the generation it writes instead of pinning the resourceVersion, so the
    # controller's status updates in between do not make it fail: every plan of this rule has
    # exactly one outcome and is applied, or skipped as already true.
    for plan in web_plans:
        assert set(plan.causes) <= deployment_seqs | {s for s, _ in observations}
        assert set(plan.causes) & deployment_seqs, "the plan names the observation behind it"
        assert plan.patch[0] == {"op": "test", "path": "/metadata/generation",
                                 "value": int(written_value(plan.patch) or 0)}
        (outcome,) = [o for o in outcomes if o.plan_id == plan.id]
        assert outcome.result in ("applied", "skipped"), outcome.error

    # A second stack on the same directory is refused and leaves the first one reachable.
    second = subprocess.run(
        [sys.executable, "-m", "spreadbus", "up", "--data-dir", str(data_dir)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
        preexec_fn=die_with_parent(),
    )
    assert second.returncode == 2, second.stderr
    assert f"is in use by process {proc.pid}" in second.stderr
    assert kubeconfig.exists()
    assert (data_dir / "nats-url").read_text().strip() == nats_url

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    assert not kubeconfig.exists(), "the ready files are removed on shutdown"
    still = [pid for pid in descendants if alive(pid)]
    assert still == [], f"children left running: {still}"
    printed = log_path.read_text()
    assert f"kubeconfig: {kubeconfig}" in printed
    assert f"nats-url:   {nats_url}" in printed
    for service in ("watcher", "planner", "actuator", "webhook"):
        assert re.search(rf"^  {service} +ready ", printed, re.MULTILINE), service


def test_everything_spreadbus_up_started_exits_when_it_is_killed(tmp_path: Path) -> None:
    proc = start_up(tmp_path / "stack", tmp_path / "up.log")
    descendants: set[int] = set()
    try:
        # nats-server, kubesim and the four services: SIGKILL skips every orderly stop.
        def all_started() -> set[int] | None:
            found = children_of(proc.pid)
            return found if len(found) >= 6 else None

        descendants = wait_until(
            while_up(proc, all_started), what="every child to start", timeout=150, interval=0.2
        )
        proc.kill()
        proc.wait()
        wait_until(
            lambda: not any(alive(pid) for pid in descendants),
            what=f"every child of the killed spreadbus up ({sorted(descendants)}) to exit",
            timeout=30,
            interval=0.2,
        )
        lock = DataDirLock(tmp_path / "stack")
        lock.acquire()  # the kernel let go of the killed stack's lock
        lock.release()
    finally:
        tear_down(proc, descendants)
