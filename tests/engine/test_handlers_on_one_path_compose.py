"""Several features' handlers on one path answer as one review: any denial wins, patches
compose in registry order, and side effects happen only once every handler allowed."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from spreadbus.engine.admission_chain import (
    ALLOW,
    AdmissionHandler,
    Verdict,
    deny,
    fails_open,
    paths,
    run_chain,
)
from spreadbus.engine.review import AdmissionRequest
from tests.webhook.admission_reviews import pod, request


def handler(
    feature: str, decide: Any, path: str = "/p", policy: str = "Ignore"
) -> AdmissionHandler:
    return AdmissionHandler(feature=feature, path=path, decide=decide,
                            failure_policy=policy)  # type: ignore[arg-type]


def labelling(key: str, log: list[str]) -> Any:
    """Adds a label, after checking the labels earlier handlers added are there."""

    async def decide(req: AdmissionRequest) -> Verdict:
        assert req.object is not None
        labels = req.object["metadata"]["labels"]
        log.append(f"{key} saw {sorted(labels)}")
        return Verdict(patch=[{"op": "add", "path": f"/metadata/labels/{key}", "value": "y"}],
                       warnings=[f"{key} labelled"])

    return decide


async def test_patches_compose_in_registry_order_and_each_handler_sees_the_earlier_ones() -> None:
    log: list[str] = []
    chain = [handler("a", labelling("a", log)), handler("b", labelling("b", log))]
    verdict = await run_chain(chain, request(operation="CREATE", resource="pods",
                                             obj=pod("web-1")))
    assert verdict.allowed
    assert [op["path"] for op in verdict.patch] == ["/metadata/labels/a", "/metadata/labels/b"]
    assert log == ["a saw ['app']", "b saw ['a', 'app']"]
    assert list(verdict.warnings) == ["a labelled", "b labelled"]


async def test_a_handler_that_built_the_patched_object_hands_it_to_the_next_as_it_is() -> None:
    sent = pod("web-1")
    # What the handler built, marked so that a copy the chain patched again would differ.
    built = {**sent, "metadata": {**sent["metadata"], "labels": {"app": "web", "a": "y"},
                                  "annotations": {"built-by": "a"}}}
    seen: list[Any] = []

    async def builds(req: AdmissionRequest) -> Verdict:
        return Verdict(patch=[{"op": "add", "path": "/metadata/labels/a", "value": "y"}],
                       patched=built)

    async def reads(req: AdmissionRequest) -> Verdict:
        seen.append(req.object)
        return ALLOW

    verdict = await run_chain([handler("a", builds), handler("b", reads)],
                              request(operation="CREATE", resource="pods", obj=sent))
    assert seen == [built]
    assert [op["path"] for op in verdict.patch] == ["/metadata/labels/a"]
    assert "a" not in sent["metadata"]["labels"], "the object sent is left as it was"


async def test_a_denial_wins_and_the_handlers_after_it_do_not_run() -> None:
    ran: list[str] = []

    async def refuses(req: AdmissionRequest) -> Verdict:
        ran.append("refuses")
        return deny("no", code=429, reason="TooManyRequests")

    async def never(req: AdmissionRequest) -> Verdict:
        ran.append("never")
        return ALLOW

    log: list[str] = []
    chain = [handler("a", labelling("a", log)), handler("b", refuses), handler("c", never)]
    verdict = await run_chain(chain, request(operation="CREATE", resource="pods",
                                             obj=pod("web-1")))
    assert (verdict.allowed, verdict.code, verdict.reason, verdict.message) == (
        False, 429, "TooManyRequests", "no")
    assert ran == ["refuses"]
    assert list(verdict.warnings) == ["a labelled"]


@given(st.lists(st.sampled_from(["allow", "deny", "allow-then", "allow-undo"]), min_size=1,
                max_size=6))
async def test_side_effects_are_kept_only_when_every_handler_on_the_path_allowed(
    kinds: list[str],
) -> None:
    done: list[str] = []

    def make(index: int, kind: str) -> Any:
        async def decide(req: AdmissionRequest) -> Verdict:
            if kind == "deny":
                return deny("refused")
            if kind == "allow-then":
                async def then() -> None:
                    done.append(f"then {index}")
                return Verdict(then=then)
            if kind == "allow-undo":
                done.append(f"did {index}")

                async def undo() -> None:
                    done.append(f"undo {index}")
                return Verdict(undo=undo)
            return ALLOW
        return decide

    chain = [handler(str(i), make(i, kind)) for i, kind in enumerate(kinds)]
    verdict = await run_chain(chain, request(operation="DELETE", resource="pods", name="p"))
    first_denial = kinds.index("deny") if "deny" in kinds else None
    assert verdict.allowed is (first_denial is None)
    ran = kinds if first_denial is None else kinds[:first_denial]
    did = [f"did {i}" for i, k in enumerate(ran) if k == "allow-undo"]
    if first_denial is None:
        assert done == [*did, *(f"then {i}" for i, k in enumerate(ran) if k == "allow-then")]
    else:
        undone = [f"undo {i}" for i, k in reversed(list(enumerate(ran))) if k == "allow-undo"]
        assert done == [*did, *undone]
    assert verdict.then is None
    assert verdict.undo is None


def test_a_path_fails_closed_when_any_of_its_handlers_must() -> None:
    async def decide(req: AdmissionRequest) -> Verdict:
        return ALLOW

    grouped = paths([handler("a", decide, "/x"), handler("b", decide, "/y", "Fail"),
                     handler("c", decide, "/x")])
    assert [h.feature for h in grouped["/x"]] == ["a", "c"]
    assert fails_open(grouped["/x"])
    assert not fails_open([*grouped["/x"], *grouped["/y"]])
