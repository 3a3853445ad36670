"""Fixture modules shared by the whole suite, one module per real part."""

pytest_plugins = [
    "tests.fixtures.nats",
    "tests.fixtures.kubesim",
    "tests.fixtures.cluster",
    "tests.fixtures.processes",
    "tests.fixtures.secured_bus",
]
