"""Shared transactions on FoundationDB: ``run_together``'s calls committed together, one read
version and one commit for many, the calls that cannot share taken out and run alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .api import (
    Outcome,
    StoreError,
    TransactionTooLarge,
)
from .fdb_binding import _LIMIT_ERRORS, _MAYBE_COMMITTED, _TRANSACTION_TIMED_OUT, CONFLICT
from .fdb_transactions import DirectFdbTransaction, FdbTransaction

T = TypeVar("T")

# A shared transaction (``run_together``) takes calls until it has written this many bytes or
# spent this long on their work; the calls left go on in the next one.  FoundationDB's limits
# are 10 MB and 5 s; it advises keeping transactions under 1 MB.
SHARED_BYTES = 1_000_000
SHARED_SECONDS = 1.0
# A shared transaction that conflicted this many times is split in two, each half its own.
SPLIT_AFTER_CONFLICTS = 2


class _Abandon(BaseException):
    """A call of a shared transaction that the transaction cannot keep: it raised after writing
    (its writes cannot be taken back alone), or a read failed for the whole transaction
    (``error``).  A BaseException, so handlers' ``except Exception`` let it through."""

    def __init__(self, error: BaseException | None = None) -> None:
        super().__init__()
        self.error = error


class _Shared:
    """The transaction a ``run_together`` batch shares: this thread's ``run`` calls join it."""

    __slots__ = ("view", "fdb_error")

    def __init__(self, view: Any, fdb_error: type[Exception]) -> None:
        self.view = view
        self.fdb_error = fdb_error

    def join(self, fn: Callable[..., T], args: tuple, kwargs: dict) -> T:
        """``fn(tr, ...)`` in the shared transaction, at once; what it wrote commits with the others."""
        view = self.view
        before = view.writes
        try:
            return fn(view, *args, **kwargs)
        except self.fdb_error as error:  # the transaction's, not the call's: it is retried whole
            raise _Abandon(error) from error
        except Exception:
            if view.writes != before:
                raise _Abandon() from None
            raise


def outcomes_of(outcomes: list[Outcome], done: dict[int, Outcome]) -> None:
    """Copy the outcomes of a committed shared transaction's calls into ``outcomes``."""
    for position, outcome in done.items():
        outcomes[position] = outcome


