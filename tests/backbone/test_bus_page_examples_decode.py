"""Every message example on docs/events.md is a message this code decodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from events import codec
from events.codec import Undecodable

PAGE = Path(__file__).resolve().parents[2] / "docs" / "events.md"
EXAMPLES = [line for line in PAGE.read_text().splitlines() if line.startswith('{"type":')]


def test_the_page_shows_every_plan_verb_that_needs_more_than_a_patch() -> None:
    verbs = {codec.decode(line.encode()).verb for line in EXAMPLES  # type: ignore[union-attr]
             if line.startswith('{"type":"plan"')}
    assert {"create", "delete"} <= verbs


@pytest.mark.parametrize("line", EXAMPLES, ids=lambda line: line[9:40])
def test_an_example_decodes(line: str) -> None:
    assert not isinstance(codec.decode(line.encode()), Undecodable)
