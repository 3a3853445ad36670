"""The one error the local stack raises: which part could not be brought up, and why."""

from __future__ import annotations


class StackError(RuntimeError):
    """The stack could not be brought up; the message says which part and why."""
