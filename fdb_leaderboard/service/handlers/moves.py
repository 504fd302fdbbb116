"""Moving whole indexes: dumps, restores, and writes paused for a move."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import grpc

from ...proto import service_pb2 as pb
from .. import served_dumps
from ..entry_checks import StaleIndex
from ..status import Answer
from .calling import CallContext, ClientGone, Handlers, actor_of, answer_for, rpc_handler


class MoveHandlers(Handlers):
    """The handlers of moving whole indexes."""

    def Dump(self, requests: Iterator[pb.DumpRequest], context: CallContext) -> Iterator[pb.DumpPart]:
        """The index's dump as it takes writes (``served_dumps.py``): one request, a stream of parts."""
        request = next(requests, None)
        if request is None or not request.index:
            raise Answer(grpc.StatusCode.INVALID_ARGUMENT, "Dump's request must name the index")
        if next(requests, None) is not None:
            raise Answer(grpc.StatusCode.INVALID_ARGUMENT, "Dump takes exactly one request message")
        if request.catch_up_seconds < 0 or request.catch_up_seconds != request.catch_up_seconds:
            raise Answer(grpc.StatusCode.INVALID_ARGUMENT, "catch_up_seconds must be a number of seconds, 0 or more")
        return _streamed(
            "Dump", lambda: served_dumps.ServedDump(self.catalog, request, context.is_active, actor_of(context)).parts()
        )

    def Restore(self, requests: Iterator[pb.RestoreRequest], context: CallContext) -> Iterator[pb.RestoreProgress]:
        """A new index from a dump's parts (``served_dumps.py``), named once complete; yields progress."""
        first = next(requests, None)
        if first is None:
            raise Answer(grpc.StatusCode.INVALID_ARGUMENT, "Restore needs the dump's parts, its header first")
        return _streamed(
            "Restore",
            lambda: served_dumps.restore_served(self.catalog, first, requests, context.is_active, actor_of(context)),
        )

    @rpc_handler
    def SetWritesPaused(self, request: pb.SetWritesPausedRequest, context: CallContext) -> pb.SetWritesPausedResponse:
        if request.paused:
            reason = request.reason or "an operator paused them (fdb-leaderboard index pause)"
            self.catalog.set_writes_paused(request.index, -1, reason[:200], actor_of(context))
        else:
            self.catalog.set_writes_paused(request.index, 0, actor=actor_of(context))
        return pb.SetWritesPausedResponse()


def _streamed(method: str, replies: Callable[[], Iterator[Any]]) -> Iterator[Any]:
    """The messages of ``replies()``, with what ends them early (from their start on: the checks
    of the request too) answered as ``rpc_handler`` answers (a stream's status)."""
    try:
        yield from replies()
    except Answer:
        raise
    except (ClientGone, served_dumps.Stopped):
        raise Answer(grpc.StatusCode.CANCELLED, f"{method} cancelled by the client") from None
    except StaleIndex as stale:
        raise Answer(grpc.StatusCode.ABORTED, f"{stale} during the {method}") from None
    except Exception as exc:
        raise answer_for(exc, method) from exc
