"""Held readiness conditions gate a service's first readiness only (the webhook's NATS link)."""

from __future__ import annotations

from spreadbus.runtime.health import ReadinessGate


def test_a_held_condition_gates_the_first_readiness() -> None:
    gate = ReadinessGate("nats", "caught_up", held=("nats",))
    gate.set("caught_up", True)
    assert not gate.ready, "not ready before NATS was ever connected"
    gate.set("nats", True)
    assert gate.ready


def test_once_ready_a_held_condition_dropping_leaves_the_service_ready_and_shows() -> None:
    gate = ReadinessGate("nats", "caught_up", held=("nats",))
    gate.set("nats", True)
    gate.set("caught_up", True)
    gate.set("nats", False)
    assert gate.ready
    assert gate.conditions == {"nats": False, "caught_up": True}


def test_a_condition_not_held_still_takes_a_ready_service_out() -> None:
    gate = ReadinessGate("nats", "caught_up", held=("nats",))
    gate.set("nats", True)
    gate.set("caught_up", True)
    gate.set("caught_up", False)
    assert not gate.ready
    gate.set("caught_up", True)
    assert gate.ready


def test_without_held_conditions_readiness_follows_every_condition() -> None:
    gate = ReadinessGate("nats")
    gate.set("nats", True)
    gate.set("nats", False)
    assert not gate.ready


def test_first_ready_runs_once_across_held_drops() -> None:
    calls: list[int] = []
    gate = ReadinessGate("nats", held=("nats",), on_first_ready=lambda: calls.append(1))
    gate.set("nats", True)
    gate.set("nats", False)
    gate.set("nats", True)
    assert calls == [1]
