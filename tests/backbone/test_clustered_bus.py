"""The bus on a three-node JetStream cluster: every stream and bucket at three replicas, no
acknowledged message lost when a server dies by SIGKILL (a random one at a seeded moment, then
the stream's leader chosen on purpose), compare-and-set ledgers exact across the leader change
(each transaction applied at most once, every acknowledged one kept, the cap never passed), and
the killed server back and caught up with the others.

Clients are given every server's URL, as the services are, and carry on through the others.
``make test`` kills the leader; ``make chaos`` a random server too.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable, Sequence

import msgspec
import nats
import pytest
from nats.aio.client import Client
from nats.errors import Error as NatsError
from nats.js.client import JetStreamContext
from nats.js.errors import Error as JetStreamError
from nats.js.errors import ServiceUnavailableError

from events.streams import KUBE
from spreadbus.runtime.bus_layout import kv_stream, object_stream
from spreadbus.runtime.follower import StreamFollower
from spreadbus.runtime.ledger import EntryCodec, LedgerStore
from spreadbus.runtime.nats_cluster import NatsCluster
from spreadbus.runtime.nats_server import NatsServer
from tests.fixtures.bus_setup import default_layout
from tests.fixtures.fault_injection import fault_seed, replay_hint
from tests.fixtures.nats_cluster import REPLICAS, caught_up, server_name, stream_leader
from tests.fixtures.polling import wait_until_async

pytestmark = [pytest.mark.e2e, pytest.mark.chaos]

MESSAGES = 300
CATCH_UP_SECONDS = 1.0
"""How long the webhook waits for its view to reach a reservation floor before asking whether
its observation stream is drained (``catch_up_timeout``)."""
SLOTS = 60
"""The ledger's cap: a budget of this many slots, spent by three writers asking for more."""


async def connect(cluster: NatsCluster, first: int = 0) -> Client:
    """A client given every server's URL, the ``first`` tried first."""
    urls = cluster.urls[first:] + cluster.urls[:first]
    return await nats.connect(urls, dont_randomize=True, max_reconnect_attempts=-1,
                              reconnect_time_wait=0.1, connect_timeout=1)


async def until_caught_up(cluster: NatsCluster, timeout: float = 60.0) -> dict[str, int]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (found := await asyncio.to_thread(caught_up, cluster)) is None:
        assert loop.time() < deadline, "the restarted server did not catch up"
        await asyncio.sleep(0.1)
    return found


async def until(check: Callable[[], bool], timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        if check():
            return
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)


def victim(cluster: NatsCluster, stream: str, *, leader: bool, rng: random.Random) -> NatsServer:
    if leader:
        found = stream_leader(cluster, stream)
        assert found is not None, f"{stream} has a leader"
        return found
    return rng.choice(cluster.servers)


async def test_every_stream_and_bucket_has_three_replicas(nats_cluster: NatsCluster) -> None:
    layout = default_layout()
    names = ([s.name for s in layout.streams] + [kv_stream(b.name) for b in layout.buckets]
             + [object_stream(o) for o in layout.object_stores])
    nc = await connect(nats_cluster)
    try:
        js = nc.jetstream()
        for name in names:
            info = await js.stream_info(name)
            assert info.config.num_replicas == REPLICAS, name
            assert info.cluster is not None, name
            assert info.cluster.leader, name
            assert len(info.cluster.replicas or []) == REPLICAS - 1, name
    finally:
        await nc.close()


async def publish_through(js: nats.js.JetStreamContext, count: int, kill_after: int,
                          kill: asyncio.Event) -> dict[int, bytes]:
    """Publish ``count`` distinct messages, each retried with its id until acknowledged;
    ``kill`` is set after ``kill_after`` acknowledgements. Stream sequence -> payload acked."""
    acked: dict[int, bytes] = {}
    for i in range(count):
        payload = json.dumps({"n": i}).encode()
        while True:
            try:
                ack = await js.publish(f"kube.obs.c1.core.pods.ns.p{i}", payload, timeout=1,
                                       headers={"Nats-Msg-Id": f"p{i}"})
                break
            except (NatsError, JetStreamError, TimeoutError):
                await asyncio.sleep(0.05)
        assert ack.seq not in acked, f"sequence {ack.seq} acknowledged twice"
        acked[ack.seq] = payload
        if len(acked) == kill_after:
            kill.set()
    return acked


