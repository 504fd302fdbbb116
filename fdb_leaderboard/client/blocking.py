"""The blocking client, :class:`LeaderboardClient`, and its watches."""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Concatenate

import grpc

from .. import wire
from ..index import RankedEntry
from ..proto import service_pb2 as pb
from ..proto import service_pb2_grpc as pb_grpc
from .channel import CHANNEL_OPTIONS, Freshness, HeadersInterceptor, call_metadata, channel_credentials
from .messages import _P, _T, Key, Op, UnaryCall, rank_request
from .operations import BOUNDED_READS, STALENESS_PARAMETER, UnaryOps, advance, signed_like
from .retry import DEFAULT_RETRY, RetryPolicy, Tries, new_idempotency_key
from .streams import (
    LoadMessages,
    MoveProgress,
    VerifyMerge,
    answering,
    dump_request,
    load_retry_codes,
    restore_requests,
    verify_pieces,
    watch_ended,
    watched_entry,
    window_ends_request,
)


def _blocking(op: Callable[_P, Op[_T]]) -> Callable[Concatenate[Any, _P], _T]:
    """The operation as a method of the blocking client."""
    if op.__name__ in BOUNDED_READS:

        def method(self: LeaderboardClient, *args: Any, max_staleness: int | None = None, **kwargs: Any) -> Any:
            return self._run(op(*args, **kwargs), self._staleness(max_staleness))

        return signed_like(method, op, "LeaderboardClient", STALENESS_PARAMETER)

    def plain(self: LeaderboardClient, *args: Any, **kwargs: Any) -> Any:
        return self._run(op(*args, **kwargs))

    return signed_like(plain, op, "LeaderboardClient")


