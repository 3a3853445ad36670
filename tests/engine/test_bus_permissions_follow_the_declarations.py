"""Each bus user's permissions are what the services and features declare, and no more."""

from __future__ import annotations

import re
from typing import Any

import pytest

from spreadbus.engine.bus_access import BusAccess
from spreadbus.engine.feature_set import bus_accesses
from spreadbus.features.registry import BUILTIN
from spreadbus.runtime.bus_permissions import (
    READER,
    SERVICES,
    SETUP,
    USERS,
    actuator_consumer,
    consumer_use,
    message_roots,
    permissions,
)

TOKEN = re.compile(r"^(\*|>|[^\s.*>]+)$")
DATA = ("kube.obs.>", "kube.sync.>", "plan.>", "outcome.>", "admission.>")


CLUSTERS = ("c1", "c2")


def allowed(user: str, kind: str, features: Any = None) -> list[str]:
    chosen = bus_accesses(BUILTIN) if features is None else features
    result: list[str] = permissions(user, chosen, clusters=CLUSTERS)[kind]["allow"]
    return result


def denied(user: str) -> list[str]:
    result: list[str] = permissions(user, bus_accesses(BUILTIN),
                                    clusters=CLUSTERS)["publish"].get("deny", [])
    return result


@pytest.mark.parametrize("user", USERS)
def test_every_permission_is_a_valid_subject_pattern_listed_once(user: str) -> None:
    for subjects in (allowed(user, "publish"), allowed(user, "subscribe"), denied(user)):
        assert len(subjects) == len(set(subjects))
        for subject in subjects:
            tokens = subject.split(".")
            assert all(TOKEN.match(t) for t in tokens), subject
            assert ">" not in tokens[:-1], subject


def test_each_message_subject_has_exactly_one_publisher() -> None:
    publishers = {subject: [u for u in USERS if subject in allowed(u, "publish")]
                  for subject in DATA}
    assert publishers == {
        "kube.obs.>": ["watcher"], "kube.sync.>": ["watcher"], "plan.>": ["planner"],
        "outcome.>": ["actuator"], "admission.>": ["webhook"],
    }


def test_the_reader_publishes_only_jetstream_reads_and_subscribes_to_every_message() -> None:
    for subject in allowed(READER, "publish"):
        assert subject.startswith(("$JS.API.", "$JS.ACK.", "$JS.FC.")), subject
        assert not re.search(r"\.(CREATE|UPDATE|PURGE|DELETE)\.[A-Z_a-z-]+$", subject) or \
            "CONSUMER" in subject, subject
    for subject in DATA:
        assert any(covers(pattern, subject) for pattern in allowed(READER, "subscribe")), subject


def covers(pattern: str, subject: str) -> bool:
    """Whether a subscription allowed ``pattern`` takes in everything ``subject`` names, by
    NATS's token rules (``*`` one token, ``>`` the rest)."""
    want, have = pattern.split("."), subject.split(".")
    for i, token in enumerate(want):
        if token == ">":
            return len(have) > i
        if i >= len(have) or (token != "*" and token != have[i]) or (
                token == "*" and have[i] == ">"):
            return False
    return len(want) == len(have)


def test_the_reader_subscribes_under_each_published_root_and_never_to_the_api_or_an_inbox(
) -> None:
    subscribe = allowed(READER, "subscribe")
    assert {"kube.>", "plan.>", "outcome.>", "admission.>", "history.>", "webhook.>"} <= set(
        subscribe)
    for pattern in subscribe:
        assert pattern.split(".")[0] not in ("*", ">"), pattern
        assert not pattern.startswith(("$JS", "_INBOX_")) or pattern == "_INBOX_reader.>"
    for user in USERS:
        for pattern in allowed(user, "subscribe"):  # every core subject another user reads
            if not pattern.startswith(("_INBOX_", "$")):
                assert any(covers(mine, pattern) for mine in subscribe), pattern


