"""JSON Schema of the whole bus contract, generated from the message types.

The schema is what a subscriber in another language reads; it is generated, never hand-written,
so it cannot drift from the code.
"""

from __future__ import annotations

from typing import Any

import msgspec

from events.messages import SCHEMA_VERSION, Event


def json_schema() -> dict[str, Any]:
    """A JSON Schema (2020-12) document for every message the bus carries."""
    schema: dict[str, Any] = msgspec.json.schema(Event)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "spreadbus events"
    schema["description"] = (
        f"Messages on the spreadbus NATS JetStream streams (schema version {SCHEMA_VERSION}). "
        "Each is a JSON object with a 'type' tag and a version 'v'."
    )
    return schema
