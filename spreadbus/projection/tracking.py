"""A fold of one stream and the position it has reached: the one place that skips redeliveries.

A fold is a function of a message, ``fold(seq, subject, data)``, that changes its state and
knows nothing of where its stream stands; ``seq`` is part of the message, which a fold may record
as data (when an object was last observed), never compare. :class:`Tracked` pairs a fold with its
tracking record, the last stream sequence applied (eventsourcing's processor and ``Tracking``):
a message at or below that position is a redelivery and changes nothing, any other is folded and
moves the position on. :attr:`Tracked.apply` is what a stream follower delivers to; it is a
closure rather than a method because it runs once per message on the planner's replay path.
So applying a log twice, or a snapshot plus the tail after it, ends in the same state.

The record is any object with a ``last_seq`` attribute, so that a fold whose state is
snapshotted keeps its position inside that state (:class:`~.kube_state.KubeState`) and both are
saved at once; :class:`FieldPosition` is the record kept in a named field of a state that folds
several streams (:class:`~.decision_log.DecisionState`), and :class:`StreamPosition` the record
of a fold that is never snapshotted.
:meth:`Tracked.skip` moves the position past a message the owner chose not to fold at all.

Signatures::

    FieldPosition(state: object, field: str) ; StreamPosition(last_seq: int = 0)
    Tracked(fold: Fold[R], record: Tracking | None = None)
        .apply(seq, subject, data) -> R | None   # None: a redelivery, not folded
        .last_seq: int
        .skip(seq) -> None
        .rewind() -> None                   # fold the stream again from its start
"""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar

R_co = TypeVar("R_co", covariant=True)
R = TypeVar("R")


class Fold(Protocol[R_co]):
    def __call__(self, seq: int, subject: str, data: bytes) -> R_co: ...


class Tracking(Protocol):
    """Where a fold's position is kept."""

    last_seq: int


class StreamPosition:
    """The tracking record of a fold kept in memory only."""

    __slots__ = ("last_seq",)

    def __init__(self, last_seq: int = 0) -> None:
        self.last_seq = last_seq


class FieldPosition:
    """The tracking record kept in ``state.<field>``."""

    __slots__ = ("_field", "_state")

    def __init__(self, state: object, field: str) -> None:
        if not isinstance(getattr(state, field), int):
            raise TypeError(f"{type(state).__name__}.{field} is not a stream position")
        self._state = state
        self._field = field

    @property
    def last_seq(self) -> int:
        seq: int = getattr(self._state, self._field)
        return seq

    @last_seq.setter
    def last_seq(self, seq: int) -> None:
        setattr(self._state, self._field, seq)


class Tracked(Generic[R]):
    """``fold`` behind its position; :attr:`apply` takes what a stream follower delivers."""

    __slots__ = ("apply", "fold", "record")

    def __init__(self, fold: Fold[R], record: Tracking | None = None) -> None:
        self.fold = fold
        position: Tracking = StreamPosition() if record is None else record
        self.record = position

        def apply(seq: int, subject: str, data: bytes) -> R | None:
            if seq <= position.last_seq:
                return None
            position.last_seq = seq
            return fold(seq, subject, data)

        self.apply: Fold[R | None] = apply

    @property
    def last_seq(self) -> int:
        return self.record.last_seq

    def skip(self, seq: int) -> None:
        """A message passed over unfolded still moves the position on."""
        if seq > self.record.last_seq:
            self.record.last_seq = seq

    def rewind(self) -> None:
        """Fold the stream again from its start (a fold not in snapshots, rebuilt on start)."""
        self.record.last_seq = 0