class SharedTransactions:
    """``run_together`` of :class:`~.fdb_backend.FdbDatabase`: its calls in shared transactions."""

    def run_together(self, calls: Sequence[Callable[[], T]]) -> list[Outcome]:
        """Run ``calls`` in shared transactions: each call's ``run`` joins its batch's one
        transaction (one read version, one commit), and its outcome is known once that committed.

        - A call that raises before writing anything is refused alone (the others commit); one
          that raises after writing is taken out and the transaction run again without it (at the
          same read version), and it then runs on its own after the batch, as if alone.
        - A conflict retries the whole transaction; one that conflicts
          :data:`SPLIT_AFTER_CONFLICTS` times is split in two halves, each run on its own the
          same way (a transaction too large for FoundationDB likewise).
        - An unknown commit result is settled by the batch's marker key, as for one call
          (:meth:`_transact`): the retry answers the committed attempt's outcomes.
        - A transaction takes calls until it wrote :data:`SHARED_BYTES` or worked
          :data:`SHARED_SECONDS`; the rest go on in the next.

        Calls run one after another on this thread, each seeing what the ones before it wrote
        (one record written twice in a batch is written twice, in order).
        """
        outcomes: list[Outcome] = [(None, None)] * len(calls)
        versions = [0] * len(calls)
        alone: list[int] = []
        members = list(range(len(calls)))
        self._local.shared_versions = versions
        while members:
            members = self._shared_transaction(calls, members, outcomes, alone)
        for position in alone:
            self._local.versions = []
            try:
                outcomes[position] = (calls[position](), None)
            except Exception as exc:
                outcomes[position] = (None, exc)
            versions[position] = self._local.versions[-1] if self._local.versions else 0
        self._local.versions = versions
        return outcomes

    def _shared_transaction(
        self, calls: Sequence[Callable[[], Any]], members: list[int], outcomes: list[Outcome], alone: list[int]
    ) -> list[int]:
        """Commit the ``members`` of ``calls`` in one transaction (or two halves, ...) and fill in
        their ``outcomes``; calls to run on their own join ``alone``.  Returns the members left
        for the next transaction (over the size or time budget)."""
        if self._db is None:
            raise StoreError(f"database {self.url} is closed")
        tr = self._db.create_transaction()
        timeout_ms = self._call_timeout_ms()  # bounded by the calls' deadline (run_together's caller sets it)
        tr.options.set_timeout(timeout_ms)
        marker = self._marker_key()
        maybe: dict[int, tuple[dict[int, Outcome], list[int]]] = {}  # attempts whose commit is unknown
        attempt = retries = conflicts = unknown = 0
        read_version: int | None = None  # kept when a call is taken out: the others run again on it
        view: FdbTransaction | DirectFdbTransaction | None = None
        try:
            while True:
                attempt += 1
                view = DirectFdbTransaction(tr, True) if self.direct else FdbTransaction(tr, self._fdb, True)
                done: dict[int, Outcome] = {}
                left: list[int] = []
                try:
                    tr.add_read_conflict_key(marker)
                    if maybe:
                        committed = view.get(marker)
                        if committed is not None:
                            done, left = maybe[int(committed)]
                            outcomes_of(outcomes, done)
                            self._kept(done)
                            return left
                    taken_out, left = self._run_members(calls, members, view, done, alone)
                    if taken_out:  # start again without it, on the same snapshot
                        read_version = read_version or tr.get_read_version().wait()
                        tr.reset()
                        tr.options.set_timeout(timeout_ms)
                        tr.set_read_version(read_version)
                        continue
                    try:
                        version = self._commit_marked(tr, marker, attempt)
                    except self._fdb.FDBError as error:
                        if error.code in _MAYBE_COMMITTED:
                            maybe[attempt] = (done, left)
                        raise
                    for position in done:
                        self._local.shared_versions[position] = version
                    outcomes_of(outcomes, done)
                    self._kept(done)
                    return left
                except self._fdb.FDBError as error:
                    failure = self._shared_failure(error, bool(maybe), timeout_ms)
                    if failure is not None:
                        if isinstance(failure, TransactionTooLarge) and len(members) > 1:
                            return self._split(calls, members, outcomes, alone)
                        for position in members:
                            if position not in alone:
                                outcomes[position] = (None, failure)
                        return []
                    retries += 1
                    conflicts += error.code == CONFLICT
                    unknown += error.code in _MAYBE_COMMITTED
                    read_version = None
                    if conflicts >= SPLIT_AFTER_CONFLICTS and len(members) > 1 and not maybe:
                        return self._split(calls, members, outcomes, alone)
                    try:
                        tr.on_error(error).wait()  # raises when the error is not retryable
                    except self._fdb.FDBError as final:
                        failure = self._shared_failure(final, bool(maybe), timeout_ms) or StoreError(
                            f"FoundationDB error {final.code}: {final.description}"
                        )
                        for position in members:
                            if position not in alone:
                                outcomes[position] = (None, failure)
                        return []
        finally:
            self._local.shared = None
            rounds = view.rounds if view is not None else None
            self.stats.add(
                transactions=1,
                read_rounds=rounds.count if rounds else 0,
                reads=rounds.reads if rounds else 0,
                commits=1,
                retries=retries,
                conflicts=conflicts,
                unknown_results=unknown,
                writes=view.writes if view is not None else 0,
                bytes_written=view.bytes_written if view is not None else 0,
            )

    def _kept(self, done: dict[int, Outcome]) -> None:
        """Tell ``on_commit`` how many write calls a committed shared transaction kept: those
        that succeeded (a call refused before writing left nothing in it).  A transaction that
        kept none is not told, as the embedded store commits nothing for such a batch."""
        if self.on_commit is None:
            return
        kept = sum(1 for _, error in done.values() if error is None)
        if kept:
            self.on_commit(kept)

    def _run_members(
        self,
        calls: Sequence[Callable[[], Any]],
        members: list[int],
        view: Any,
        done: dict[int, Outcome],
        alone: list[int],
    ) -> tuple[bool, list[int]]:
        """Run the members (but those to run alone) in the shared ``view``, into ``done``.
        Returns (whether one was taken out: it wrote and raised, so the transaction must start
        again without it; the members left over the budget)."""
        began = time.monotonic()
        self._local.shared = _Shared(view, self._fdb.FDBError)
        try:
            for number, position in enumerate(members):
                if position in alone:
                    continue
                if done and (view.bytes_written >= SHARED_BYTES or time.monotonic() - began >= SHARED_SECONDS):
                    return False, [p for p in members[number:] if p not in alone]
                try:
                    done[position] = (calls[position](), None)
                except _Abandon as abandoned:
                    if abandoned.error is not None:
                        raise abandoned.error from None  # the transaction's error: retried whole
                    alone.append(position)
                    return True, []
                except Exception as exc:
                    done[position] = (None, exc)
            return False, []
        finally:
            self._local.shared = None

    def _split(
        self, calls: Sequence[Callable[[], Any]], members: list[int], outcomes: list[Outcome], alone: list[int]
    ) -> list[int]:
        """Commit ``members`` as two halves, each a shared transaction of its own."""
        half = len(members) // 2
        for part in (members[:half], members[half:]):
            while part:
                part = self._shared_transaction(calls, part, outcomes, alone)
        return []

    def _shared_failure(self, error: Any, maybe_committed: bool, timeout_ms: int) -> StoreError | None:
        """What a shared transaction's FoundationDB error means for its calls, or None when it is
        to be retried (FoundationDB's retry loop decides that in ``on_error``)."""
        if error.code == _TRANSACTION_TIMED_OUT:
            return self._timed_out(True, timeout_ms, False, maybe_committed)
        mapped = _LIMIT_ERRORS.get(error.code)
        if mapped is not None:
            return mapped(f"FoundationDB error {error.code}: {error.description}")
        return None
