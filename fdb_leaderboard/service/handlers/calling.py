"""What every handler shares: its call's context, the wrapper answering its errors, its helpers."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable
from typing import Any, Protocol

import grpc
from google.protobuf.message import Message

from ...access import ANONYMOUS
from ...errors import InvalidArgument, RuleRefusal, SubmissionLimited
from ...index import LeaderboardIndex
from ...store.api import call_deadline, read_bounds
from ..catalog import Catalog
from ..entry_checks import StaleIndex
from ..status import Answer, cap_message, status_of
from ..upgrades import Upgrades
from ..window_events import WindowEvents

log = logging.getLogger("fdb_leaderboard.service")


class CallContext(Protocol):
    """What a handler may ask about its call."""

    def is_active(self) -> bool:
        """False once the client went away or the call's deadline passed: long loops stop."""
        ...

    def time_remaining(self) -> float: ...


DEADLINE_MARGIN = 2.0  # seconds before its deadline a call of many batches answers with its progress


def actor_of(context: CallContext) -> str:
    """Who makes the call: its token's name (``anonymous`` without tokens)."""
    return getattr(context, "actor", ANONYMOUS)


def rule_trailing(exc: RuleRefusal) -> tuple[tuple[str, str], ...]:
    """The trailing metadata of a score rule's refusal: the rule, and when to retry."""
    trailing = [("rule", exc.rule)]
    if isinstance(exc, SubmissionLimited) and exc.retry_after is not None:
        trailing.append(("retry-after", f"{exc.retry_after:g}"))
    return tuple(trailing)


class ClientGone(Exception):
    """The client cancelled a stream, or it ended while the handler was reading it."""


def rpc_handler(method: Callable[..., Any]) -> Callable[..., Any]:
    """A handler whose errors leave as the status they answer with, within its call's deadline; an
    index found dropped and created again meanwhile is opened afresh and the call run again."""

    @functools.wraps(method)
    def handle(self: Handlers, request: Any, context: CallContext) -> Any:
        try:
            # The store waits for its cluster no longer than the call's deadline: a call the
            # cluster cannot serve in time answers UNAVAILABLE (saying whether a write may have
            # committed) before the caller gives up on it.
            with call_deadline(context.time_remaining()), _read_bounds(context):
                try:
                    return method(self, request, context)
                except StaleIndex as stale:  # nothing was committed: open the name afresh and run again
                    self.catalog.forget(stale.name)
                    if not isinstance(request, Message):  # a stream's messages are consumed already
                        raise Answer(grpc.StatusCode.ABORTED, f"{stale}; retry") from None
                    return method(self, request, context)
        except Answer:
            raise
        except Exception as exc:
            raise answer_for(exc, method.__name__) from exc

    return handle


def _read_bounds(context: CallContext) -> contextlib.AbstractContextManager[None]:
    """The freshness the call's reads must have (``max_staleness_ms``, ``min_version`` of its
    context, where the dispatcher set them), for the store's read transactions."""
    staleness, version = getattr(context, "max_staleness_ms", 0), getattr(context, "min_version", 0)
    return read_bounds(staleness, version) if staleness or version else contextlib.nullcontext()


def answer_for(exc: Exception, method: str) -> Answer:
    """The status a call of ``method`` answers with when ``exc`` ended it (INTERNAL, logged, for
    an exception no status is known for)."""
    if isinstance(exc, Answer):
        return exc
    code = status_of(exc)
    if code is None:
        log.error("%s failed", method, exc_info=exc)
        return Answer(grpc.StatusCode.INTERNAL, f"{method} failed unexpectedly; see the server log")
    trailing = rule_trailing(exc) if isinstance(exc, RuleRefusal) else ()
    return Answer(code, cap_message(str(exc)), trailing)


def idempotency_key_of(request: Any) -> str | None:
    """A write request's idempotency key (None: the write is not keyed)."""
    return request.idempotency_key or None


def before_deadline(context: CallContext, margin: float = DEADLINE_MARGIN) -> Callable[[], bool]:
    """Whether a call of many batches goes on: the caller waits, and a batch still fits before its
    deadline (so the answer reaches it: the caller sends the call again to go on)."""
    return lambda: context.is_active() and context.time_remaining() > margin


class Handlers:
    """What the handler groups share: the catalog, the page limit, and the helpers below (the
    servicer, :class:`~fdb_leaderboard.service.grpc_service.LeaderboardService`, sets them up)."""

    catalog: Catalog
    max_page: int
    housekeeping: Any
    window_events: WindowEvents
    delivery: Any
    upgrades: Upgrades

    def _fill_soon(self, filling: Any) -> None:
        """Have the server's background maintenance run now if windows were added: it fills those
        ``filling`` and sees when the new ones end (to notice their end on time)."""
        if filling and self.housekeeping is not None:
            self.housekeeping.wake()

    def _check_page(self, rows: int, what: str, hint: str) -> None:
        if rows > self.max_page:
            raise InvalidArgument(
                f"{what} asks for {rows} rows; this server returns at most {self.max_page} per call{hint}"
            )

    def _index(self, name: str) -> LeaderboardIndex:
        return self.catalog.get(name)
