"""A small Python client for the gRPC service, taking and returning plain Python values.

    with LeaderboardClient("127.0.0.1:50051") as lb:
        lb.create_index("game")
        lb.update_windows("game", specs=[(1, 0, 86_400, 86_400, 7)])
        lb.add_score("game", "alice", 1200, timestamp=1_700_000_000)  # pk ("alice",)
        lb.top("game", 10)

Errors arrive as ``grpc.RpcError`` with the server's status code and message.

Writes are exactly-once: each write call carries an idempotency key (a new UUID unless one is
given), and a write that fails with UNAVAILABLE or DEADLINE_EXCEEDED (the server may or may not
have applied it) is sent again with the same key, with capped exponential backoff
(:class:`RetryPolicy`; ``retry=None`` sends every call once).  The server applies a key once and
answers its repeats with the first answer.  Reads are retried on UNAVAILABLE.

A server with access control needs ``token=`` (sent as ``authorization: Bearer TOKEN`` on every
call); one with TLS needs ``ca=`` (the PEM file of the CA that signed its certificate), and with
mutual TLS also ``cert=`` and ``key=`` (the client's certificate and key).
"""

from __future__ import annotations

import dataclasses
import random
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import grpc

from . import wire
from .access import ROLE_BY_METHOD, Role, is_loopback
from .errors import NoWindowsWarning
from .index import Entry, History, Movement, Page, RankedEntry
from .index.calendar import board_periods
from .proto import service_pb2 as pb
from .proto import service_pb2_grpc as pb_grpc

_MESSAGE_RECORDS = 500  # a BulkLoad message carries up to this many records
_MESSAGE_BYTES = 1 << 20  # or about this many bytes (gRPC refuses messages over 4 MB)
MODES = {"ORDINAL": pb.ORDINAL, "COMPETITION": pb.COMPETITION, "DENSE": pb.DENSE}
# Calls that only read (the read role's): sent again when the server was unavailable.
_READS = frozenset(method for method, role in ROLE_BY_METHOD.items() if role is Role.READ)
# A primary key, group or context: a sequence of elements, or one str, bytes or number standing
# for a one-element key ("alice" is ("alice",)).
Key = Sequence[object] | str | bytes | int | float
# A score: an int, a float (DOUBLE indexes), or a tuple or list of ints (indexes ranking by columns).
Score = int | float | Sequence[int]


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """How calls that may not have reached the server, or whose answer was lost, are sent again.

    ``attempts`` counts the first try (1: never again).  After try ``n`` fails the client waits
    ``b / 2`` plus a random part of ``b / 2`` seconds, ``b = min(max_backoff, initial_backoff *
    multiplier ** (n - 1))``: about 2-4 s over the default 5 tries, time for a server to restart
    or a connection to come back, and clients cut off together do not return together.  Writes
    are retried on ``write_codes``, reads on ``read_codes``; a write keeps its idempotency key.
    """

    attempts: int = 5
    initial_backoff: float = 0.25
    max_backoff: float = 4.0
    multiplier: float = 2.0
    write_codes: frozenset[grpc.StatusCode] = frozenset(
        {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}
    )
    read_codes: frozenset[grpc.StatusCode] = frozenset({grpc.StatusCode.UNAVAILABLE})

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.initial_backoff < 0 or self.max_backoff < 0 or self.multiplier < 1:
            raise ValueError("a retry policy needs attempts >= 1, backoffs >= 0 and a multiplier >= 1")

    def backoff(self, tries: int) -> float:
        """Seconds to wait after ``tries`` failed tries."""
        ceiling = min(self.max_backoff, self.initial_backoff * self.multiplier ** (tries - 1))
        return ceiling / 2 + random.uniform(0, ceiling / 2)


def new_idempotency_key() -> str:
    """A key for one logical write (sent again with the write, never with another)."""
    return uuid.uuid4().hex


def _window(window_type: int, timestamp: int | None) -> pb.WindowSelector:
    selector = pb.WindowSelector(type=window_type)
    if timestamp is not None:
        selector.timestamp = timestamp
    return selector


def _pb_entry(score: Score, timestamp: int, context: Key = (), group: Key = ()) -> pb.Entry:
    return pb.Entry(
        score=wire.python_to_score(score),
        timestamp=timestamp,
        context=wire.key_to_items(context, "context"),
        group=wire.key_to_items(group, "group"),
    )


