"""The hub and member leaf servers these tests share (:mod:`tests.fixtures.member_bus`)."""

from tests.fixtures.member_bus import member_bus_stack

__all__ = ["member_bus_stack"]