class LeaderboardClient:
    """The blocking client (see the module docstring); a thread-safe channel, closed by ``close``."""

    def __init__(
        self,
        address: str,
        timeout: float | None = 30.0,
        *,
        token: str | None = None,
        ca: str | None = None,
        cert: str | None = None,
        key: str | None = None,
        retry: RetryPolicy | None = DEFAULT_RETRY,
        user: str | None = None,
        max_staleness: int = 0,
    ) -> None:
        """``token``: a bearer token; ``ca``: a CA file to verify the server's TLS certificate
        (TLS is used when ``ca`` or ``cert`` is given); ``cert``/``key``: a client certificate;
        ``retry``: how calls are sent again (None: once), each try with ``timeout``; ``user``: who
        the caller says it is, recorded by a server without tokens in its audit trail (the CLI
        sends the local user); ``max_staleness``: milliseconds the reads may lag behind the
        latest writes (0: exact; each read also takes ``max_staleness=``), always seeing this
        client's own score writes, through any server of the store (docs/foundationdb.md,
        "Fresh reads and stale ones")."""
        self.freshness = Freshness(max_staleness)
        credentials = channel_credentials(address, token, ca, cert, key)
        options = CHANNEL_OPTIONS
        if credentials is None:
            channel = grpc.insecure_channel(address, options)
        else:
            channel = grpc.secure_channel(address, credentials, options)
        self._raw_channel = channel
        self._connect = lambda: LeaderboardClient(
            address, timeout, token=token, ca=ca, cert=cert, key=key, retry=retry, user=user
        )
        metadata = call_metadata(token, user)
        self.channel = grpc.intercept_channel(channel, HeadersInterceptor(metadata)) if metadata else channel
        self.stub = pb_grpc.LeaderboardStub(self.channel)
        self.timeout = timeout
        self.retry = retry or RetryPolicy(attempts=1)

    def close(self) -> None:
        self._raw_channel.close()

    def __enter__(self) -> LeaderboardClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _staleness(self, per_call: int | None) -> int | None:
        return self.freshness.staleness(per_call)

    def _run(self, op: Op[_T], staleness: int | None = None) -> _T:
        step = advance(op, None)
        while isinstance(step, UnaryCall):
            step = advance(op, self._send(step, staleness))
        return step.value

    def _send(self, call: UnaryCall, staleness: int | None = None) -> Any:
        send = getattr(self.stub, call.method)
        tries = Tries(self.retry, call.retry_codes(self.retry))
        metadata = self.freshness.metadata(call, staleness)
        while True:
            try:
                if call.method in wire.SCORE_WRITES:
                    response, rpc = send.with_call(call.request, timeout=call.timeout or self.timeout)
                    self.freshness.note(rpc.trailing_metadata())
                    return response
                return send(call.request, timeout=call.timeout or self.timeout, metadata=metadata or None)
            except grpc.RpcError as exc:
                time.sleep(tries.wait_after(exc))

    create_index = _blocking(UnaryOps.create_index)
    list_indexes = _blocking(UnaryOps.list_indexes)
    drop_index = _blocking(UnaryOps.drop_index)
    set_maintenance = _blocking(UnaryOps.set_maintenance)
    set_writes_paused = _blocking(UnaryOps.set_writes_paused)
    update_windows = _blocking(UnaryOps.update_windows)
    list_windows = _blocking(UnaryOps.list_windows)
    save_sub_directory = _blocking(UnaryOps.save_sub_directory)
    sub_directories = _blocking(UnaryOps.sub_directories)
    groups = _blocking(UnaryOps.groups)
    expire = _blocking(UnaryOps.expire)
    fill = _blocking(UnaryOps.fill)
    trim = _blocking(UnaryOps.trim)
    keep_ahead = _blocking(UnaryOps.keep_ahead)
    expire_idempotency_keys = _blocking(UnaryOps.expire_idempotency_keys)
    verify = _blocking(UnaryOps.verify)
    verify_plan = _blocking(UnaryOps.verify_plan)

    def verify_report(
        self,
        index: str,
        max_problems: int = 0,
        timeout: float | None = None,
        progress: Callable[[pb.VerifyResponse], None] | None = None,
        parts: int = 1,
    ) -> pb.VerifyResponse:
        """The server's consistency check of the whole index, in calls each within the server's
        deadline and ``timeout``.  With ``parts`` above 1 the check is cut into about that many
        pieces over key ranges, run at once, each on a connection of its own (a server with several
        processes spreads them); ``progress`` then sees their answers summed."""
        if parts <= 1:
            return self._run(UnaryOps.verify_report(index, max_problems, timeout, progress))
        plan = verify_pieces(self.verify_plan(index, parts, timeout))
        merge = VerifyMerge(len(plan), max_problems, progress)

        def piece(number: int) -> pb.VerifyResponse:
            with self._connect() as own:
                return own._run(UnaryOps.verify_report(index, max_problems, timeout, merge.seen(number), plan[number]))

        with concurrent.futures.ThreadPoolExecutor(len(plan)) as pool:
            return merge.merged(list(pool.map(piece, range(len(plan)))))

    store_status = _blocking(UnaryOps.store_status)
    upgrade_index = _blocking(UnaryOps.upgrade_index)
    upgrade_store = _blocking(UnaryOps.upgrade_store)
    add_score = _blocking(UnaryOps.add_score)
    set_metadata = _blocking(UnaryOps.set_metadata)
    metadata = _blocking(UnaryOps.metadata)
    add_entries = _blocking(UnaryOps.add_entries)
    save_record = _blocking(UnaryOps.save_record)
    delete_record = _blocking(UnaryOps.delete_record)
    hide_record = _blocking(UnaryOps.hide_record)
    restore_record = _blocking(UnaryOps.restore_record)
    hidden_records = _blocking(UnaryOps.hidden_records)
    score_rules = _blocking(UnaryOps.score_rules)
    set_score_rules = _blocking(UnaryOps.set_score_rules)
    delete_records = _blocking(UnaryOps.delete_records)
    audit_events = _blocking(UnaryOps.audit_events)
    audit_retention = _blocking(UnaryOps.audit_retention)
    set_audit_retention = _blocking(UnaryOps.set_audit_retention)
    expire_audit_events = _blocking(UnaryOps.expire_audit_events)
    write_batch = _blocking(UnaryOps.write_batch)
    rank = _blocking(UnaryOps.rank)
    rank_and_entry = _blocking(UnaryOps.rank_and_entry)
    around = _blocking(UnaryOps.around)
    top = _blocking(UnaryOps.top)
    count = _blocking(UnaryOps.count)
    score_for_rank = _blocking(UnaryOps.score_for_rank)
    rank_for_score = _blocking(UnaryOps.rank_for_score)
    score_trim = _blocking(UnaryOps.score_trim)
    ranks = _blocking(UnaryOps.ranks)
    friends_board = _blocking(UnaryOps.friends_board)
    page = _blocking(UnaryOps.page)
    cohort = _blocking(UnaryOps.cohort)
    percentile = _blocking(UnaryOps.percentile)
    score_for_percentile = _blocking(UnaryOps.score_for_percentile)
    movement = _blocking(UnaryOps.movement)
    rank_history = _blocking(UnaryOps.rank_history)
    scan = _blocking(UnaryOps.scan)
    add_webhook = _blocking(UnaryOps.add_webhook)
    webhooks = _blocking(UnaryOps.webhooks)
    delete_webhook = _blocking(UnaryOps.delete_webhook)
    notice_window_ends = _blocking(UnaryOps.notice_window_ends)

    def all_groups(self, index: str, window_type: int = 0, timestamp: int | None = None) -> Iterator[tuple]:
        """Every group holding a value in the window, following continuations page by page."""
        continuation = b""
        while True:
            groups, continuation = self.groups(index, window_type, timestamp, continuation=continuation)
            yield from groups
            if not continuation:
                return

    def scan_all(self, index: str, scan_type: str = "BY_RANK", page: int = 100, **kwargs: Any) -> Iterator[RankedEntry]:
        """Every entry of a scan, following continuations page by page."""
        continuation = b""
        while True:
            entries, continuation = self.scan(index, scan_type, limit=page, continuation=continuation, **kwargs)
            yield from entries
            if not continuation:
                return

    def watch_rank(
        self,
        index: str,
        pk: Key,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
        timeout: float | None = None,
    ) -> RankWatch:
        """The record's value in the window with its rank (None: no value there), now and then
        whenever its rank, score or window changes (at most once a second), until the watch is
        closed (from any thread) or ``timeout`` seconds pass (None: no end).  Without
        ``timestamp``, the window is the current one of its type, following the clock."""
        return RankWatch(
            self.stub.WatchRank(rank_request(index, pk, window_type, timestamp, group, mode), timeout=timeout)
        )

    def watch_window_ends(
        self, index: str, after: int | None = None, top: int | None = None, timeout: float | None = None
    ) -> WindowEndWatch:
        """The index's ended windows (:class:`~fdb_leaderboard.wire.WindowEnd`) as they are noticed,
        from now on, or those after cursor ``after`` first (an event's ``cursor``: where to resume
        after a reconnect), each with its top ``top`` (default 10), until the watch is closed
        (from any thread) or ``timeout`` seconds pass (None: no end)."""
        return WindowEndWatch(self.stub.WatchWindowEnds(window_ends_request(index, after, top), timeout=timeout))

    def bulk_load(
        self,
        index: str,
        records: Iterable[tuple[Key, Sequence[tuple]]],
        batch_size: int = 500,
        rank_as_loaded: bool = False,
        progress: Callable[[int], None] | None = None,
        timeout: float | None = None,
        idempotency_key: str | None = None,
    ) -> int:
        """Stream ``(pk, entries)`` records to the server's Load; returns how many it saved.

        Each record replaces that record's entries.  ``progress`` gets the count of records
        saved so far, after each transaction the server commits.  If iterating ``records``
        raises, the stream ends there: the server saves what came before, then that exception
        is raised here (noting how many were saved); a record that cannot be sent does the same
        as InvalidArgument.  A record the server refuses raises a :class:`CallError`;
        :func:`load_refusal` tells which record and how many were saved.  No timeout by default:
        a load takes as long as its data.

        The load goes under an idempotency key: each of its transactions is applied once.  When
        ``records`` can be iterated again (a list, or an object whose ``__iter__`` starts over:
        not an iterator), a load cut off (UNAVAILABLE, DEADLINE_EXCEEDED) is sent again from
        its start and the server saves only the transactions it had not.
        """
        key = idempotency_key or new_idempotency_key()
        tries = Tries(self.retry, load_retry_codes(records, self.retry))
        while True:
            try:
                return self._load(index, records, batch_size, rank_as_loaded, progress, timeout, key)
            except grpc.RpcError as exc:
                time.sleep(tries.wait_after(exc))

    def _load(
        self,
        index: str,
        records: Iterable[tuple[Key, Sequence[tuple]]],
        batch_size: int,
        rank_as_loaded: bool,
        progress: Callable[[int], None] | None,
        timeout: float | None,
        idempotency_key: str,
    ) -> int:
        """One try of :meth:`bulk_load`."""
        messages = LoadMessages(index, batch_size, rank_as_loaded, idempotency_key)
        call = self.stub.Load(messages.requests(records), timeout=timeout)
        try:
            for answer in call:
                messages.saved(answer, progress)
        except KeyboardInterrupt:  # stop the server's load too: what it saved stays saved
            call.cancel()
            raise
        return messages.result()

    # -- dumps, restores, moves ---------------------------------------------------------------

    def dump(
        self,
        index: str,
        keep_paused: bool = False,
        moved_to: str = "",
        catch_up_seconds: float = 0.0,
        timeout: float | None = None,
    ) -> Iterator[pb.DumpPart]:
        """The index's dump, part by part, as the server copies it while the index takes writes
        (``fdb_leaderboard.index.snapshot``; :func:`~fdb_leaderboard.index.dumpfile.write_dump` writes
        it to a file).  ``keep_paused``: the index's writes stay refused afterwards (a move,
        see :meth:`move`).  A dump cut off is not sent again: start it again."""
        request = dump_request(index, keep_paused, moved_to, catch_up_seconds)
        call = self.stub.Dump(iter([request]), timeout=timeout)
        with answering(call):
            yield from call

    def restore(
        self, parts: Iterable[pb.DumpPart], index: str = "", timeout: float | None = None
    ) -> Iterator[pb.RestoreProgress]:
        """Send a dump's parts to the server, which restores them as the new index ``index`` (empty:
        the dumped index's name); yields its progress, the last with phase "done"."""
        call = self.stub.Restore(restore_requests(parts, index), timeout=timeout)
        with answering(call):
            yield from call

    def move(
        self,
        index: str,
        target: LeaderboardClient,
        target_index: str = "",
        moved_to: str = "",
        catch_up_seconds: float = 0.0,
        progress: Callable[[pb.DumpPart | pb.RestoreProgress], None] | None = None,
    ) -> tuple[pb.DumpEnd, pb.RestoreProgress]:
        """Copy the index to ``target``'s store while it takes writes here: the target rebuilds
        the board and applies the changes made meanwhile; the writes here are then refused
        (UNAVAILABLE naming ``moved_to``) while the last changes are copied, and stay refused:
        point the writers at the target then.  ``catch_up_seconds``: the longest the writes run
        on once the target's rebuild is done if they never let it catch up (0: 10 s).  Returns
        the dump's end and the restore's last progress.  If the restore fails, the index takes
        writes here again."""
        move = MoveProgress(index, moved_to, catch_up_seconds, progress)
        parts = (move.part(part) for part in self.dump(index, True, moved_to, catch_up_seconds))
        last = pb.RestoreProgress()
        try:
            for last in target.restore(parts, target_index or index):
                if move.pause_now(last):
                    self.set_writes_paused(index, True, move.reason)
        except BaseException:
            if move.paused:  # take writes here again
                self.set_writes_paused(index, False)
            raise
        return move.ends[0], last


class RankWatch:
    """A watched rank (:meth:`LeaderboardClient.watch_rank`): iterate it for the updates; ``close``
    (from any thread, or leaving a ``with`` block) ends the watch and the iteration quietly."""

    _convert = staticmethod(watched_entry)

    def __init__(self, call: Any) -> None:
        self._call = call
        self._closed = False

    def __iter__(self) -> Iterator[RankedEntry | None]:
        try:
            for response in self._call:
                yield self._convert(response)
        except grpc.RpcError as exc:
            watch_ended(exc, self._closed)

    def close(self) -> None:
        self._closed = True
        self._call.cancel()

    def __enter__(self) -> RankWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WindowEndWatch(RankWatch):
    """Window-end events (:meth:`LeaderboardClient.watch_window_ends`): iterate it for them;
    ``close`` ends the watch quietly."""

    _convert = staticmethod(wire.window_end_from_proto)  # type: ignore[assignment]

    def __iter__(self) -> Iterator[wire.WindowEnd]:  # type: ignore[override]
        return super().__iter__()  # type: ignore[return-value]

    def __enter__(self) -> WindowEndWatch:
        return self