async def read_when_served(js: JetStreamContext, seq: int) -> bytes:
    """A stored message, read once the stream serves reads again: right after its leader died,
    the server answers 503 (JetStream temporarily unavailable) until the new leader is current."""

    async def read() -> bytes | None:
        try:
            return (await js.get_msg(KUBE.name, seq)).data
        except (ServiceUnavailableError, TimeoutError):
            return None

    data: bytes = await wait_until_async(read, what=f"KUBE to serve message {seq}")
    return data


@pytest.mark.parametrize("leader", [
    pytest.param(False, id="random-server", marks=pytest.mark.chaos_only),
    pytest.param(True, id="stream-leader"),
])
async def test_no_acknowledged_message_is_lost_when_a_server_dies(
    nats_cluster: NatsCluster, leader: bool
) -> None:
    seed = fault_seed()
    print(replay_hint(seed))
    rng = random.Random(seed)
    kill_after = rng.randrange(MESSAGES // 10, MESSAGES // 2)
    killed = victim(nats_cluster, KUBE.name, leader=leader, rng=rng)
    print(f"killing {server_name(killed)} after {kill_after} acknowledgements")
    nc = await connect(nats_cluster, first=nats_cluster.servers.index(killed))
    try:
        js = nc.jetstream(timeout=1)
        kill = asyncio.Event()
        publishing = asyncio.create_task(publish_through(js, MESSAGES, kill_after, kill))
        await kill.wait()
        killed.kill()
        acked = await publishing
        if leader:
            now = stream_leader(nats_cluster, KUBE.name)
            assert now is not None, "a leader after the kill"
            assert now is not killed, "another server leads the stream"
        stored = {}
        for seq in acked:
            stored[seq] = await read_when_served(js, seq)
        assert stored == acked, "a stored message differs from the one acknowledged"
        assert len({json.loads(p)["n"] for p in acked.values()}) == MESSAGES
        assert max(acked) == len(acked), "no sequence skipped and none acknowledged twice"
        await asyncio.to_thread(killed.restart)
        sequences = await until_caught_up(nats_cluster)
        assert sequences[KUBE.name] == MESSAGES
    finally:
        await nc.close()


Spent = tuple[str, ...]
"""The ledger entry: the tokens of the transactions that spent a slot, in order."""
class SpentCodec:
    def empty(self) -> Spent:
        return ()

    def encode(self, spent: Spent, /) -> bytes:
        return msgspec.json.encode(list(spent))

    def decode(self, raw: bytes | None, /) -> Spent:
        return tuple(msgspec.json.decode(raw or b"[]", type=list[str]))


CODEC: EntryCodec[Spent] = SpentCodec()


def spend(token: str) -> object:
    def decide(spent: Spent) -> tuple[bool, Spent | None]:
        if token in spent:
            return True, None
        if len(spent) >= SLOTS:
            return False, None
        return True, (*spent, token)
    return decide


async def spender(store: LedgerStore[Spent], writer: int, asks: int, granted: list[str],
                  unknown: list[str], failures: list[str], kill: tuple[int, asyncio.Event]
                  ) -> None:
    """Ask for ``asks`` slots, one at a time; a transaction that raised may or may not have
    been committed (its answer was lost), so it is ``unknown``. ``kill``'s event is set once
    its number of slots is granted."""
    for i in range(asks):
        token = f"w{writer}-{i}"
        try:
            if await store.transact("budget", spend(token)):  # type: ignore[arg-type]
                granted.append(token)
                if len(granted) >= kill[0]:
                    kill[1].set()
        except Exception as exc:
            unknown.append(token)
            failures.append(type(exc).__name__)
            await asyncio.sleep(0.05)


@pytest.mark.parametrize("leader", [
    pytest.param(False, id="random-server", marks=pytest.mark.chaos_only),
    pytest.param(True, id="bucket-leader"),
])
async def test_a_compare_and_set_ledger_stays_exact_across_a_leader_change(
    nats_cluster: NatsCluster, leader: bool
) -> None:
    seed = fault_seed()
    print(replay_hint(seed))
    rng = random.Random(seed)
    bucket = next(b.name for b in default_layout().buckets if "reserv" in b.name.lower()
                  or "budget" in b.name.lower())
    killed = victim(nats_cluster, kv_stream(bucket), leader=leader, rng=rng)
    clients: Sequence[Client] = [await connect(nats_cluster, first=i) for i in range(REPLICAS)]
    try:
        stores = [LedgerStore((await c.jetstream(timeout=1).key_value(bucket)), CODEC)
                  for c in clients]
        granted: list[str] = []
        unknown: list[str] = []
        failures: list[str] = []
        asks = SLOTS  # three writers asking for a budget of SLOTS each: most are refused
        kill = (rng.randrange(2, SLOTS // 2), asyncio.Event())
        print(f"killing {server_name(killed)} of {bucket} after {kill[0]} slots granted")
        writers = [asyncio.create_task(spender(s, w, asks, granted, unknown, failures, kill))
                   for w, s in enumerate(stores)]
        await kill[1].wait()  # the seeded moment, while the writers spend
        killed.kill()
        await asyncio.gather(*writers)
        final = await stores[0].current("budget")
        print(f"granted {len(granted)}, unknown {len(unknown)} ({set(failures)}), "
              f"spent {len(final)}")
        assert len(final) == len(set(final)), "a transaction was applied twice"
        assert len(final) <= SLOTS, "the budget was overspent"
        assert set(granted) <= set(final), "an acknowledged transaction was lost"
        assert set(final) <= set(granted) | set(unknown), "a slot spent by no one"
        assert len(final) == SLOTS, "the writers spent the whole budget"
        await asyncio.to_thread(killed.restart)
        await until_caught_up(nats_cluster)
    finally:
        for c in clients:
            await c.close()


async def test_a_follower_whose_consumer_died_with_its_server_is_never_drained_while_behind(
    nats_cluster: NatsCluster,
) -> None:
    """A decision that rests on "the view has read everything" (the webhook's reservation
    floor) must not be told so by a consumer that died with its server: whenever the follower
    says it is drained, it has read every message acknowledged before."""
    nc = await connect(nats_cluster)
    publisher = await connect(nats_cluster, first=1)
    follower = StreamFollower(nc, stream=KUBE.name, sink=lambda seq, subject, data: None,
                              name="drained-probe")
    following = asyncio.create_task(follower.run())
    try:
        js = publisher.jetstream(timeout=1)
        kill = asyncio.Event()
        acked = await publish_through(js, 20, 0, kill)
        await until(lambda: follower.drained() and follower.last_seq == max(acked))
        (consumer,) = await nc.jetstream().consumers_info(KUBE.name)
        assert consumer.cluster is not None
        host = next(s for s in nats_cluster.servers if server_name(s) == consumer.cluster.leader)
        print(f"the follower's consumer lives on {consumer.cluster.leader}; killing it")
        host.kill()
        loop = asyncio.get_running_loop()
        published: list[tuple[float, int]] = []  # (when acknowledged, sequence)

        def honest() -> bool:
            """Drained only with every message acknowledged a catch-up wait ago read."""
            drained = follower.drained()
            settled = [seq for at, seq in published if loop.time() - at > CATCH_UP_SECONDS]
            assert not drained or not settled or follower.last_seq >= max(settled), (
                f"drained at {follower.last_seq} while {max(settled)} was acknowledged "
                f"{CATCH_UP_SECONDS} s before")
            return drained

        for i in range(20, 80):
            while True:
                try:
                    ack = await js.publish(f"kube.obs.c1.core.pods.ns.q{i}", b"{}", timeout=1)
                    break
                except (NatsError, JetStreamError, TimeoutError):
                    honest()
                    await asyncio.sleep(0.05)
            published.append((loop.time(), ack.seq))
            honest()
            await asyncio.sleep(0.05)  # a steady trickle, as a watcher's
        await until(lambda: honest() and follower.last_seq == published[-1][1])
    finally:
        follower.stop()
        await following
        await publisher.close()
        await nc.close()
