"""Property: the audit database is a function of the stream prefix folded, whatever the runs,
batches and redeliveries it took to get there."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from events.codec import encode
from spreadbus.audit.store import AuditStore
from tests.audit.database_files import content
from tests.audit.history_messages import admission, cost_plan, created, outcome, point, status

Message = tuple[int, str, bytes]


def _messages(draws: list[tuple[int, int, int]]) -> list[Message]:
    out: list[Message] = []
    for seq, (kind, pod, value) in enumerate(draws, start=1):
        ts = float(seq)
        if kind == 0:
            body = encode(admission(pod, "fixed" if value % 2 else "elastic", value % 3, ts=ts))
        elif kind == 1:
            body = encode(created(pod, "elastic", ts=ts))
        elif kind == 2:
            body = encode(point(pod, ("bound", "ready", "deleting", "deleted")[value % 4],
                                ts=ts, node=f"n{value}", reason="Evicted" if value % 2 else ""))
        elif kind == 3:
            body = encode(cost_plan(pod, value, ts=ts))
        elif kind == 4:
            body = encode(outcome(cost_plan(pod, value, ts=ts), ts=ts))
        elif kind == 5:
            body = encode(status(value, pod, ts=ts))
        else:
            body = b'{"type":"from-the-future","v":9,"x":%d}' % value
        out.append((seq, "history.x", body))
    return out


drawn = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 4), st.integers(0, 9)),
                 min_size=1, max_size=40)


def fold(path: Path, runs: list[list[Message]]) -> str:
    """Each run opens the store, applies its batches (one per message list), and finishes."""
    for run in runs:
        store = AuditStore(path)
        for start in range(0, len(run), 3):
            store.apply(run[start:start + 3])
        store.finish()
        store.close()
    return hashlib.sha256(content(path)).hexdigest()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn, st.data())
def test_any_prefix_folds_to_one_file_however_it_is_delivered(
    draws: list[tuple[int, int, int]], data: st.DataObject
) -> None:
    messages = _messages(draws)
    cut = data.draw(st.integers(1, len(messages)), label="prefix")
    prefix = messages[:cut]
    # Redelivery: some messages again, anywhere after their first delivery.
    redelivered = list(prefix)
    for _ in range(data.draw(st.integers(0, 5), label="redeliveries")):
        at = data.draw(st.integers(0, len(redelivered)), label="at")
        again = data.draw(st.sampled_from(redelivered[:at] or prefix[:1]), label="again")
        redelivered.insert(at, again)
    split = data.draw(st.integers(0, len(redelivered)), label="split")
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        once = fold(base / "once.db", [prefix])
        assert fold(base / "twice.db", [prefix, prefix]) == once
        assert fold(base / "redelivered.db", [redelivered[:split], redelivered[split:]]) == once
        assert fold(base / "again.db", [prefix]) == once
