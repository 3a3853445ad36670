"""Taints and tolerations against Kubernetes' own test tables.

The rows are the inputs and expected outputs of the upstream tests of ``Toleration.ToleratesTaint``
(``k8s.io/api/core/v1``), of ``FindMatchingUntoleratedTaint`` (``component-helpers``), of the
scheduler's TaintToleration filter and score and of the taint manager's ``getMinTolerationTime``,
in this project's table form, followed by this project's own cases. Rows that need the alpha
comparison operators are checked against the gate's default (off).
"""

from __future__ import annotations

from typing import Any

import pytest

from kubesemantics.tolerations import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    min_toleration_seconds,
    tolerates,
    toleration_seconds,
    untolerated_count,
    untolerated_taint,
)


def taint(key: str, effect: str, value: str = "") -> dict[str, Any]:
    return (
        {"key": key, "value": value, "effect": effect} if value else {"key": key, "effect": effect}
    )


def toleration(
    key: str, operator: str, effect: str = "", value: str = "", seconds: int | None = None
) -> dict[str, Any]:
    found: dict[str, Any] = {"key": key, "operator": operator}
    if effect:
        found["effect"] = effect
    if value:
        found["value"] = value
    if seconds is not None:
        found["tolerationSeconds"] = seconds
    return found


# --- One toleration against one taint -----------------------------------------------------------


@pytest.mark.parametrize(
    ("tol", "tnt", "expected"),
    [
        pytest.param(
            toleration("foo", "Exists", NO_SCHEDULE),
            taint("foo", NO_SCHEDULE),
            True,
            id="exists-same-key-and-effect-taint-without-value",
        ),
        pytest.param(
            toleration("foo", "Exists", NO_SCHEDULE),
            taint("foo", NO_SCHEDULE, "bar"),
            True,
            id="exists-same-key-and-effect-taint-with-value",
        ),
        pytest.param(
            toleration("", "Exists", NO_SCHEDULE),
            taint("foo", NO_SCHEDULE, "bar"),
            True,
            id="exists-with-empty-key-tolerates-every-key",
        ),
        pytest.param(
            toleration("foo", "Equal", NO_SCHEDULE, "bar"),
            taint("foo", NO_SCHEDULE, "bar"),
            True,
            id="equal-same-key-effect-and-value",
        ),
        pytest.param(
            toleration("foo", "Equal", NO_SCHEDULE, "value1"),
            taint("foo", NO_SCHEDULE, "value2"),
            False,
            id="equal-different-values",
        ),
        pytest.param(
            toleration("foo", "Equal", NO_SCHEDULE, "bar"),
            taint("foo", NO_EXECUTE, "bar"),
            False,
            id="equal-different-effects",
        ),
    ],
)
def test_a_toleration_tolerates_a_taint_like_upstream(
    tol: dict[str, Any], tnt: dict[str, Any], expected: bool
) -> None:
    assert tolerates(tol, tnt) is expected
    assert tolerates([tol], tnt) is expected


_SLA = "node.kubernetes.io/sla"


