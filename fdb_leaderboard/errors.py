"""Errors the index raises; each maps to one gRPC status code in the service."""

from __future__ import annotations


class LeaderboardError(Exception):
    """Base class of the index's errors."""


class InvalidArgument(LeaderboardError, ValueError):
    """The request is malformed (bad type, out of range, wrong arity...)."""


class NotFound(LeaderboardError, LookupError):
    """The index, window or record asked for does not exist."""


class WindowNotFound(NotFound):
    """No window of the requested type contains the requested timestamp."""


class FailedPrecondition(LeaderboardError):
    """The request is well formed but the index's state does not allow it."""


class WindowNotReady(FailedPrecondition):
    """The window exists but is still being filled from stored records; it is not served yet."""


class FormatTooNew(FailedPrecondition):
    """The store or index is in a format this release does not read (a newer release wrote it)."""


class AlreadyExists(LeaderboardError):
    """An index with that name or subspace already exists with other options, or an idempotency
    key was used before for another request."""


class Unavailable(LeaderboardError):
    """The index cannot take this call now (its writes are paused while a dump finishes, or it
    moved to another store): retry later, or elsewhere."""


class ResourceExhausted(LeaderboardError):
    """A bound of the index is reached (e.g. the idempotency keys it keeps): retry later."""


class RuleRefusal(LeaderboardError):
    """A write one of the index's score rules refuses; ``rule`` names it (``min_score``,
    ``max_score``, ``max_per_window``, ``max_per_minute``)."""

    def __init__(self, message: str, rule: str = "") -> None:
        super().__init__(message)
        self.rule = rule


class ScoreOutOfRange(RuleRefusal, InvalidArgument):
    """A score below the index's lowest accepted score or above its highest."""


class SubmissionLimited(RuleRefusal, ResourceExhausted):
    """A record submitted as many entries as a limit allows; ``retry_after`` says in how many
    seconds it may again (None: not for this entry's window, which will not accept more)."""

    def __init__(self, message: str, rule: str = "", retry_after: float | None = None) -> None:
        super().__init__(message, rule)
        self.retry_after = retry_after


class NoWindowsWarning(UserWarning):
    """A score was stored in an index with no windows: it is ranked nowhere until a window update."""
