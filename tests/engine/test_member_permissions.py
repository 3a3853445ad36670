"""A member's users are allowed only the member's cluster-scoped subjects, and the hub's users
are denied the member's plan consumer (the server-side test is
tests/backbone/test_member_users_may_do_only_their_part.py)."""

from __future__ import annotations

import pytest

from events import subjects
from spreadbus.engine.feature_set import bus_accesses
from spreadbus.features.registry import BUILTIN
from spreadbus.runtime.bus_permissions import READER, USERS, permissions
from spreadbus.runtime.member_permissions import (
    MEMBER_SERVICES,
    member_permissions,
    member_users,
    scoped,
)

ROOTS = (subjects.OBSERVATIONS, subjects.SYNC, subjects.PLANS, subjects.OUTCOMES,
         subjects.ADMISSIONS, f"{subjects.HISTORY}.pod", f"{subjects.HISTORY}.status")


def test_cluster_rooted_subjects_are_narrowed_to_the_member() -> None:
    assert scoped("kube.obs.>", "east") == ["kube.obs.east.>"]
    assert scoped("history.>", "east") == ["history.pod.east.>", "history.status.east.>"]
    assert scoped("webhook.spreads.>", "east") == ["webhook.spreads.>"]
    assert scoped("kube.obs.>", "a.b") == ["kube.obs.a%2Eb.>"]


@pytest.mark.parametrize("service", MEMBER_SERVICES)
def test_every_cluster_rooted_subject_a_member_publishes_is_its_own(service: str) -> None:
    allowed = member_permissions("east", service, bus_accesses(BUILTIN),
                                 clusters=["host", "west"])["publish"]["allow"]
    rooted = [s for s in allowed if s.startswith(tuple(f"{r}." for r in ROOTS))]
    assert rooted, allowed
    assert all(any(s.startswith(f"{r}.east.") for r in ROOTS) for s in rooted), rooted
    assert not any(s.endswith(("PLANS.*", "DURABLE.CREATE.PLANS.actuator-east"))
                   for s in allowed)


def test_the_member_users_are_named_for_it() -> None:
    assert member_users("east") == {"east-watcher": "watcher", "east-actuator": "actuator",
                                    "east-webhook": "webhook"}


@pytest.mark.parametrize("user", [u for u in USERS if u != "setup"])
def test_hub_users_are_denied_the_members_plan_consumer(user: str) -> None:
    denied = permissions(user, bus_accesses(BUILTIN), clusters=["host"],
                         members=["east"])["publish"]["deny"]
    assert "$JS.API.CONSUMER.MSG.NEXT.PLANS.actuator-east" in denied
    if user == READER:
        assert "$JS.API.CONSUMER.CREATE.PLANS.actuator-east.>" in denied
