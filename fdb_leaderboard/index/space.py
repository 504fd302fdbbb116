"""An index's key space and settings: everything derived from them, nothing read from the store.

:class:`IndexSpace` is what every concern of the index shares across transactions: the
settings, the key layout, the aggregation, the stored format the index is at (which forms its
writes may produce: ``fdb_leaderboard/formats.py``), and two caches of pure derivations
(ranked-set key prefixes, and the parse of the last directory bytes seen, reused only when the
bytes read are the same).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .. import formats
from ..rankedset import RankedSet
from .aggregation import AGGREGATIONS, Aggregation
from .columns import flipper
from .directory import Directory, Window
from .layout import IndexLayout
from .settings import IndexSettings
from .values import negate

_RANKED_SETS_KEPT = 4096


class IndexSpace:
    """The index under key prefix ``prefix`` with ``settings``.  Holds no stored data."""

    def __init__(self, prefix: bytes, settings: IndexSettings, format: int = formats.NEWEST_INDEX) -> None:
        self.prefix = prefix
        self.settings = settings
        # The index's stored format, as last read (formats only rise: a lower value read earlier
        # only makes a write keep an older form, which every release on the store reads).
        self.format = format
        # Called in the transaction that raises the format (the catalog updates its entry's copy).
        self.on_format_raised: Callable[[Any, int], None] | None = None
        self.layout = IndexLayout(prefix)
        self.aggregation: Aggregation = AGGREGATIONS[settings.aggregation]
        # A high-score-first score's stored form (and back): negated, or each HIGH column negated.
        self.negate: Callable[[Any], Any] = flipper(settings.columns) if settings.columns else negate
        self._ranked_sets: OrderedDict[tuple[int, int, bytes, bool], RankedSet] = OrderedDict()
        self._directory_cache: tuple[bytes, Directory] | None = None
        # What "now" is for the index: the clock (Unix seconds) in its timebase, ``timebase``
        # units per second (1: seconds; 1000: the index's times are milliseconds).  A read of a
        # window type without a timestamp reads the window containing now.
        self.clock: Callable[[], float] = time.time
        self.timebase = 1

    def now(self) -> int:
        """The clock in the index's timebase."""
        return int(self.clock() * self.timebase)

    def ranked_set(self, window: Window, group_bytes: bytes) -> RankedSet:
        """The ranked set of one window and group (key derivation only, so cached)."""
        return self._set(window, group_bytes, dense=False)

    def dense_set(self, window: Window, group_bytes: bytes) -> RankedSet:
        """The ranked set of one window and group's distinct stored scores (``dense_ranks``):
        its elements are ``pack((stored score,))``, each present while some record has it."""
        return self._set(window, group_bytes, dense=True)

    def _set(self, window: Window, group_bytes: bytes, dense: bool) -> RankedSet:
        key = (window.lb_key, window.nlevels, group_bytes, dense)
        ranked = self._ranked_sets.get(key)
        if ranked is None:
            where = self.layout.window_dense if dense else self.layout.window_secondary
            ranked = RankedSet(
                where(window.key_bytes) + group_bytes,
                window.nlevels,
                self.settings.hash_function,
                count_duplicates=False if dense else self.settings.count_duplicates,
            )
            self._ranked_sets[key] = ranked
            if len(self._ranked_sets) > _RANKED_SETS_KEPT:
                self._ranked_sets.popitem(last=False)
        return ranked

    def parse_directory(self, raw: bytes | None) -> Directory | None:
        """Parse stored directory bytes, reusing the last parse when the bytes are the same."""
        if raw is None:
            return None
        cached = self._directory_cache
        if cached is not None and cached[0] == raw:
            return cached[1]
        directory = Directory.from_bytes(raw)
        self._directory_cache = (raw, directory)
        return directory
