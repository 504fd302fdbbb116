"""A small Python client for the gRPC service, taking and returning plain Python values.

    with LeaderboardClient("127.0.0.1:50051") as lb:
        lb.create_index("game")
        lb.update_windows("game", specs=[(1, 0, 86_400, 86_400, 7)])
        lb.add_score("game", ("alice",), 1200, timestamp=1_700_000_000)
        lb.top("game", 10)

Errors arrive as ``grpc.RpcError`` with the server's status code and message.

A server with access control needs ``token=`` (sent as ``authorization: Bearer TOKEN`` on every
call); one with TLS needs ``ca=`` (the PEM file of the CA that signed its certificate), and with
mutual TLS also ``cert=`` and ``key=`` (the client's certificate and key).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import grpc

from . import wire
from .index import RankedEntry
from .proto import service_pb2 as pb
from .proto import service_pb2_grpc as pb_grpc

_MESSAGE_RECORDS = 500  # a BulkLoad message carries up to this many records
_MESSAGE_BYTES = 1 << 20  # or about this many bytes (gRPC refuses messages over 4 MB)
MODES = {"ORDINAL": pb.ORDINAL, "COMPETITION": pb.COMPETITION}


def _window(window_type: int, timestamp: int | None) -> pb.WindowSelector:
    selector = pb.WindowSelector(type=window_type)
    if timestamp is not None:
        selector.timestamp = timestamp
    return selector


def _pb_entry(score: int | float, timestamp: int, context: Sequence = (), group: Sequence = ()) -> pb.Entry:
    return pb.Entry(
        score=wire.python_to_score(score),
        timestamp=timestamp,
        context=wire.tuple_to_items(tuple(context)),
        group=wire.tuple_to_items(tuple(group)),
    )


class _BearerToken(grpc.UnaryUnaryClientInterceptor, grpc.StreamUnaryClientInterceptor):
    """Adds ``authorization: Bearer TOKEN`` to every call of a channel."""

    def __init__(self, token: str) -> None:
        self._header = ("authorization", f"Bearer {token}")

    def _details(self, details: Any) -> Any:
        return details._replace(metadata=[*(details.metadata or ()), self._header])

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation: Any, details: Any, requests: Any) -> Any:
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
        timeout: float = 30.0,
        *,
        token: str | None = None,
        ca: str | None = None,
        cert: str | None = None,
        key: str | None = None,
    ) -> None:
        """``token``: a bearer token; ``ca``: a CA file to verify the server's TLS certificate
        (TLS is used when ``ca`` or ``cert`` is given); ``cert``/``key``: a client certificate."""
        if (cert is None) != (key is None):
            raise ValueError("a client certificate needs both cert and key")
        if ca is None and cert is None:
            channel = grpc.insecure_channel(address)
        else:
            credentials = grpc.ssl_channel_credentials(_read_pem(ca), _read_pem(key), _read_pem(cert))
            channel = grpc.secure_channel(address, credentials)
        self._raw_channel = channel
        self.channel = grpc.intercept_channel(channel, _BearerToken(token)) if token else channel
        self.stub = pb_grpc.LeaderboardStub(self.channel)
        self.timeout = timeout

    def close(self) -> None:
        self._raw_channel.close()

    def __enter__(self) -> LeaderboardClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, request: Any) -> Any:
        return getattr(self.stub, method)(request, timeout=self.timeout)

    # -- admin ----------------------------------------------------------------------------

    def create_index(
        self,
        name: str,
        aggregation: str = "BEST",
        hash_function: str = "MURMUR3",
        group_size: int = 0,
        context_size: int = 0,
        high_score_first: bool = False,
        reference_layout: bool = False,
        count_duplicates: bool = False,
        maintenance: pb.MaintenancePolicy | None = None,
        score_type: str = "INT",
    ) -> bool:
        options = pb.IndexOptions(
            aggregation=pb.Aggregation.Value(aggregation),
            hash_function=pb.RankHash.Value(hash_function),
            group_size=group_size,
            context_size=context_size,
            high_score_first=high_score_first,
            count_duplicates=count_duplicates,
            score_type=pb.ScoreType.Value(score_type),
        )
        request = pb.CreateIndexRequest(
            name=name, options=options, reference_layout=reference_layout, maintenance=maintenance
        )
        return self._call("CreateIndex", request).created

    def list_indexes(self) -> list[pb.IndexInfo]:
        return list(self._call("ListIndexes", pb.ListIndexesRequest()).indexes)

    def set_maintenance(self, index: str, policy: pb.MaintenancePolicy) -> None:
        self._call("SetMaintenancePolicy", pb.SetMaintenancePolicyRequest(index=index, maintenance=policy))

    def update_windows(
        self,
        index: str,
        specs: Sequence[tuple[int, int, int, int, int]] = (),
        windows: Sequence[tuple[int, int, int]] = (),
        high_score_first: bool = False,
        all_time: bool = True,
        delete_before: int | None = None,
        update_timestamp: int = 0,
        nlevels: int = 0,
        rebuild: str = "IF_OVERLAPPING_CHANGED",
    ) -> pb.UpdateWindowsResponse:
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

    def save_sub_directory(self, index: str, group: Sequence, high_score_first: bool) -> None:
        request = pb.SaveSubDirectoryRequest(
            index=index, group=wire.tuple_to_items(tuple(group)), high_score_first=high_score_first
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

    def verify(self, index: str, max_problems: int = 0) -> list[str]:
        """Problems the server's consistency check finds in the index (empty: sound)."""
        return list(self.verify_report(index, max_problems).problems)

    def verify_report(self, index: str, max_problems: int = 0, timeout: float | None = None) -> pb.VerifyResponse:
        """The server's consistency check: problems, what it checked, whether it finished."""
        request = pb.VerifyRequest(index=index, max_problems=max_problems)
        return self.stub.Verify(request, timeout=timeout or self.timeout)

    # -- writes ---------------------------------------------------------------------------

    def add_score(
        self, index: str, pk: Sequence, score: int | float, timestamp: int, context: Sequence = (), group: Sequence = ()
    ) -> int:
        request = pb.AddScoreRequest(
            index=index, pk=wire.tuple_to_items(tuple(pk)), entry=_pb_entry(score, timestamp, context, group)
        )
        return self._call("AddScore", request).windows_changed

    def save_record(self, index: str, pk: Sequence, entries: Sequence[tuple]) -> int:
        request = pb.SaveRecordRequest(
            index=index, pk=wire.tuple_to_items(tuple(pk)), entries=[_pb_entry(*e) for e in entries]
        )
        return self._call("SaveRecord", request).windows_changed

    def delete_record(self, index: str, pk: Sequence) -> bool:
        return self._call(
            "DeleteRecord", pb.DeleteRecordRequest(index=index, pk=wire.tuple_to_items(tuple(pk)))
        ).existed

    def write_batch(
        self, index: str, records: Sequence[tuple[Sequence, Sequence[tuple]]], replace: bool = True
    ) -> None:
        request = pb.WriteBatchRequest(
            index=index,
            replace=replace,
            records=[
                pb.RecordEntries(pk=wire.tuple_to_items(tuple(pk)), entries=[_pb_entry(*e) for e in entries])
                for pk, entries in records
            ],
        )
        self._call("WriteBatch", request)

    def bulk_load(
        self,
        index: str,
        records: Iterable[tuple[Sequence, Sequence[tuple]]],
        batch_size: int = 500,
        rank_as_loaded: bool = False,
        progress: Callable[[int], None] | None = None,
        timeout: float | None = None,
    ) -> int:
        """Stream ``(pk, entries)`` records to the server's BulkLoad; returns how many it saved.

        Each record replaces that record's entries.  ``progress`` gets the count of records sent
        so far.  If iterating or converting ``records`` raises, the stream ends there: the server
        saves what came before, then that exception is raised here (noting how many were saved).
        No timeout by default: a load takes as long as its data.
        """
        failure: Exception | None = None

        def requests() -> Iterator[pb.BulkLoadRequest]:
            nonlocal failure
            message = pb.BulkLoadRequest(index=index, batch_size=batch_size, rank_as_loaded=rank_as_loaded)
            sent = size = 0
            try:
                for pk, entries in records:
                    record = pb.RecordEntries(
                        pk=wire.tuple_to_items(tuple(pk)), entries=[_pb_entry(*e) for e in entries]
                    )
                    message.records.append(record)
                    size += record.ByteSize()
                    if len(message.records) == _MESSAGE_RECORDS or size >= _MESSAGE_BYTES:
                        yield message
                        sent += len(message.records)
                        if progress:
                            progress(sent)
                        message, size = pb.BulkLoadRequest(), 0
            except Exception as exc:  # end the stream here; grpc would only say "Exception iterating requests"
                failure = exc
            if message.records or message.index:  # the first message names the index even with no records
                yield message
                if progress and message.records:
                    progress(sent + len(message.records))

        written = self.stub.BulkLoad(requests(), timeout=timeout).records_written
        if failure is not None:
            failure.add_note(f"BulkLoad saved the {written} records before it")
            raise failure
        return written

    # -- reads ----------------------------------------------------------------------------

    def _rank_request(
        self, index: str, pk: Sequence, window_type: int, timestamp: int | None, group: Sequence, mode: str
    ) -> pb.RankRequest:
        return pb.RankRequest(
            index=index,
            pk=wire.tuple_to_items(tuple(pk)),
            window=_window(window_type, timestamp),
            group=wire.tuple_to_items(tuple(group)),
            mode=MODES[mode],
        )

    def rank(
        self,
        index: str,
        pk: Sequence,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Sequence = (),
        mode: str = "ORDINAL",
    ) -> int | None:
        response = self._call("GetRank", self._rank_request(index, pk, window_type, timestamp, group, mode))
        return response.rank if response.HasField("rank") else None

    def rank_and_entry(
        self,
        index: str,
        pk: Sequence,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Sequence = (),
        mode: str = "ORDINAL",
    ) -> RankedEntry | None:
        response = self._call("GetRankAndEntry", self._rank_request(index, pk, window_type, timestamp, group, mode))
        return wire.ranked_entry_from_proto(response.entry) if response.HasField("entry") else None

    def around(
        self,
        index: str,
        pk: Sequence,
        above: int,
        below: int,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Sequence = (),
        mode: str = "ORDINAL",
        if_absent: str = "EMPTY",
    ) -> list[RankedEntry]:
        request = pb.AroundMeRequest(
            index=index,
            pk=wire.tuple_to_items(tuple(pk)),
            window=_window(window_type, timestamp),
            group=wire.tuple_to_items(tuple(group)),
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
        group: Sequence = (),
        mode: str = "ORDINAL",
    ) -> list[RankedEntry]:
        request = pb.TopRequest(
            index=index,
            window=_window(window_type, timestamp),
            group=wire.tuple_to_items(tuple(group)),
            mode=MODES[mode],
            n=n,
        )
        return [wire.ranked_entry_from_proto(e) for e in self._call("Top", request).entries]

    def count(self, index: str, window_type: int = 0, timestamp: int | None = None, group: Sequence = ()) -> int:
        request = pb.CountRequest(
            index=index, window=_window(window_type, timestamp), group=wire.tuple_to_items(tuple(group))
        )
        return self._call("Count", request).count

    def score_for_rank(
        self, index: str, rank: int, window_type: int = 0, timestamp: int | None = None, group: Sequence = ()
    ) -> int | float | None:
        request = pb.ScoreForRankRequest(
            index=index, window=_window(window_type, timestamp), group=wire.tuple_to_items(tuple(group)), rank=rank
        )
        response = self._call("ScoreForRank", request)
        return wire.score_to_python(response.score) if response.HasField("score") else None

    def rank_for_score(
        self, index: str, score: int | float, window_type: int = 0, timestamp: int | None = None, group: Sequence = ()
    ) -> int:
        request = pb.RankForScoreRequest(
            index=index,
            window=_window(window_type, timestamp),
            group=wire.tuple_to_items(tuple(group)),
            score=wire.python_to_score(score),
        )
        return self._call("RankForScore", request).rank

    def scan(
        self,
        index: str,
        scan_type: str = "BY_RANK",
        *,
        low: int | float | None = None,
        high: int | float | None = None,
        low_exclusive: bool = False,
        high_exclusive: bool = False,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Sequence = (),
        reverse: bool = False,
        limit: int = 0,
        continuation: bytes = b"",
        mode: str = "ORDINAL",
    ) -> tuple[list[RankedEntry], bytes]:
        request = pb.ScanRequest(
            index=index,
            type=pb.ScanType.Value(scan_type),
            window=_window(window_type, timestamp),
            group=wire.tuple_to_items(tuple(group)),
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