@pytest.mark.parametrize(
    ("tol", "tnt"),
    [
        pytest.param(
            toleration(_SLA, "Gt", NO_SCHEDULE, "950"),
            taint(_SLA, NO_SCHEDULE, "800"),
            id="gt-below",
        ),
        pytest.param(
            toleration(_SLA, "Gt", NO_SCHEDULE, "750"),
            taint(_SLA, NO_SCHEDULE, "950"),
            id="gt-above",
        ),
        pytest.param(
            toleration(_SLA, "Lt", NO_SCHEDULE, "800"),
            taint(_SLA, NO_SCHEDULE, "950"),
            id="lt-above",
        ),
        pytest.param(
            toleration(_SLA, "Lt", NO_SCHEDULE, "950"),
            taint(_SLA, NO_SCHEDULE, "800"),
            id="lt-below",
        ),
        pytest.param(
            toleration(_SLA, "Gt", NO_SCHEDULE, "950"),
            taint(_SLA, NO_SCHEDULE, "950"),
            id="gt-equal",
        ),
        pytest.param(
            toleration(_SLA, "Gt", NO_SCHEDULE, "950"),
            taint(_SLA, NO_SCHEDULE, "high"),
            id="gt-non-numeric-taint",
        ),
        pytest.param(
            toleration("test-key", "Gt", NO_SCHEDULE, "-100"),
            taint("test-key", NO_SCHEDULE, "-200"),
            id="gt-negative",
        ),
        pytest.param(
            toleration("test-key", "Gt", NO_SCHEDULE, "9223372036854775806"),
            taint("test-key", NO_SCHEDULE, "100"),
            id="gt-large-int64",
        ),
    ],
)
def test_comparison_tolerations_tolerate_nothing_while_their_feature_gate_is_off(
    tol: dict[str, Any], tnt: dict[str, Any]
) -> None:
    assert not tolerates(tol, tnt)
    assert untolerated_taint([tnt], [tol]) == tnt


# --- The first untolerated taint ----------------------------------------------------------------

_ALL = frozenset({NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE})
_FOO_NO_SCHEDULE = [toleration("foo", "Exists", NO_SCHEDULE)]


@pytest.mark.parametrize(
    ("tolerations", "taints", "effects", "tolerated"),
    [
        pytest.param([], [], _ALL, True, id="empty-tolerations-tolerate-no-taints"),
        pytest.param(_FOO_NO_SCHEDULE, [], _ALL, True, id="tolerations-tolerate-no-taints"),
        pytest.param(
            _FOO_NO_SCHEDULE, [taint("foo", NO_SCHEDULE)], _ALL, True, id="all-taints-tolerated"
        ),
        pytest.param(
            _FOO_NO_SCHEDULE,
            [taint("bar", NO_SCHEDULE)],
            frozenset(),
            True,
            id="untolerated-taint-outside-the-filter",
        ),
        pytest.param(
            _FOO_NO_SCHEDULE,
            [taint("bar", NO_SCHEDULE)],
            _ALL,
            False,
            id="untolerated-taint-without-a-filter",
        ),
        pytest.param(
            [toleration("foo", "Exists", NO_EXECUTE)],
            [taint("foo", NO_EXECUTE), taint("bar", NO_SCHEDULE)],
            frozenset({NO_EXECUTE}),
            True,
            id="only-no-execute-taints-filtered-and-tolerated",
        ),
    ],
)
def test_the_first_untolerated_taint_among_the_filtered_effects(
    tolerations: list[dict[str, Any]],
    taints: list[dict[str, Any]],
    effects: frozenset[str],
    tolerated: bool,
) -> None:
    found = untolerated_taint(taints, tolerations, effects)
    assert (found is None) is tolerated
    if found is not None:
        assert found in taints
        assert not tolerates(tolerations, found)


# --- The scheduler's TaintToleration filter and score --------------------------------------------

_USER1 = taint("dedicated", NO_SCHEDULE, "user1")
_SLA_950 = taint(_SLA, NO_SCHEDULE, "950")
_GT_750 = toleration(_SLA, "Gt", NO_SCHEDULE, "750")


