"""The asyncio client, :class:`AsyncLeaderboardClient` (grpc.aio), and its watches."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Callable, Coroutine, Iterable, Sequence
from typing import Any, Concatenate, Generic

import grpc
import grpc.aio

from .. import wire
from ..index import RankedEntry
from ..proto import service_pb2 as pb
from ..proto import service_pb2_grpc as pb_grpc
from .blocking import LeaderboardClient
from .channel import CHANNEL_OPTIONS, Freshness, call_metadata, channel_credentials
from .messages import _P, _T, Key, Op, UnaryCall, rank_request
from .operations import BOUNDED_READS, STALENESS_PARAMETER, UnaryOps, advance, signed_like
from .retry import DEFAULT_RETRY, RetryPolicy, Tries, new_idempotency_key
from .streams import (
    LoadMessages,
    MoveProgress,
    VerifyMerge,
    answering,
    async_restore_requests,
    dump_request,
    load_retry_codes,
    verify_pieces,
    watch_ended,
    watched_entry,
    window_ends_request,
)


def _awaiting(op: Callable[_P, Op[_T]]) -> Callable[Concatenate[Any, _P], Coroutine[Any, Any, _T]]:
    """The operation as a coroutine method of the asyncio client."""
    if op.__name__ in BOUNDED_READS:

        async def method(
            self: AsyncLeaderboardClient, *args: Any, max_staleness: int | None = None, **kwargs: Any
        ) -> Any:
            return await self._run(op(*args, **kwargs), self._staleness(max_staleness))

        return signed_like(method, op, "AsyncLeaderboardClient", STALENESS_PARAMETER)

    async def plain(self: AsyncLeaderboardClient, *args: Any, **kwargs: Any) -> Any:
        return await self._run(op(*args, **kwargs))

    return signed_like(plain, op, "AsyncLeaderboardClient")


class AsyncWatch(Generic[_T]):
    """A watch of the asyncio client (:meth:`AsyncLeaderboardClient.watch_rank`,
    :meth:`~AsyncLeaderboardClient.watch_window_ends`), as the blocking client's: ``async for`` it
    for the updates; ``close`` (or leaving an ``async with`` block) ends the watch and the
    iteration quietly."""

    def __init__(self, call: Any, convert: Callable[[Any], _T]) -> None:
        self._call = call
        self._convert = convert
        self._closed = False

    def __aiter__(self) -> AsyncIterator[_T]:
        return self._updates()

    async def _updates(self) -> AsyncIterator[_T]:
        try:
            async for response in self._call:
                yield self._convert(response)
        except grpc.RpcError as exc:
            watch_ended(exc, self._closed)
        except asyncio.CancelledError:  # grpc.aio's word for a call this watch's close cancelled
            if not self._closed:
                raise
        finally:
            self._call.cancel()

    def close(self) -> None:
        self._closed = True
        self._call.cancel()

    async def __aenter__(self) -> AsyncWatch[_T]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class AsyncLeaderboardClient:
    """The asyncio client (grpc.aio): the blocking client's methods as coroutines, with the same
    arguments, answers, errors, idempotency keys and retries.  Make it inside the event loop
    that uses it (``async with AsyncLeaderboardClient(address) as lb``)."""

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
        """The arguments of :class:`LeaderboardClient`."""
        self.freshness = Freshness(max_staleness)
        credentials = channel_credentials(address, token, ca, cert, key)
        if credentials is None:
            self.channel = grpc.aio.insecure_channel(address, CHANNEL_OPTIONS)
        else:
            self.channel = grpc.aio.secure_channel(address, credentials, CHANNEL_OPTIONS)
        self.stub = pb_grpc.LeaderboardStub(self.channel)
        self._metadata = call_metadata(token, user) or None
        self.timeout = timeout
        self.retry = retry or RetryPolicy(attempts=1)

    async def close(self) -> None:
        await self.channel.close()

    async def __aenter__(self) -> AsyncLeaderboardClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _staleness(self, per_call: int | None) -> int | None:
        return self.freshness.staleness(per_call)

    async def _run(self, op: Op[_T], staleness: int | None = None) -> _T:
        step = advance(op, None)
        while isinstance(step, UnaryCall):
            step = advance(op, await self._send(step, staleness))
        return step.value

    async def _send(self, call: UnaryCall, staleness: int | None = None) -> Any:
        send = getattr(self.stub, call.method)
        tries = Tries(self.retry, call.retry_codes(self.retry))
        fresh = self.freshness.metadata(call, staleness)
        metadata = (*(self._metadata or ()), *fresh) or None
        while True:
            try:
                rpc = send(call.request, timeout=call.timeout or self.timeout, metadata=metadata)
                response = await rpc
                if call.method in wire.SCORE_WRITES:
                    self.freshness.note(await rpc.trailing_metadata())
                return response
            except grpc.RpcError as exc:
                await asyncio.sleep(tries.wait_after(exc))

    create_index = _awaiting(UnaryOps.create_index)
    list_indexes = _awaiting(UnaryOps.list_indexes)
    drop_index = _awaiting(UnaryOps.drop_index)
    set_maintenance = _awaiting(UnaryOps.set_maintenance)
    set_writes_paused = _awaiting(UnaryOps.set_writes_paused)
    update_windows = _awaiting(UnaryOps.update_windows)
    list_windows = _awaiting(UnaryOps.list_windows)
    save_sub_directory = _awaiting(UnaryOps.save_sub_directory)
    sub_directories = _awaiting(UnaryOps.sub_directories)
    groups = _awaiting(UnaryOps.groups)
    expire = _awaiting(UnaryOps.expire)
    fill = _awaiting(UnaryOps.fill)
    trim = _awaiting(UnaryOps.trim)
    keep_ahead = _awaiting(UnaryOps.keep_ahead)
    expire_idempotency_keys = _awaiting(UnaryOps.expire_idempotency_keys)
    verify = _awaiting(UnaryOps.verify)
    verify_plan = _awaiting(UnaryOps.verify_plan)

    async def verify_report(
        self,
        index: str,
        max_problems: int = 0,
        timeout: float | None = None,
        progress: Callable[[pb.VerifyResponse], None] | None = None,
        parts: int = 1,
    ) -> pb.VerifyResponse:
        if parts <= 1:
            return await self._run(UnaryOps.verify_report(index, max_problems, timeout, progress))
        plan = verify_pieces(await self.verify_plan(index, parts, timeout))
        merge = VerifyMerge(len(plan), max_problems, progress)
        answers = await asyncio.gather(
            *(
                self._run(UnaryOps.verify_report(index, max_problems, timeout, merge.seen(number), token))
                for number, token in enumerate(plan)
            )
        )
        return merge.merged(answers)

    verify_report.__doc__ = LeaderboardClient.verify_report.__doc__  # (its pieces share this client's channel)

    store_status = _awaiting(UnaryOps.store_status)
    upgrade_index = _awaiting(UnaryOps.upgrade_index)
    upgrade_store = _awaiting(UnaryOps.upgrade_store)
    add_score = _awaiting(UnaryOps.add_score)
    set_metadata = _awaiting(UnaryOps.set_metadata)
    metadata = _awaiting(UnaryOps.metadata)
    add_entries = _awaiting(UnaryOps.add_entries)
    save_record = _awaiting(UnaryOps.save_record)
    delete_record = _awaiting(UnaryOps.delete_record)
    hide_record = _awaiting(UnaryOps.hide_record)
    restore_record = _awaiting(UnaryOps.restore_record)
    hidden_records = _awaiting(UnaryOps.hidden_records)
    score_rules = _awaiting(UnaryOps.score_rules)
    set_score_rules = _awaiting(UnaryOps.set_score_rules)
    delete_records = _awaiting(UnaryOps.delete_records)
    audit_events = _awaiting(UnaryOps.audit_events)
    audit_retention = _awaiting(UnaryOps.audit_retention)
    set_audit_retention = _awaiting(UnaryOps.set_audit_retention)
    expire_audit_events = _awaiting(UnaryOps.expire_audit_events)
    write_batch = _awaiting(UnaryOps.write_batch)
    rank = _awaiting(UnaryOps.rank)
    rank_and_entry = _awaiting(UnaryOps.rank_and_entry)
    around = _awaiting(UnaryOps.around)
    top = _awaiting(UnaryOps.top)
    count = _awaiting(UnaryOps.count)
    score_for_rank = _awaiting(UnaryOps.score_for_rank)
    rank_for_score = _awaiting(UnaryOps.rank_for_score)
    score_trim = _awaiting(UnaryOps.score_trim)
    ranks = _awaiting(UnaryOps.ranks)
    friends_board = _awaiting(UnaryOps.friends_board)
    page = _awaiting(UnaryOps.page)
    cohort = _awaiting(UnaryOps.cohort)
    percentile = _awaiting(UnaryOps.percentile)
    score_for_percentile = _awaiting(UnaryOps.score_for_percentile)
    movement = _awaiting(UnaryOps.movement)
    rank_history = _awaiting(UnaryOps.rank_history)
    scan = _awaiting(UnaryOps.scan)
    add_webhook = _awaiting(UnaryOps.add_webhook)
    webhooks = _awaiting(UnaryOps.webhooks)
    delete_webhook = _awaiting(UnaryOps.delete_webhook)
    notice_window_ends = _awaiting(UnaryOps.notice_window_ends)

    async def all_groups(self, index: str, window_type: int = 0, timestamp: int | None = None) -> AsyncIterator[tuple]:
        """Every group holding a value in the window, following continuations page by page (``async for``)."""
        continuation = b""
        while True:
            groups, continuation = await self.groups(index, window_type, timestamp, continuation=continuation)
            for group in groups:
                yield group
            if not continuation:
                return

    async def scan_all(
        self, index: str, scan_type: str = "BY_RANK", page: int = 100, **kwargs: Any
    ) -> AsyncIterator[RankedEntry]:
        """Every entry of a scan, following continuations page by page (``async for``)."""
        continuation = b""
        while True:
            entries, continuation = await self.scan(index, scan_type, limit=page, continuation=continuation, **kwargs)
            for entry in entries:
                yield entry
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
    ) -> AsyncWatch[RankedEntry | None]:
        """As :meth:`LeaderboardClient.watch_rank`: ``async with lb.watch_rank(...) as watch:
        async for entry in watch`` (or ``async for`` on it directly)."""
        request = rank_request(index, pk, window_type, timestamp, group, mode)
        call = self.stub.WatchRank(request, timeout=timeout, metadata=self._metadata)
        return AsyncWatch(call, watched_entry)

    def watch_window_ends(
        self, index: str, after: int | None = None, top: int | None = None, timeout: float | None = None
    ) -> AsyncWatch[wire.WindowEnd]:
        """As :meth:`LeaderboardClient.watch_window_ends`, with ``async with`` and ``async for``."""
        call = self.stub.WatchWindowEnds(
            window_ends_request(index, after, top), timeout=timeout, metadata=self._metadata
        )
        return AsyncWatch(call, wire.window_end_from_proto)

    async def bulk_load(
        self,
        index: str,
        records: Iterable[tuple[Key, Sequence[tuple]]] | AsyncIterable[tuple[Key, Sequence[tuple]]],
        batch_size: int = 500,
        rank_as_loaded: bool = False,
        progress: Callable[[int], None] | None = None,
        timeout: float | None = None,
        idempotency_key: str | None = None,
    ) -> int:
        """:meth:`LeaderboardClient.bulk_load`; ``records`` may also be an async iterable (sent
        again when cut off if ``__aiter__`` starts over)."""
        key = idempotency_key or new_idempotency_key()
        tries = Tries(self.retry, load_retry_codes(records, self.retry))
        while True:
            try:
                return await self._load(index, records, batch_size, rank_as_loaded, progress, timeout, key)
            except grpc.RpcError as exc:
                await asyncio.sleep(tries.wait_after(exc))

    async def _load(
        self,
        index: str,
        records: Iterable[tuple[Key, Sequence[tuple]]] | AsyncIterable[tuple[Key, Sequence[tuple]]],
        batch_size: int,
        rank_as_loaded: bool,
        progress: Callable[[int], None] | None,
        timeout: float | None,
        idempotency_key: str,
    ) -> int:
        """One try of :meth:`bulk_load`."""
        messages = LoadMessages(index, batch_size, rank_as_loaded, idempotency_key)
        call = self.stub.Load(messages.async_requests(records), timeout=timeout, metadata=self._metadata)
        try:
            async for answer in call:
                messages.saved(answer, progress)
        except asyncio.CancelledError:  # stop the server's load too: what it saved stays saved
            call.cancel()
            raise
        return messages.result()

    # -- dumps, restores, moves ---------------------------------------------------------------

    async def dump(
        self,
        index: str,
        keep_paused: bool = False,
        moved_to: str = "",
        catch_up_seconds: float = 0.0,
        timeout: float | None = None,
    ) -> AsyncIterator[pb.DumpPart]:
        """:meth:`LeaderboardClient.dump`, an async iterator."""
        request = dump_request(index, keep_paused, moved_to, catch_up_seconds)
        call = self.stub.Dump(iter([request]), timeout=timeout, metadata=self._metadata)
        with answering(call):
            async for part in call:
                yield part

    async def restore(
        self, parts: Iterable[pb.DumpPart] | AsyncIterable[pb.DumpPart], index: str = "", timeout: float | None = None
    ) -> AsyncIterator[pb.RestoreProgress]:
        """:meth:`LeaderboardClient.restore`, an async iterator; ``parts`` may be an async iterable."""
        call = self.stub.Restore(async_restore_requests(parts, index), timeout=timeout, metadata=self._metadata)
        with answering(call):
            async for step in call:
                yield step

    async def move(
        self,
        index: str,
        target: AsyncLeaderboardClient,
        target_index: str = "",
        moved_to: str = "",
        catch_up_seconds: float = 0.0,
        progress: Callable[[pb.DumpPart | pb.RestoreProgress], None] | None = None,
    ) -> tuple[pb.DumpEnd, pb.RestoreProgress]:
        """:meth:`LeaderboardClient.move`, to another asyncio client's server."""
        move = MoveProgress(index, moved_to, catch_up_seconds, progress)

        async def parts() -> AsyncIterator[pb.DumpPart]:
            async for part in self.dump(index, True, moved_to, catch_up_seconds):
                yield move.part(part)

        last = pb.RestoreProgress()
        try:
            async for last in target.restore(parts(), target_index or index):
                if move.pause_now(last):
                    await self.set_writes_paused(index, True, move.reason)
        except BaseException:
            if move.paused:  # take writes here again
                await self.set_writes_paused(index, False)
            raise
        return move.ends[0], last
