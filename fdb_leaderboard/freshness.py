"""How fresh a read must be: the bounds every door takes (``max_staleness`` in milliseconds, and a
commit version to see at least), checked by one rule.

FoundationDB keeps versions readable for 5 seconds, so a read cannot be staler than that; a commit
version is what a score write's answer gives (``commit-version``).  A leaf: the store, the wire
format and the front ends all check freshness here.
"""

from __future__ import annotations

from .errors import InvalidArgument

MAX_STALENESS_MS = 5000


def check_staleness(value: object, what: str = "max_staleness") -> int:
    """A max_staleness in milliseconds (0 to MAX_STALENESS_MS), from an int or its text."""
    try:
        ms = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise InvalidArgument(f"{what} must be a whole number of milliseconds, not {value!r}") from None
    if isinstance(value, bool) or not 0 <= ms <= MAX_STALENESS_MS:
        raise InvalidArgument(f"{what} must be from 0 to {MAX_STALENESS_MS} milliseconds, not {value!r}")
    return ms


def check_version(value: object, what: str = "min_version") -> int:
    """A commit version (0 or more), from an int or its text."""
    try:
        version = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise InvalidArgument(f"{what} must be a commit version (a whole number), not {value!r}") from None
    if isinstance(value, bool) or not 0 <= version < 1 << 63:
        raise InvalidArgument(f"{what} must be a commit version (a whole number), not {value!r}")
    return version
