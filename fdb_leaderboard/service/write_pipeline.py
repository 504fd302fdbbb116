"""Score writes committed together: a few threads each taking the writes queued meanwhile as one batch.

Each batch is one commit on the embedded store (with group commit) and one transaction on
FoundationDB; its answers go back to the event loop together once it is durable.  A write that
waited in the queue longer than it has left is answered UNAVAILABLE, not applied, to retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

import grpc

from ..store import Database
from ..store.api import call_deadline
from .handlers.calling import answer_for
from .status import Answer
from .timeouts import ServedCall

# A queued score write with less time left than this is answered at once, not run (see WritePipeline).
LATE_SECONDS = 1.0
LATE = (
    "the store did not take this write before its deadline (the writes queued before it were still "
    "waiting for the cluster); it was not applied: retry"
)
# The most score writes (an entry's ``pipelined``) the write pipeline puts in one commit (the
# store's own group-commit batch).
PIPELINE_BATCH = 64
# Write threads on a store whose commits wait for a network (FoundationDB): batches in flight at once.
PIPELINE_THREADS = 3


def settle(done: asyncio.Future, result: Any, error: BaseException | None) -> None:
    """Give ``done`` its outcome (on the event loop), unless it has one already (the call timed out
    or its client went away)."""
    if not done.done():
        if error is None:
            done.set_result(result)
        else:
            done.set_exception(error)


def _late(left: float, waited: float) -> bool:
    """Whether a queued write with ``left`` seconds to its deadline, after ``waited`` in the queue,
    is answered without running (see :data:`LATE_SECONDS`)."""
    return left < LATE_SECONDS and waited > left


def _settle_all(outcomes: list[tuple[asyncio.Future, Any, BaseException | None]]) -> None:
    for done, result, error in outcomes:
        settle(done, result, error)


class WritePipeline:
    """Score writes run on a few threads of their own, each taking the writes queued meanwhile as
    one batch that the store commits together (``Database.run_together``), their answers handed
    to the event loop together once it is durable.

    On the embedded store one thread runs each batch in one commit: a worker thread per write
    cost a wake-up there and back and a turn in the group commit's queue (with six writers a
    quarter of the server's CPU per write).  On FoundationDB a batch is one transaction (one read
    version, one commit) instead of one per write, and ``threads`` batches are in flight at once:
    one thread's batch runs while another's commits."""

    def __init__(self, db: Database, threads: int = 1) -> None:
        self.db = db
        self._queue: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future, float, Callable, Any, ServedCall]] = deque()
        self._ready = threading.Condition()
        self._stopping = False
        self._threads = [
            threading.Thread(target=self._serve, name=f"writes_{number}", daemon=True) for number in range(threads)
        ]
        for thread in self._threads:
            thread.start()

    def submit(
        self, loop: asyncio.AbstractEventLoop, done: asyncio.Future, handler: Callable, request: Any, call: ServedCall
    ) -> None:
        """Run ``handler(request, call)`` with the next batch and settle ``done`` with its outcome
        (on ``loop``) once the batch committed; not at all if ``call`` is cancelled by then."""
        with self._ready:
            self._queue.append((loop, done, time.monotonic(), handler, request, call))
            self._ready.notify()

    def stop(self) -> None:
        """Run what is queued (cancelled calls are skipped), then end the threads."""
        with self._ready:
            self._stopping = True
            self._ready.notify_all()
        for thread in self._threads:
            thread.join()

    def _serve(self) -> None:
        while True:
            with self._ready:
                while not self._queue and not self._stopping:
                    self._ready.wait()
                if not self._queue:
                    return
                batch = [self._queue.popleft() for _ in range(min(len(self._queue), PIPELINE_BATCH))]
            self._run(batch)

    def _run(
        self, batch: list[tuple[asyncio.AbstractEventLoop, asyncio.Future, float, Callable, Any, ServedCall]]
    ) -> None:
        # A call answered already (its deadline passed, or its client left) is not run; nor one
        # that waited in the queue longer than it has left, too little to wait for the store (the
        # writes before it waited for the cluster): it is answered now, not applied, to retry.
        taken = [queued for queued in batch if not queued[5].cancelled]
        now = time.monotonic()
        late = [queued for queued in taken if _late(queued[5].time_remaining(), now - queued[2])]
        if late:
            taken = [queued for queued in taken if queued not in late]
            for loop, done, *_ in late:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(_settle_all, [(done, None, Answer(grpc.StatusCode.UNAVAILABLE, LATE))])
        calls = [functools.partial(handler, request, call) for *_, handler, request, call in taken]
        # The store waits for the cluster no longer than the first of these calls must be answered.
        deadline = min((call.time_remaining() for *_, call in taken), default=float("inf"))
        try:
            with call_deadline(deadline):
                outcomes = self.db.run_together(calls)
            versions = self.db.last_commit_versions()
        except Exception as exc:  # the store failed outside any call: every call of the batch answers it
            outcomes, versions = [(None, exc)] * len(calls), []
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future, Any, BaseException | None]]] = {}
        for number, ((loop, done, *_), (result, error)) in enumerate(zip(taken, outcomes, strict=True)):
            if error is not None and not isinstance(error, Answer):  # the commit's: the store's status
                error = answer_for(error, "a score write")
            elif error is None and number < len(versions) and versions[number]:
                result = Committed(result, versions[number])
            by_loop.setdefault(loop, []).append((done, result, error))
        for loop, settled in by_loop.items():
            with contextlib.suppress(RuntimeError):  # the loop closed: the server stopped without waiting
                loop.call_soon_threadsafe(_settle_all, settled)


class Committed(NamedTuple):
    """A write's answer and the version it committed at (told in the trailing metadata)."""

    response: Any
    version: int