def _warned(response: pb.AddScoreResponse | pb.WriteResponse) -> int:
    """The windows a write changed, issuing the server's warning (e.g. no windows yet) if any."""
    if response.warning:
        warnings.warn(response.warning, NoWindowsWarning, stacklevel=3)
    return response.windows_changed


class _BearerToken(
    grpc.UnaryUnaryClientInterceptor, grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor
):
    """Adds ``authorization: Bearer TOKEN`` to every call of a channel."""

    def __init__(self, token: str) -> None:
        self._header = ("authorization", f"Bearer {token}")

    def _details(self, details: Any) -> Any:
        return details._replace(metadata=[*(details.metadata or ()), self._header])

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)

    def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)


def _read_pem(path: str | None) -> bytes | None:
    if path is None:
        return None
    with open(path, "rb") as file:
        return file.read()


class LeaderboardClient:
    def __init__(
        self,
        address: str,
        timeout: float | None = 30.0,
        *,
        token: str | None = None,
        ca: str | None = None,
        cert: str | None = None,
        key: str | None = None,
        retry: RetryPolicy | None = RetryPolicy(),  # frozen: one shared default is safe
    ) -> None:
        """``token``: a bearer token; ``ca``: a CA file to verify the server's TLS certificate
        (TLS is used when ``ca`` or ``cert`` is given); ``cert``/``key``: a client certificate;
        ``retry``: how calls are sent again (None: once), each try with ``timeout``."""
        if (cert is None) != (key is None):
            raise ValueError("a client certificate needs both cert and key")
        if ca is None and cert is None:
            if token and not is_loopback(address):
                warnings.warn(
                    f"sending a bearer token to {address} without TLS: anyone on the way can read it "
                    "(give the server's CA to use TLS)",
                    stacklevel=2,
                )
            channel = grpc.insecure_channel(address)
        else:
            credentials = grpc.ssl_channel_credentials(_read_pem(ca), _read_pem(key), _read_pem(cert))
            channel = grpc.secure_channel(address, credentials)
        self._raw_channel = channel
        self.channel = grpc.intercept_channel(channel, _BearerToken(token)) if token else channel
        self.stub = pb_grpc.LeaderboardStub(self.channel)
        self.timeout = timeout
        self.retry = retry or RetryPolicy(attempts=1)

    def close(self) -> None:
        self._raw_channel.close()

    def __enter__(self) -> LeaderboardClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, request: Any) -> Any:
        """A read or an admin call (reads are sent again on the retry policy's read codes)."""
        return self._tries(method, request, self.retry.read_codes if method in _READS else frozenset())

    def _write(self, method: str, request: Any, idempotency_key: str | None) -> Any:
        """A write, under ``idempotency_key`` (a new one if None), sent again with the same key when
        its outcome is unknown."""
        request.idempotency_key = idempotency_key or new_idempotency_key()
        return self._tries(method, request, self.retry.write_codes)

    def _tries(self, method: str, request: Any, retry_on: frozenset[grpc.StatusCode]) -> Any:
        send = getattr(self.stub, method)
        tries = 0
        while True:
            tries += 1
            try:
                return send(request, timeout=self.timeout)
            except grpc.RpcError as exc:
                if exc.code() not in retry_on or tries >= self.retry.attempts:  # type: ignore[attr-defined]
                    raise
            time.sleep(self.retry.backoff(tries))

    # -- admin ----------------------------------------------------------------------------

    def create_index(
        self,
        name: str,
        aggregation: str = "BEST",
        hash_function: str = "MURMUR3",
        group_size: int = 0,
        context_size: int = 0,
        high_score_first: bool = True,
        reference_layout: bool = False,
        count_duplicates: bool = False,
        maintenance: pb.MaintenancePolicy | None = None,
        score_type: str = "INT",
        dense_ranks: bool = False,
        *,
        boards: Sequence[str] = (),
        timezone: str = "UTC",
        all_time: bool = True,
        columns: Sequence[str] = (),
    ) -> bool:
        """Create index ``name`` (False: it exists with these options).  It ranks all-time from its
        first score (unless ``all_time`` is False) and keeps the calendar ``boards`` named (daily,
        weekly, monthly: window types 1, 2, 3) in ``timezone``, today's ones from the start: they
        join ``maintenance`` (the server keeps them ahead and expires them per that policy).
        ``columns``: rank by 2 to 4 integer columns, each ``"HIGH"`` or ``"LOW"`` (most kills, then
        fewest deaths: ``("HIGH", "LOW")``); its scores are then tuples of ints."""
        maintenance = _with_boards(maintenance, boards, timezone)
        options = pb.IndexOptions(
            aggregation=pb.Aggregation.Value(aggregation),
            hash_function=pb.RankHash.Value(hash_function),
            group_size=group_size,
            context_size=context_size,
            high_score_first=high_score_first,
            count_duplicates=count_duplicates,
            score_type=pb.ScoreType.Value(score_type),
            dense_ranks=dense_ranks,
            columns=[pb.ColumnOrder.Value(direction) for direction in columns],
        )
        request = pb.CreateIndexRequest(
            name=name, options=options, reference_layout=reference_layout, maintenance=maintenance, all_time=all_time
        )
        return self._call("CreateIndex", request).created

    def list_indexes(self) -> list[pb.IndexInfo]:
        return list(self._call("ListIndexes", pb.ListIndexesRequest()).indexes)

    def drop_index(self, name: str) -> None:
        """Delete the index and all its data (NOT_FOUND if there is none)."""
        self._call("DropIndex", pb.DropIndexRequest(index=name))

    def set_maintenance(self, index: str, policy: pb.MaintenancePolicy) -> None:
        self._call("SetMaintenancePolicy", pb.SetMaintenancePolicyRequest(index=index, maintenance=policy))

    def update_windows(
        self,
        index: str,
        specs: Sequence[tuple[int, int, int, int, int]] = (),
        windows: Sequence[tuple[int, int, int]] = (),
        high_score_first: bool | None = None,
        all_time: bool = True,
        delete_before: int | None = None,
        update_timestamp: int = 0,
        nlevels: int = 0,
        rebuild: str = "IF_OVERLAPPING_CHANGED",
    ) -> pb.UpdateWindowsResponse:
        """Add (and with ``delete_before``, delete) windows; see ``WindowUpdate``.

        ``high_score_first`` None keeps the index's direction; True or False changes it (every
        window is then rebuilt).
        """
        request = pb.UpdateWindowsRequest(
            index=index,
            update_timestamp=update_timestamp,
            high_score_first=high_score_first,
            all_time=all_time,
            specs=[pb.WindowSpec(type=t, base=b, increment=i, duration=d, count=c) for t, b, i, d, c in specs],
            windows=[pb.ExplicitWindow(type=t, start=s, end=e) for t, s, e in windows],
            nlevels=nlevels,
            rebuild=pb.Rebuild.Value(rebuild),
        )
        if delete_before is not None:
            request.delete_before = delete_before
        return self._call("UpdateWindows", request)

    def list_windows(self, index: str) -> pb.ListWindowsResponse:
        return self._call("ListWindows", pb.ListWindowsRequest(index=index))

    def save_sub_directory(self, index: str, group: Key, high_score_first: bool) -> None:
        request = pb.SaveSubDirectoryRequest(
            index=index, group=wire.key_to_items(group, "group"), high_score_first=high_score_first
        )
        self._call("SaveSubDirectory", request)

    def sub_directories(self, index: str) -> dict[tuple, bool]:
        response = self._call("ListSubDirectories", pb.ListSubDirectoriesRequest(index=index))
        return {wire.items_to_tuple(s.group): s.high_score_first for s in response.sub_directories}

    def expire(self, index: str, before: int) -> list[pb.Window]:
        return list(self._call("Expire", pb.ExpireRequest(index=index, before=before)).deleted)

    def fill(self, index: str, max_records: int = 0, max_batches: int = 0) -> pb.FillResponse:
        return self._call("Fill", pb.FillRequest(index=index, max_records=max_records, max_batches=max_batches))

    def trim(self, index: str, before: int) -> int:
        return self._call("Trim", pb.TrimRequest(index=index, before=before)).entries_removed

    def keep_ahead(self, index: str, now: int | None = None) -> list[pb.Window]:
        """Add the windows the index's policy needs soon (``now`` default: the server's clock)."""
        request = pb.KeepAheadRequest(index=index)
        if now is not None:
            request.now = now
        return list(self._call("KeepAhead", request).added)

    def expire_idempotency_keys(self, index: str, before: int | None = None) -> int:
        """Forget the index's idempotency keys applied before ``before`` (Unix seconds; default: its
        policy's retention ago), in bounded batches; returns how many.  The server does it too."""
        request = pb.ExpireIdempotencyKeysRequest(index=index)
        if before is not None:
            request.before = before
        expired = 0
        while True:
            response = self._call("ExpireIdempotencyKeys", request)
            expired += response.expired
            if response.done:
                return expired

    def verify(self, index: str, max_problems: int = 0) -> list[str]:
        """Problems the server's consistency check finds in the index (empty: sound)."""
        return list(self.verify_report(index, max_problems).problems)

    def verify_report(self, index: str, max_problems: int = 0, timeout: float | None = None) -> pb.VerifyResponse:
        """The server's consistency check: problems, what it checked, whether it finished."""
        request = pb.VerifyRequest(index=index, max_problems=max_problems)
        return self.stub.Verify(request, timeout=timeout or self.timeout)

    # -- writes ---------------------------------------------------------------------------

    def add_score(
        self,
        index: str,
        pk: Key,
        score: Score,
        timestamp: int,
        context: Key = (),
        group: Key = (),
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> int:
        """Add one entry; ``metadata`` fields are merged into the record's in the same transaction.
        Applied once, however often it is sent (see the module docstring)."""
        request = pb.AddScoreRequest(
            index=index,
            pk=wire.key_to_items(pk),
            entry=_pb_entry(score, timestamp, context, group),
            metadata=metadata or {},
        )
        return _warned(self._write("AddScore", request, idempotency_key))

    def set_metadata(
        self,
        index: str,
        pk: Key,
        metadata: Mapping[str, str],
        merge: bool = False,
        remove: Sequence[str] = (),
        idempotency_key: str | None = None,
    ) -> dict[str, str]:
        """Replace (or merge into) a record's display metadata; returns what is stored now."""
        request = pb.SetMetadataRequest(
            index=index, pk=wire.key_to_items(pk), metadata=metadata, merge=merge, remove=list(remove)
        )
        return dict(self._write("SetMetadata", request, idempotency_key).metadata)

    def metadata(self, index: str, pk: Key) -> dict[str, str] | None:
        """A record's display metadata ({} if none), or None if the record does not exist."""
        response = self._call("GetMetadata", pb.MetadataRequest(index=index, pk=wire.key_to_items(pk)))
        return dict(response.metadata) if response.exists else None

    def add_entries(self, index: str, pk: Key, entries: Sequence[tuple], idempotency_key: str | None = None) -> int:
        """Add ``(score, timestamp[, context[, group]])`` entries to a record."""
        request = pb.AddEntriesRequest(index=index, pk=wire.key_to_items(pk), entries=[_pb_entry(*e) for e in entries])
        return _warned(self._write("AddEntries", request, idempotency_key))

    def save_record(self, index: str, pk: Key, entries: Sequence[tuple], idempotency_key: str | None = None) -> int:
        """Replace a record's entries with ``(score, timestamp[, context[, group]])`` entries."""
        request = pb.SaveRecordRequest(index=index, pk=wire.key_to_items(pk), entries=[_pb_entry(*e) for e in entries])
        return _warned(self._write("SaveRecord", request, idempotency_key))

    def delete_record(self, index: str, pk: Key, idempotency_key: str | None = None) -> bool:
        """Delete a record from every window (False: there was none)."""
        request = pb.DeleteRecordRequest(index=index, pk=wire.key_to_items(pk))
        return self._write("DeleteRecord", request, idempotency_key).existed

    def write_batch(
        self,
        index: str,
        records: Sequence[tuple[Key, Sequence[tuple]]],
        replace: bool = True,
        idempotency_key: str | None = None,
    ) -> None:
        request = pb.WriteBatchRequest(
            index=index,
            replace=replace,
            records=[
                pb.RecordEntries(pk=wire.key_to_items(pk), entries=[_pb_entry(*e) for e in entries])
                for pk, entries in records
            ],
        )
        self._write("WriteBatch", request, idempotency_key)

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
        saved so far, after each transaction the server commits.  If iterating or converting
        ``records`` raises, the stream ends there: the server saves what came before, then that
        exception is raised here (noting how many were saved).  A record the server refuses
        raises ``grpc.RpcError``; :func:`load_refusal` tells which record and how many were
        saved.  No timeout by default: a load takes as long as its data.

        The load goes under an idempotency key: each of its transactions is applied once.  When
        ``records`` can be iterated again (a list, or an object whose ``__iter__`` starts over:
        not an iterator), a load cut off (UNAVAILABLE, DEADLINE_EXCEEDED) is sent again from
        its start and the server saves only the transactions it had not.
        """
        key = idempotency_key or new_idempotency_key()
        again = iter(records) is not records
        tries = 0
        while True:
            tries += 1
            try:
                return self._load(index, records, batch_size, rank_as_loaded, progress, timeout, key)
            except grpc.RpcError as exc:
                if not again or exc.code() not in self.retry.write_codes or tries >= self.retry.attempts:  # type: ignore[attr-defined]
                    raise
            time.sleep(self.retry.backoff(tries))

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
        failure: Exception | None = None

        def requests() -> Iterator[pb.BulkLoadRequest]:
            nonlocal failure
            message = pb.BulkLoadRequest(
                index=index, batch_size=batch_size, rank_as_loaded=rank_as_loaded, idempotency_key=idempotency_key
            )
            size = 0
            try:
                for pk, entries in records:
                    record = pb.RecordEntries(pk=wire.key_to_items(pk), entries=[_pb_entry(*e) for e in entries])
                    message.records.append(record)
                    size += record.ByteSize()
                    if len(message.records) == _MESSAGE_RECORDS or size >= _MESSAGE_BYTES:
                        yield message
                        message, size = pb.BulkLoadRequest(), 0
            except Exception as exc:  # end the stream here; grpc would only say "Exception iterating requests"
                failure = exc
            if message.records or message.index:  # the first message names the index even with no records
                yield message

        call = self.stub.Load(requests(), timeout=timeout)
        written = 0
        try:
            for step in call:
                written = step.records_saved
                if progress:
                    progress(written)
        except KeyboardInterrupt:  # stop the server's load too: what it saved stays saved
            call.cancel()
            raise
        if failure is not None:
            failure.add_note(f"BulkLoad saved the {written} records before it")
            raise failure
        return written

    # -- reads ----------------------------------------------------------------------------

    def _rank_request(
        self, index: str, pk: Key, window_type: int, timestamp: int | None, group: Key, mode: str
    ) -> pb.RankRequest:
        return pb.RankRequest(
            index=index,
            pk=wire.key_to_items(pk),
            window=_window(window_type, timestamp),
            group=wire.key_to_items(group, "group"),
            mode=MODES[mode],
        )

    def rank(
        self,
        index: str,
        pk: Key,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
    ) -> int | None:
        response = self._call("GetRank", self._rank_request(index, pk, window_type, timestamp, group, mode))
        return response.rank if response.HasField("rank") else None

    def rank_and_entry(
        self,
        index: str,
        pk: Key,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
    ) -> RankedEntry | None:
        response = self._call("GetRankAndEntry", self._rank_request(index, pk, window_type, timestamp, group, mode))
        return wire.ranked_entry_from_proto(response.entry) if response.HasField("entry") else None

    def around(
        self,
        index: str,
        pk: Key,
        above: int,
        below: int,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
        if_absent: str = "EMPTY",
    ) -> list[RankedEntry]:
        request = pb.AroundMeRequest(
            index=index,
            pk=wire.key_to_items(pk),
            window=_window(window_type, timestamp),
            group=wire.key_to_items(group, "group"),
            mode=MODES[mode],
            above=above,
            below=below,
            if_absent=pb.IfAbsent.Value(if_absent),
        )
        return [wire.ranked_entry_from_proto(e) for e in self._call("AroundMe", request).entries]

    def top(
        self,
        index: str,
        n: int,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
    ) -> list[RankedEntry]:
        request = pb.TopRequest(
            index=index,
            window=_window(window_type, timestamp),
            group=wire.key_to_items(group, "group"),
            mode=MODES[mode],
            n=n,
        )
        return [wire.ranked_entry_from_proto(e) for e in self._call("Top", request).entries]

    def count(self, index: str, window_type: int = 0, timestamp: int | None = None, group: Key = ()) -> int:
        request = pb.CountRequest(
            index=index, window=_window(window_type, timestamp), group=wire.key_to_items(group, "group")
        )
        return self._call("Count", request).count

    def score_for_rank(
        self, index: str, rank: int, window_type: int = 0, timestamp: int | None = None, group: Key = ()
    ) -> Score | None:
        request = pb.ScoreForRankRequest(
            index=index, window=_window(window_type, timestamp), group=wire.key_to_items(group, "group"), rank=rank
        )
        response = self._call("ScoreForRank", request)
        return wire.score_to_python(response.score) if response.HasField("score") else None

    def rank_for_score(
        self,
        index: str,
        score: int | float | list | tuple,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
    ) -> int:
        """The rank a record with ``score`` would have; ``score`` may be a score key
        ``(score, timestamp, context...)`` or a prefix of one, as the Record Layer takes it.  A
        tuple is a score key here, so a multi-column score is given as a list (``[10, 2]``), or
        as a key's first item (``((10, 2), timestamp)``)."""
        key = score if isinstance(score, tuple) else (score,)
        if not key:
            raise ValueError("a score key needs at least the score")
        request = pb.RankForScoreRequest(
            index=index,
            window=_window(window_type, timestamp),
            group=wire.key_to_items(group, "group"),
            score=wire.python_to_score(key[0]),
            key_context=wire.tuple_to_items(key[2:]),
        )
        if len(key) > 1:
            request.key_timestamp = key[1]
        return self._call("RankForScore", request).rank

    def score_trim(self, index: str, entries: Sequence[tuple]) -> list[Entry]:
        """Of ``(score, timestamp[, context[, group]])`` entries, those the index's current windows
        use, best first (the Record Layer's score trim)."""
        request = pb.ScoreTrimRequest(index=index, entries=[_pb_entry(*e) for e in entries])
        return [wire.entry_to_python(e) for e in self._call("ScoreTrim", request).entries]

    # -- several records, pages, percentiles, movement -------------------------------------

    def _ranks_request(
        self, index: str, pks: Sequence[Key], window_type: int, timestamp: int | None, group: Key, mode: str
    ) -> pb.RanksRequest:
        return pb.RanksRequest(
            index=index,
            records=[pb.RecordKey(pk=wire.key_to_items(pk)) for pk in pks],
            window=_window(window_type, timestamp),
            group=wire.key_to_items(group, "group"),
            mode=MODES[mode],
        )

    def ranks(
        self,
        index: str,
        pks: Sequence[Key],
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
    ) -> list[RankedEntry | None]:
        """Each record's entry and rank (None: no value in the window), in the order given (up to 200)."""
        response = self._call("GetRanks", self._ranks_request(index, pks, window_type, timestamp, group, mode))
        return [wire.optional_entry(slot, "entry") for slot in response.ranks]

    def friends_board(
        self,
        index: str,
        pks: Sequence[Key],
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
    ) -> list[RankedEntry]:
        """The board of just these records, in the window's order, with their global ranks."""
        response = self._call("FriendsBoard", self._ranks_request(index, pks, window_type, timestamp, group, mode))
        return [wire.ranked_entry_from_proto(e) for e in response.entries]

    def page(
        self,
        index: str,
        page: int,
        size: int,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
    ) -> Page:
        """Page ``page`` (1-based) of ``size`` records, with the window's total and page count."""
        request = pb.PageRequest(
            index=index,
            window=_window(window_type, timestamp),
            group=wire.key_to_items(group, "group"),
            mode=MODES[mode],
            page=page,
            size=size,
        )
        response = self._call("GetPage", request)
        entries = [wire.ranked_entry_from_proto(e) for e in response.entries]
        return Page(entries, response.page, response.size, response.total, response.pages)

    def percentile(
        self, index: str, pk: Key, window_type: int = 0, timestamp: int | None = None, group: Key = ()
    ) -> float | None:
        request = pb.PercentileRequest(
            index=index,
            pk=wire.key_to_items(pk),
            window=_window(window_type, timestamp),
            group=wire.key_to_items(group, "group"),
        )
        response = self._call("GetPercentile", request)
        return response.percentile if response.HasField("percentile") else None

    def score_for_percentile(
        self, index: str, percentile: float, window_type: int = 0, timestamp: int | None = None, group: Key = ()
    ) -> Score | None:
        request = pb.ScoreForPercentileRequest(
            index=index,
            window=_window(window_type, timestamp),
            group=wire.key_to_items(group, "group"),
            percentile=percentile,
        )
        response = self._call("ScoreForPercentile", request)
        return wire.score_to_python(response.score) if response.HasField("score") else None

    def movement(
        self, index: str, pk: Key, window_type: int, timestamp: int, group: Key = (), mode: str = "ORDINAL"
    ) -> Movement:
        """The record's rank now and in the previous window of the type (``.change``: places gained)."""
        response = self._call("GetMovement", self._rank_request(index, pk, window_type, timestamp, group, mode))
        previous = wire.window_from_proto(response.previous_window) if response.HasField("previous_window") else None
        return Movement(
            wire.window_from_proto(response.window),
            wire.optional_entry(response, "entry"),
            previous,
            wire.optional_entry(response, "previous_entry"),
        )

    def rank_history(
        self,
        index: str,
        pk: Key,
        window_type: int,
        until: int | None = None,
        count: int = 10,
        group: Key = (),
        mode: str = "ORDINAL",
    ) -> History:
        """The record's rank in each of the latest ``count`` windows of the type, and the best."""
        request = pb.RankHistoryRequest(
            index=index,
            pk=wire.key_to_items(pk),
            window_type=window_type,
            count=count,
            group=wire.key_to_items(group, "group"),
            mode=MODES[mode],
        )
        if until is not None:
            request.until = until
        response = self._call("GetRankHistory", request)
        rows = [(wire.window_from_proto(row.window), wire.optional_entry(row, "entry")) for row in response.windows]
        best = None
        if response.HasField("best"):
            best = (wire.window_from_proto(response.best.window), wire.ranked_entry_from_proto(response.best.entry))
        return History(rows, best)

    def scan(
        self,
        index: str,
        scan_type: str = "BY_RANK",
        *,
        low: Score | None = None,
        high: Score | None = None,
        low_exclusive: bool = False,
        high_exclusive: bool = False,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        reverse: bool = False,
        limit: int = 0,
        continuation: bytes = b"",
        mode: str = "ORDINAL",
    ) -> tuple[list[RankedEntry], bytes]:
        request = pb.ScanRequest(
            index=index,
            type=pb.ScanType.Value(scan_type),
            window=_window(window_type, timestamp),
            group=wire.key_to_items(group, "group"),
            low_exclusive=low_exclusive,
            high_exclusive=high_exclusive,
            reverse=reverse,
            limit=limit,
            continuation=continuation,
            mode=MODES[mode],
        )
        if low is not None:
            request.low.CopyFrom(wire.python_to_score(low))
        if high is not None:
            request.high.CopyFrom(wire.python_to_score(high))
        response = self._call("Scan", request)
        return [wire.ranked_entry_from_proto(e) for e in response.entries], response.continuation

    def scan_all(self, index: str, scan_type: str = "BY_RANK", page: int = 100, **kwargs: Any) -> Iterator[RankedEntry]:
        """Every entry of a scan, following continuations page by page."""
        continuation = b""
        while True:
            entries, continuation = self.scan(index, scan_type, limit=page, continuation=continuation, **kwargs)
            yield from entries
            if not continuation:
                return


def _with_boards(
    maintenance: pb.MaintenancePolicy | None, boards: Sequence[str], timezone: str
) -> pb.MaintenancePolicy | None:
    """``maintenance`` keeping the calendar ``boards`` named (daily, weekly, monthly) too."""
    if not boards:
        return maintenance
    policy = pb.MaintenancePolicy()
    if maintenance is not None:
        policy.CopyFrom(maintenance)
    for periods in board_periods(boards, timezone, policy.timebase or "seconds"):
        policy.calendar.add(type=periods.type, period=periods.period, timezone=timezone)
    return policy


def load_refusal(error: grpc.RpcError) -> tuple[int | None, int | None]:
    """For an error ending a load: (0-based position of the refused record, records saved before it).

    Either is None when the server did not say (e.g. the load failed for another reason).
    """
    found: dict[str, int] = {}
    for key, value in getattr(error, "trailing_metadata", lambda: None)() or ():
        if key in ("refused-record", "records-saved"):
            found[key] = int(value)
    return found.get("refused-record"), found.get("records-saved")
