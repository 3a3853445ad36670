"""A rollout's new ReplicaSet seen before the Deployment's new template leaves the version unknown.

The watcher's observations of different resources keep no order between them (and a MODIFIED
Deployment waits a moment while the ADDED ReplicaSet goes out at once), so the planner can hold
the new ReplicaSet and its pods next to the Deployment's previous template. Naming the previous
ReplicaSet latest would cost the new pods as old ones; the newer revision says the Deployment
observation is behind, and the version is unknown until it arrives.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spreadbus.features.workloadspread.core.model import JSON, from_object
from spreadbus.features.workloadspread.core.reconcile import REVISION_ANNOTATION, latest_version
from tests.workloadspread.core.builders import deployment, replicaset, subset, workloadspread

WS = from_object(workloadspread(subset("a", 2), subset("b")))


def revised(rs: JSON, revision: int | None, image: str | None = None) -> JSON:
    if revision is not None:
        rs["metadata"]["annotations"] = {REVISION_ANNOTATION: str(revision)}
    if image is not None:
        rs["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return rs


def test_the_replicaset_with_the_template_and_the_newest_revision_is_the_latest_version() -> None:
    d = deployment()
    old, new = revised(replicaset(d, "old"), 1, "nginx:old"), revised(replicaset(d, "new"), 2)
    assert latest_version(WS, d, replicasets=[old, new]) == "new"


def test_a_newer_replicaset_than_the_deployments_template_leaves_the_version_unknown() -> None:
    d = deployment()  # still the template of revision 1: its update has not been seen yet
    old = revised(replicaset(d, "old"), 1)
    new = revised(replicaset(d, "new"), 2, "nginx:new")
    assert latest_version(WS, d, replicasets=[old, new]) is None
    assert latest_version(WS, d, replicasets=[old]) == "old"


def test_a_rollback_is_unknown_until_its_replicaset_is_seen_with_the_newest_revision() -> None:
    d = deployment()  # rolled back to the template of revision 1
    back = revised(replicaset(d, "back"), 1)
    other = revised(replicaset(d, "other"), 2, "nginx:2")
    assert latest_version(WS, d, replicasets=[back, other]) is None
    assert latest_version(WS, d, replicasets=[revised(back, 3), other]) == "back"


def test_replicasets_without_revisions_are_told_apart_by_template_alone() -> None:
    d = deployment()
    old = revised(replicaset(d, "old"), None, "nginx:old")
    assert latest_version(WS, d, replicasets=[old, replicaset(d, "new")]) == "new"
    newer_unrevised = revised(replicaset(d, "newer"), None, "nginx:newer")
    assert latest_version(WS, d, replicasets=[revised(replicaset(d, "new"), 2),
                                              newer_unrevised]) == "new"


def test_a_deleting_or_foreign_replicaset_says_nothing_about_the_deployment() -> None:
    d = deployment()
    current = revised(replicaset(d, "cur"), 1)
    deleting = revised(replicaset(d, "gone"), 5, "nginx:gone")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    foreign = revised(replicaset(deployment("other"), "foreign"), 9, "nginx:x")
    assert latest_version(WS, d, replicasets=[current, deleting, foreign]) == "cur"


@given(st.lists(st.integers(min_value=1, max_value=20), min_size=1, max_size=6, unique=True),
       st.data())
def test_the_version_is_known_exactly_when_the_template_has_the_newest_revision(
    revisions: list[int], data: st.DataObject,
) -> None:
    d = deployment()
    current = data.draw(st.sampled_from(revisions))
    replicasets = [
        revised(replicaset(d, f"r{r}"), r, None if r == current else f"nginx:{r}")
        for r in revisions
    ]
    expected = f"r{current}" if current == max(revisions) else None
    assert latest_version(WS, d, replicasets=replicasets) == expected