@pytest.mark.parametrize(
    ("tolerations", "taints", "schedulable"),
    [
        pytest.param([], [_USER1], False, id="no-tolerations-against-a-taint"),
        pytest.param(
            [{"key": "dedicated", "value": "user1", "effect": NO_SCHEDULE}],
            [_USER1],
            True,
            id="default-operator-tolerates-the-same-value",
        ),
        pytest.param(
            [toleration("dedicated", "Equal", NO_SCHEDULE, "user2")],
            [_USER1],
            False,
            id="equal-with-another-value",
        ),
        pytest.param(
            [toleration("foo", "Exists", NO_SCHEDULE)],
            [taint("foo", NO_SCHEDULE, "bar")],
            True,
            id="exists-tolerates-any-value",
        ),
        pytest.param(
            [
                toleration("dedicated", "Equal", NO_SCHEDULE, "user2"),
                toleration("foo", "Exists", NO_SCHEDULE),
            ],
            [taint("dedicated", NO_SCHEDULE, "user2"), taint("foo", NO_SCHEDULE, "bar")],
            True,
            id="every-taint-tolerated-by-one-of-several",
        ),
        pytest.param(
            [toleration("foo", "Equal", PREFER_NO_SCHEDULE, "bar")],
            [taint("foo", NO_SCHEDULE, "bar")],
            False,
            id="toleration-of-another-effect",
        ),
        pytest.param(
            [toleration("foo", "Equal", "", "bar")],
            [taint("foo", NO_SCHEDULE, "bar")],
            True,
            id="toleration-without-effect-tolerates-every-effect",
        ),
        pytest.param(
            [toleration("dedicated", "Equal", NO_SCHEDULE, "user2")],
            [taint("dedicated", PREFER_NO_SCHEDULE, "user1")],
            True,
            id="prefer-no-schedule-taints-do-not-filter",
        ),
        pytest.param(
            [], [taint("dedicated", PREFER_NO_SCHEDULE, "user1")], True, id="no-tolerations-prefer"
        ),
        pytest.param([_GT_750], [_SLA_950], False, id="gt-needed-while-the-gate-is-off"),
        pytest.param(
            [toleration(_SLA, "Lt", NO_SCHEDULE, "950")],
            [taint(_SLA, NO_SCHEDULE, "800")],
            False,
            id="lt-needed-while-the-gate-is-off",
        ),
        pytest.param(
            [toleration("dedicated", "Equal", NO_SCHEDULE, "user1"), _GT_750],
            [_USER1],
            True,
            id="equal-honoured-beside-a-gated-gt",
        ),
        pytest.param(
            [toleration("dedicated", "Equal", NO_SCHEDULE, "user1"), _GT_750],
            [_USER1, _SLA_950],
            False,
            id="gated-gt-cannot-cover-the-second-taint",
        ),
    ],
)
def test_the_filter_refuses_a_node_with_an_untolerated_no_schedule_taint(
    tolerations: list[dict[str, Any]], taints: list[dict[str, Any]], schedulable: bool
) -> None:
    assert (
        untolerated_taint(taints, tolerations, (NO_SCHEDULE, NO_EXECUTE)) is None
    ) is schedulable


def _normalized(counts: list[int]) -> list[int]:
    """The scheduler's default score normalisation, reversed: fewer untolerated taints score
    higher, on 0..100."""
    most = max(counts)
    return [100 if most == 0 else 100 - 100 * c // most for c in counts]


_FOO_BAR_PREFER = [toleration("foo", "Equal", PREFER_NO_SCHEDULE, "bar")]
_ARM = taint("cpu-type", PREFER_NO_SCHEDULE, "arm64")
_SSD = taint("disk-type", PREFER_NO_SCHEDULE, "ssd")


@pytest.mark.parametrize(
    ("tolerations", "nodes", "scores"),
    [
        pytest.param(
            _FOO_BAR_PREFER,
            [[taint("foo", PREFER_NO_SCHEDULE, "bar")], [taint("foo", PREFER_NO_SCHEDULE, "blah")]],
            [100, 0],
            id="tolerated-taint-scores-above-an-untolerated-one",
        ),
        pytest.param(
            [
                toleration("cpu-type", "Equal", PREFER_NO_SCHEDULE, "arm64"),
                toleration("disk-type", "Equal", PREFER_NO_SCHEDULE, "ssd"),
            ],
            [[], [_ARM], [_ARM, _SSD]],
            [100, 100, 100],
            id="tolerated-taints-do-not-count",
        ),
        pytest.param(
            _FOO_BAR_PREFER, [[], [_ARM], [_ARM, _SSD]], [100, 50, 0], id="each-untolerated-counts"
        ),
        pytest.param(
            [
                toleration("cpu-type", "Equal", NO_SCHEDULE, "arm64"),
                toleration("disk-type", "Equal", NO_SCHEDULE, "ssd"),
            ],
            [[], [taint("cpu-type", NO_SCHEDULE, "arm64")], [_ARM, _SSD]],
            [100, 100, 0],
            id="only-prefer-no-schedule-counts",
        ),
        pytest.param([], [[], [_ARM]], [100, 0], id="no-tolerations-prefer-the-untainted-node"),
    ],
)
def test_the_score_counts_untolerated_prefer_no_schedule_taints(
    tolerations: list[dict[str, Any]], nodes: list[list[dict[str, Any]]], scores: list[int]
) -> None:
    assert _normalized([untolerated_count(taints, tolerations) for taints in nodes]) == scores


# --- How long a pod stays on a NoExecute-tainted node -------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        pytest.param([], 0, id="no-used-tolerations-evict-now"),
        pytest.param([None], None, id="no-limit-stays-for-ever"),
        pytest.param([1, 2], 1, id="shortest-limit"),
        pytest.param([1, None], 1, id="limit-before-no-limit"),
        pytest.param([None, 1], 1, id="no-limit-before-limit"),
    ],
)
def test_the_shortest_toleration_seconds_of_the_used_tolerations(
    seconds: list[int | None], expected: float | None
) -> None:
    used = [{"tolerationSeconds": s} if s is not None else {} for s in seconds]
    assert min_toleration_seconds(used) == expected


