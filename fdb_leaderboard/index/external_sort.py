"""An external sort: any number of items sorted in bounded memory, through temporary files.

:class:`ExternalSort` keeps up to ``memory_items`` items in a list; when it fills, the list is
sorted and written to a temporary file as a *run* (``marshal`` blocks of ``BLOCK_ITEMS``
items: the interpreter's own fast serialization, for files this process alone writes and reads).
:meth:`ExternalSort.sorted` merges the runs and what is left in memory (``heapq.merge``),
reading each run a block at a time, so memory stays about ``memory_items`` items plus one
block per run, however many items were added.  Items are tuples compared as Python compares
them; ``marshal`` takes tuples of bytes, ints, floats, bools and None.

The files go to ``directory`` (default: the system's temporary directory, ``TMPDIR``), are
unlinked as soon as they are opened (nothing is left behind if the process dies), and closed
by :meth:`ExternalSort.close`.
"""

from __future__ import annotations

import heapq
import marshal
import tempfile
from collections.abc import Iterator
from typing import IO, Any

MEMORY_ITEMS = 250_000
BLOCK_ITEMS = 4096


class ExternalSort:
    """Items added in any order, taken back sorted (see the module docstring)."""

    def __init__(self, memory_items: int = MEMORY_ITEMS, directory: str | None = None) -> None:
        if memory_items < 1:
            raise ValueError(f"memory_items must be at least 1, not {memory_items}")
        self.memory_items = memory_items
        self.directory = directory
        self._items: list[Any] = []
        self._runs: list[IO[bytes]] = []
        self.count = 0
        self.bytes_spilled = 0

    def add(self, item: Any) -> None:
        items = self._items
        items.append(item)
        if len(items) >= self.memory_items:
            self._spill()

    def extend(self, items: list[Any]) -> None:
        for item in items:
            self.add(item)

    @property
    def runs(self) -> int:
        return len(self._runs)

    def _spill(self) -> None:
        items, self._items = self._items, []
        items.sort()
        self.count += len(items)
        run = tempfile.TemporaryFile(dir=self.directory, prefix="fdb-leaderboard-sort-")  # noqa: SIM115 - kept open
        try:
            for start in range(0, len(items), BLOCK_ITEMS):
                marshal.dump(items[start : start + BLOCK_ITEMS], run)
            self.bytes_spilled += run.tell()
            run.seek(0)
        except BaseException:
            run.close()
            raise
        self._runs.append(run)

    def sorted(self) -> Iterator[Any]:
        """Every item added, in order (once: the sort is spent afterwards)."""
        items, self._items = self._items, []
        items.sort()
        self.count += len(items)
        if not self._runs:
            return iter(items)
        return heapq.merge(*(_read(run) for run in self._runs), items)

    def close(self) -> None:
        for run in self._runs:
            run.close()
        self._runs = []
        self._items = []

    def __enter__(self) -> ExternalSort:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read(run: IO[bytes]) -> Iterator[Any]:
    load = marshal.load
    while True:
        try:
            block = load(run)
        except EOFError:
            return
        yield from block
