"""A set kept in sorted order, for counts and prefixes by rank without a pass over its items.

The tally of a WorkloadSpread asks order questions of its pods on every plan: how many active
pods of a bucket come after a given pod key, which pending pods passed a deadline, which version
a key-ordered pass meets first. A sorted Python list answers them by bisection but pays a shift
of every later item on each insert; :class:`SortedSet` keeps its items in blocks of at most
``2 x LOAD`` sorted items, so an insert or removal shifts one block and a rank query bisects the
block maxima and then one block. Blocks stay in the low thousands for millions of items, so the
per-block length sum in :meth:`count_above` is cheap next to the pods it saves reading.

Items must be totally ordered by ``<``; an item equal to one already present is not added twice.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from typing import Any, Generic, Protocol, TypeVar

LOAD = 512


class _Ordered(Protocol):
    def __lt__(self, other: Any, /) -> bool: ...


T = TypeVar("T", bound=_Ordered)


class SortedSet(Generic[T]):
    def __init__(self) -> None:
        self._blocks: list[list[T]] = []
        self._maxes: list[T] = []
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def __iter__(self) -> Iterator[T]:
        for block in self._blocks:
            yield from block

    def first(self) -> T:
        return self._blocks[0][0]

    def first_from(self, item: T) -> T | None:
        """The smallest item not below ``item``, if any."""
        i = bisect_left(self._maxes, item)
        if i == len(self._blocks):
            return None
        block = self._blocks[i]
        return block[bisect_left(block, item)]

    def at(self, index: int) -> T:
        """The item with ``index`` items below it (0 <= index < len)."""
        for block in self._blocks:
            if index < len(block):
                return block[index]
            index -= len(block)
        raise IndexError(index)

    def between(self, low: T, high: T | None) -> Iterator[T]:
        """The items from ``low`` (included) to ``high`` (excluded; None: to the end)."""
        i = bisect_left(self._maxes, low)
        if i == len(self._blocks):
            return
        j = bisect_left(self._blocks[i], low)
        for block in self._blocks[i:]:
            for item in block[j:]:
                if high is not None and not (item < high):
                    return
                yield item
            j = 0

    def add(self, item: T) -> None:
        if not self._blocks:
            self._blocks.append([item])
            self._maxes.append(item)
            self._len = 1
            return
        i = bisect_left(self._maxes, item)
        if i == len(self._blocks):
            i -= 1
            self._blocks[i].append(item)
            self._maxes[i] = item
        else:
            block = self._blocks[i]
            j = bisect_left(block, item)
            if j < len(block) and not (item < block[j]):
                return  # already present
            block.insert(j, item)
        self._len += 1
        block = self._blocks[i]
        if len(block) > 2 * LOAD:
            self._blocks[i : i + 1] = [block[:LOAD], block[LOAD:]]
            self._maxes[i : i + 1] = [block[LOAD - 1], block[-1]]

    def discard(self, item: T) -> None:
        i = bisect_left(self._maxes, item)
        if i == len(self._blocks):
            return
        block = self._blocks[i]
        j = bisect_left(block, item)
        if j == len(block) or item < block[j]:
            return
        del block[j]
        self._len -= 1
        if not block:
            del self._blocks[i]
            del self._maxes[i]
        else:
            self._maxes[i] = block[-1]

    def count_above(self, item: T) -> int:
        """How many items are strictly above ``item``."""
        i = bisect_right(self._maxes, item)
        above = sum(len(b) for b in self._blocks[i + 1 :])
        if i < len(self._blocks):
            block = self._blocks[i]
            above += len(block) - bisect_right(block, item)
        return above

    def below(self, item: T) -> Iterator[T]:
        """The items strictly below ``item``, in order."""
        for block in self._blocks:
            if block[-1] < item:
                yield from block
                continue
            yield from block[: bisect_left(block, item)]
            return