# --- This project's own cases -------------------------------------------------------------------

VK = {"key": "virtual-kubelet.io/provider", "value": "alibabacloud", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("tol", "expected"),
    [
        (
            {
                "key": VK["key"],
                "operator": "Equal",
                "value": "alibabacloud",
                "effect": "NoSchedule",
            },
            True,
        ),
        ({"key": VK["key"], "value": "alibabacloud"}, True),
        ({"key": VK["key"], "operator": "Equal", "value": "other"}, False),
        ({"key": VK["key"], "operator": "Exists"}, True),
        ({"key": VK["key"], "operator": "Exists", "effect": "NoExecute"}, False),
        ({"operator": "Exists"}, True),
        ({"key": "other", "operator": "Exists"}, False),
        ({"key": VK["key"], "operator": "Bogus"}, False),
    ],
)
def test_toleration_matching_follows_upstream(tol: dict[str, Any], expected: bool) -> None:
    assert tolerates(tol, VK) is expected


def test_untolerated_taint_only_considers_the_given_effects() -> None:
    prefer = {"key": "spot", "effect": "PreferNoSchedule"}
    assert untolerated_taint([prefer, VK], []) == VK
    assert untolerated_taint([prefer], []) is None
    assert untolerated_taint([VK], [{"operator": "Exists"}]) is None
    assert untolerated_count([prefer, VK], []) == 1


_UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}


def test_toleration_seconds_come_from_the_first_toleration_of_each_taint() -> None:
    specific_first = [
        toleration(_UNREACHABLE["key"], "Exists", NO_EXECUTE, seconds=30),
        toleration("", "Exists", NO_EXECUTE, seconds=10),
    ]
    assert toleration_seconds([_UNREACHABLE], specific_first) == 30
    assert toleration_seconds([_UNREACHABLE], specific_first[::-1]) == 10


def test_toleration_seconds_take_the_shortest_limit_across_taints() -> None:
    not_ready = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}
    tols = [
        toleration(_UNREACHABLE["key"], "Exists", NO_EXECUTE, seconds=300),
        toleration(not_ready["key"], "Exists", NO_EXECUTE, seconds=60),
    ]
    assert toleration_seconds([_UNREACHABLE, not_ready], tols) == 60
    assert toleration_seconds([_UNREACHABLE], [{"operator": "Exists"}]) is None
    assert toleration_seconds([_UNREACHABLE], []) == 0
    assert toleration_seconds([_UNREACHABLE], [toleration("", "Exists", seconds=-5)]) == 0
    assert toleration_seconds([VK], []) is None