def test_message_roots_widen_only_below_a_named_first_token() -> None:
    published = ["a.b.>", "a.c", "b", "*.x", ">", "$KV.k.>", "$JS.API.>", "_INBOX_p.>", "a.>"]
    assert message_roots(published) == ["a.>", "b"]


@pytest.mark.parametrize("user", [u for u in USERS if u != SETUP])
def test_only_the_setup_user_configures_streams(user: str) -> None:
    configuring = re.compile(r"^\$JS\.API\.(STREAM\.(CREATE|UPDATE|DELETE|PURGE|MSG\.DELETE)"
                             r"|CONSUMER\.(LIST|NAMES))\.")
    found = [s for s in allowed(user, "publish") if configuring.match(s)]
    # The object store replaces a snapshot's chunks with a filtered purge of its own stream.
    expected = ["$JS.API.STREAM.PURGE.OBJ_spreadbus-snapshots"] if user == "planner" else []
    assert found == expected
    assert not any(s.startswith("$JS.API.STREAM.") and s.endswith((".*", ".>"))
                   for s in allowed(user, "publish"))
    assert allowed(SETUP, "publish") == ["$JS.API.>"]


@pytest.mark.parametrize("user", USERS)
def test_no_one_may_create_an_unnamed_consumer(user: str) -> None:
    # A create on the unnamed subject updates whichever consumer its body names.
    unnamed = re.compile(r"^\$JS\.API\.CONSUMER\.CREATE\.[^.]+$")
    if user == SETUP:
        return
    assert not [s for s in allowed(user, "publish") if unnamed.match(s)]


@pytest.mark.parametrize("user", [u for u in USERS if u not in ("actuator", SETUP)])
def test_every_other_user_is_denied_each_use_of_the_actuators_consumers(user: str) -> None:
    for cluster in CLUSTERS:
        assert set(consumer_use("PLANS", actuator_consumer(cluster))) <= set(denied(user))


def test_the_actuator_uses_its_own_consumers_and_reads_plans_no_other_way() -> None:
    plans = [s for s in allowed("actuator", "publish") if ".PLANS" in s]
    own = [actuator_consumer(c) for c in CLUSTERS]
    for subject in plans:
        tokens = subject.split(".")
        assert subject == "$JS.API.STREAM.INFO.PLANS" or any(name in tokens for name in own), \
            subject
    assert not any(".DELETE." in s for s in plans)
    assert denied("actuator") == []


@pytest.mark.parametrize("user", SERVICES)
def test_replies_reach_each_user_on_its_own_inbox_only(user: str) -> None:
    inboxes = [s for u in USERS for s in allowed(u, "subscribe") if s.startswith("_INBOX")]
    assert f"_INBOX_{user}.>" in allowed(user, "subscribe")
    assert inboxes.count(f"_INBOX_{user}.>") == 1


def test_a_features_declaration_reaches_its_service_and_no_other() -> None:
    extra = {"planner": BusAccess(publish=("extra.>",), subscribe=("hints.>",),
                                  buckets=("extra-bucket",), reads=("EXTRA",))}
    features = (*bus_accesses(BUILTIN), extra)
    planner = allowed("planner", "publish", features)
    assert {"extra.>", "$KV.extra-bucket.>", "$JS.API.STREAM.INFO.KV_extra-bucket",
            "$JS.API.CONSUMER.MSG.NEXT.EXTRA.*"} <= set(planner)
    assert "$JS.API.STREAM.CREATE.KV_extra-bucket" not in planner
    assert "hints.>" in allowed("planner", "subscribe", features)
    for other in ("watcher", "actuator", "webhook"):
        assert "extra.>" not in allowed(other, "publish", features)
        assert "$KV.extra-bucket.>" not in allowed(other, "publish", features)
    assert "$KV.extra-bucket.>" in allowed(READER, "subscribe", features)
    assert "$JS.API.CONSUMER.MSG.NEXT.KV_extra-bucket.*" in allowed(READER, "publish", features)


def test_an_unknown_user_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="no bus user 'stranger'"):
        permissions("stranger", bus_accesses(BUILTIN))
