"""Fixture modules shared by the whole suite, one module per real part.

Hypothesis runs without its per-example deadline: CI shares two cores among the test workers
and the processes they start, so a deadline would fail examples for the machine's load, not
for what they check.
"""

from hypothesis import settings

pytest_plugins = [
    "tests.fixtures.nats",
    "tests.fixtures.nats_cluster",
    "tests.fixtures.kubesim",
    "tests.fixtures.cluster",
    "tests.fixtures.processes",
    "tests.fixtures.secured_bus",
]

settings.register_profile("shared-cores", deadline=None)
settings.load_profile("shared-cores")
