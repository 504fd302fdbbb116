"""Score rules: which scores an index accepts, and how many entries a record may submit.

An index's :class:`ScoreRules` are a field of its directory, which every write reads with its
first reads, so rules cost a write no read of their own.  The counters the limits need live in
the record's head, which the write reads and rewrites anyway:

- ``min_score`` / ``max_score``: an entry outside the range is refused (:class:`ScoreOutOfRange`,
  InvalidArgument), on every write of scores, bulk loads included.
- ``max_per_minute``: entries a record may submit per minute of the server's clock (Unix seconds
  // 60, fixed minutes).  The head keeps the minute of the record's last write and the entries
  written in it (only while the limit is set).  Since the counter is in the store and changes in
  the write's transaction, the limit holds across server processes and hosts: two writes of one
  record in the same minute conflict on its head, as any two writes of it do.
- ``max_per_window``: entries a record may submit into one window and group (every complete
  window but all-time, which never ends).  Each window state of the head counts the entries
  submitted into it since the record was last saved whole (``WindowState.submissions``); a fill
  counts the entries it finds there.  Heads written before the counters existed (release
  0.1.0) count nothing, and release 0.2.0 added only later submissions to them, so below index
  format 3 a counter may count short: what a record submitted into a window is then the larger
  of its counter and the entries it holds there (exact unless a trim dropped some of those), and
  a limited write counts them (one more read round: ``RecordWriter._count_held``).  Raising the
  index to format 3 recounts every head so (``upgrade.py``); from then on the counter alone is
  exact, and ``verify`` holds it to the entries.

A limit refuses with :class:`SubmissionLimited` (RESOURCE_EXHAUSTED) and the seconds until it
lets the record submit again: the next minute, or the end of the full window (none when that
window has ended: the entry can never be accepted there).  Record writes by the write role are
limited; an admin's bulk load is not (it imports history).  A refused write changes nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Protocol

from ..errors import InvalidArgument, ScoreOutOfRange, SubmissionLimited
from ..proto import index_pb2
from .values import normalize_score

MAX_LIMIT = 0xFFFF_FFFF


class LimitedWindow(Protocol):
    """What a submission limit needs of a window (directory.py's Window, which builds on this module)."""

    end: int

    def describe(self) -> str: ...


@dataclasses.dataclass(frozen=True)
class ScoreRules:
    """What an index accepts.  None / 0: no such rule."""

    min_score: int | float | None = None
    max_score: int | float | None = None
    max_per_window: int = 0
    max_per_minute: int = 0

    def __bool__(self) -> bool:
        return self != NO_RULES

    def checked(self, score_type: str, columns: tuple[str, ...] = ()) -> ScoreRules:
        """These rules with their bounds in the index's score type; InvalidArgument naming a bad one."""
        if columns and (self.min_score is not None or self.max_score is not None):
            raise InvalidArgument(
                "an index ranking by columns takes no min_score or max_score (each column means something "
                "else); its submission limits apply"
            )
        bounds = []
        for name in ("min_score", "max_score"):
            value = getattr(self, name)
            try:
                bounds.append(None if value is None else normalize_score(value, score_type))
            except InvalidArgument as exc:
                raise InvalidArgument(f"{name}: {exc}") from None
        low, high = bounds
        if low is not None and high is not None and low > high:
            raise InvalidArgument(f"min_score {low} is above max_score {high}: no score would be accepted")
        for name in ("max_per_window", "max_per_minute"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_LIMIT:
                raise InvalidArgument(f"{name} must be an integer from 0 (no limit) to {MAX_LIMIT}, not {value!r}")
        return ScoreRules(low, high, self.max_per_window, self.max_per_minute)

    def to_proto(self) -> index_pb2.ScoreRules:
        message = index_pb2.ScoreRules(max_per_window=self.max_per_window, max_per_minute=self.max_per_minute)
        for name in ("min_score", "max_score"):
            value = getattr(self, name)
            if value is not None:
                bound = getattr(message, name)
                if isinstance(value, float):
                    bound.double = value
                else:
                    bound.int = value
        return message

    @classmethod
    def from_proto(cls, message: index_pb2.ScoreRules) -> ScoreRules:
        def bound(name: str) -> int | float | None:
            if not message.HasField(name):
                return None
            field = getattr(message, name)
            kind = field.WhichOneof("kind")
            return getattr(field, kind) if kind is not None else None

        return cls(bound("min_score"), bound("max_score"), message.max_per_window, message.max_per_minute)

    def describe(self) -> str:
        parts = []
        if self.min_score is not None:
            parts.append(f"scores from {self.min_score}")
        if self.max_score is not None:
            parts.append(f"scores up to {self.max_score}")
        if self.max_per_window:
            parts.append(f"{self.max_per_window} submissions per record and window")
        if self.max_per_minute:
            parts.append(f"{self.max_per_minute} submissions per record and minute")
        return ", ".join(parts) or "no score rules"

    # -- checks -----------------------------------------------------------------------------

    def check_score(self, score: int | float) -> None:
        """Refuse ``score`` (already in the index's type) if it is out of range."""
        if self.min_score is not None and score < self.min_score:
            raise ScoreOutOfRange(
                f"score {score} is below the index's lowest accepted score {self.min_score} (rule min_score)",
                "min_score",
            )
        if self.max_score is not None and score > self.max_score:
            raise ScoreOutOfRange(
                f"score {score} is above the index's highest accepted score {self.max_score} (rule max_score)",
                "max_score",
            )

    def count_minute(self, head: index_pb2.RecordHead, entries: int, clock: float) -> None:
        """Count ``entries`` submissions in the current minute into ``head``, or refuse them."""
        if not self.max_per_minute or not entries:
            return
        now = int(clock)
        minute = now // 60
        used = head.in_minute if head.minute == minute else 0
        if used + entries > self.max_per_minute:
            if entries > self.max_per_minute:
                raise SubmissionLimited(
                    f"{entries} entries in one write: more than the {self.max_per_minute} a record may submit per "
                    "minute (rule max_per_minute)",
                    "max_per_minute",
                    None,
                )
            wait = 60 - now % 60
            raise SubmissionLimited(
                f"the record submitted {used} of its {self.max_per_minute} entries this minute (rule max_per_minute): "
                f"retry in {wait} s",
                "max_per_minute",
                float(wait),
            )
        head.minute = minute
        head.in_minute = used + entries

    def check_windows(self, counts: Iterable[tuple[LimitedWindow, int]], now: int, timebase: int) -> None:
        """Refuse when a window would hold more submissions than allowed.

        ``counts`` gives each limited window touched (complete, all-time aside: the caller picks
        them) with the submissions its state would then count; ``now`` is the index's clock in its
        timebase (``timebase`` units per second).
        """
        limit = self.max_per_window
        if not limit:
            return
        for window, count in counts:
            if count > limit:
                retry = (window.end - now) / timebase if window.end > now else None
                ends = f"retry once it ends, in {retry:g} s" if retry is not None else "it has ended"
                raise SubmissionLimited(
                    f"the record would submit {count} entries into {window.describe()}, more than the "
                    f"{limit} allowed (rule max_per_window); {ends}",
                    "max_per_window",
                    retry,
                )


NO_RULES = ScoreRules()
