"""What the service knows of each RPC of ``fdb_leaderboard.Leaderboard``: one entry per method.

Every fact a front end needs about a method lives in its :class:`Rpc` entry of :data:`RPCS`:
the role a caller needs (:mod:`fdb_leaderboard.access`), whether it changes what is stored, how
the dispatcher serves it (heavy workers, the event loop, the write pipeline, a reader process,
which stream), whether the metrics count what its answer says, and whether the HTTP door has a
route for it.  A test checks the table against the proto's service descriptor (every RPC has one
entry, no entry names no RPC, the streaming shapes agree) and against the REST routes, so a new
RPC cannot be half-registered.

A leaf: it imports nothing of the package, so access, the service and the HTTP door all read it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


class Role(enum.IntEnum):
    """What a token may do; a higher role includes every lower one."""

    READ = 1
    WRITE = 2
    ADMIN = 3

    @classmethod
    def parse(cls, name: str) -> Role:
        try:
            return cls[name.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown role {name!r}: use read, write or admin") from None

    def __str__(self) -> str:
        return self.name.lower()


class Stream(enum.Enum):
    """How a method's messages travel, and so which of the dispatcher's ways serves it."""

    UNARY = "unary"  # one request, one answer
    WATCH = "watch"  # one request; the answer of a unary read again each time it changed
    EVENTS = "events"  # one request; the store's event log as it grows
    UPLOAD = "upload"  # a stream of requests, one answer
    UPLOAD_REPLIES = "upload, replies"  # a stream of requests, a stream of answers

    @property
    def client_streaming(self) -> bool:
        return self in (Stream.UPLOAD, Stream.UPLOAD_REPLIES)

    @property
    def server_streaming(self) -> bool:
        return self in (Stream.WATCH, Stream.EVENTS, Stream.UPLOAD_REPLIES)


# The rows a sized read answers with, from its request and the server's settings (``max_page``).
Rows = Callable[[Any, Any], int]


@dataclass(frozen=True)
class Rpc:
    """One method of the service and how every door treats it."""

    name: str
    role: Role
    writes: bool  # changes what is stored (else it only reads, or computes on what it is given)
    # Whole-index or many-record work: always on the heavy workers (as are reads of many rows).
    heavy: bool = False
    rows: Rows | None = None  # the rows it answers with (None: a point read, a write, a job)
    # A short read: on the event loop where the store's reads cost no round trips (up to a few
    # rows), and its freshness may be bounded by the caller (staleness, a minimum version).
    inline: bool = False
    pipelined: bool = False  # a score write the write pipeline commits with others
    elsewhere: bool = False  # a read a reader process serves when it is heavy
    counted: bool = False  # its answer says what it did, and the metrics count that
    stream: Stream = Stream.UNARY
    watches: str | None = None  # the unary read a WATCH stream repeats
    rest: bool = False  # the HTTP door has a route for it (``http.rest.ROUTES``)


READ, WRITE, ADMIN = Role.READ, Role.WRITE, Role.ADMIN
READS, WRITES = False, True


def _top_rows(request: Any, settings: Any) -> int:
    return request.n


def _around_rows(request: Any, settings: Any) -> int:
    return request.above + request.below + 1


def _scan_rows(request: Any, settings: Any) -> int:
    return request.limit or settings.max_page


def _page_rows(request: Any, settings: Any) -> int:
    return request.size


def _records_rows(request: Any, settings: Any) -> int:
    return len(request.records)


def _cohort_rows(request: Any, settings: Any) -> int:
    # A cohort is read whole (at most 1000 rows); it answers with a page or the rows around a record.
    return request.size or request.above + request.below + 1


def _groups_rows(request: Any, settings: Any) -> int:
    return request.limit or 100


# Anything that changes an index's structure, policy or many records at once is admin (as are
# reads of who did what: hidden records, the audit trail, webhooks' URLs); record writes are
# write; reads are read.  In the proto's order.
_TABLE = (
    Rpc("CreateIndex", ADMIN, WRITES, counted=True),
    Rpc("ListIndexes", READ, READS, rest=True),
    Rpc("DropIndex", ADMIN, WRITES),
    Rpc("SetMaintenancePolicy", ADMIN, WRITES),
    Rpc("UpdateWindows", ADMIN, WRITES, heavy=True, counted=True),
    Rpc("ListWindows", READ, READS, inline=True, rest=True),
    Rpc("SaveSubDirectory", ADMIN, WRITES),
    Rpc("ListSubDirectories", READ, READS, inline=True),
    Rpc("Expire", ADMIN, WRITES, heavy=True, counted=True),
    Rpc("Fill", ADMIN, WRITES, heavy=True, counted=True),
    Rpc("Trim", ADMIN, WRITES, heavy=True, counted=True),
    Rpc("KeepAhead", ADMIN, WRITES, heavy=True, counted=True),
    Rpc("Verify", ADMIN, READS, heavy=True),
    Rpc("ExpireIdempotencyKeys", ADMIN, WRITES),
    Rpc("HideRecord", ADMIN, WRITES, rest=True),
    Rpc("RestoreRecord", ADMIN, WRITES, rest=True),
    Rpc("ListHiddenRecords", ADMIN, READS, rest=True),
    Rpc("SetScoreRules", ADMIN, WRITES, rest=True),
    Rpc("DeleteRecords", ADMIN, WRITES, heavy=True, rest=True),
    Rpc("Dump", ADMIN, READS, stream=Stream.UPLOAD_REPLIES),
    Rpc("Restore", ADMIN, WRITES, stream=Stream.UPLOAD_REPLIES),
    Rpc("SetWritesPaused", ADMIN, WRITES),
    Rpc("AddScore", WRITE, WRITES, pipelined=True, rest=True),
    Rpc("AddEntries", WRITE, WRITES, pipelined=True),
    Rpc("SaveRecord", WRITE, WRITES, pipelined=True),
    Rpc("DeleteRecord", WRITE, WRITES, pipelined=True, rest=True),
    Rpc("WriteBatch", WRITE, WRITES, heavy=True),
    Rpc("BulkLoad", ADMIN, WRITES, counted=True, stream=Stream.UPLOAD),
    Rpc("SetMetadata", WRITE, WRITES, rest=True),
    Rpc("Load", ADMIN, WRITES, stream=Stream.UPLOAD_REPLIES),
    Rpc("GetRank", READ, READS, inline=True),
    Rpc("GetRankAndEntry", READ, READS, inline=True, rest=True),
    Rpc("WatchRank", READ, READS, stream=Stream.WATCH, watches="GetRankAndEntry"),
    Rpc("AroundMe", READ, READS, rows=_around_rows, inline=True, elsewhere=True, rest=True),
    Rpc("Top", READ, READS, rows=_top_rows, inline=True, elsewhere=True, rest=True),
    Rpc("Count", READ, READS, inline=True, rest=True),
    Rpc("ScoreForRank", READ, READS, inline=True, rest=True),
    Rpc("RankForScore", READ, READS, inline=True, rest=True),
    Rpc("Scan", READ, READS, rows=_scan_rows, inline=True, elsewhere=True, rest=True),
    Rpc("GetMetadata", READ, READS, inline=True, rest=True),
    Rpc("GetRanks", READ, READS, rows=_records_rows, inline=True, elsewhere=True, rest=True),
    Rpc("FriendsBoard", READ, READS, rows=_records_rows, inline=True, elsewhere=True, rest=True),
    Rpc("GetPage", READ, READS, rows=_page_rows, inline=True, elsewhere=True, rest=True),
    Rpc("GetPercentile", READ, READS, inline=True, rest=True),
    Rpc("ScoreForPercentile", READ, READS, inline=True, rest=True),
    Rpc("GetMovement", READ, READS, inline=True, rest=True),
    Rpc("GetRankHistory", READ, READS, heavy=True, elsewhere=True, rest=True),
    Rpc("ScoreTrim", READ, READS, heavy=True, rest=True),  # computes on the entries given
    Rpc("GetScoreRules", READ, READS, rest=True),  # what a game client may submit
    Rpc("ListAuditEvents", ADMIN, READS, rest=True),
    Rpc("SetAuditRetention", ADMIN, WRITES, rest=True),
    Rpc("ExpireAuditEvents", ADMIN, WRITES, heavy=True),
    Rpc("GetCohort", READ, READS, rows=_cohort_rows, rest=True),
    Rpc("ListGroups", READ, READS, rows=_groups_rows, inline=True, rest=True),
    Rpc("AddWebhook", ADMIN, WRITES, rest=True),
    Rpc("ListWebhooks", ADMIN, READS, rest=True),
    Rpc("DeleteWebhook", ADMIN, WRITES, rest=True),
    Rpc("NoticeWindowEnds", ADMIN, WRITES, heavy=True),
    Rpc("WatchWindowEnds", READ, READS, stream=Stream.EVENTS, rest=True),
    Rpc("GetStoreStatus", READ, READS, rest=True),
    Rpc("UpgradeStore", ADMIN, WRITES, heavy=True, rest=True),
    Rpc("UpgradeIndex", ADMIN, WRITES, heavy=True, rest=True),
)

RPCS: Mapping[str, Rpc] = {rpc.name: rpc for rpc in _TABLE}


def names(**facts: object) -> frozenset[str]:
    """The RPCs whose entries have every one of ``facts`` (``names(heavy=True)``)."""
    return frozenset(rpc.name for rpc in _TABLE if all(getattr(rpc, key) == value for key, value in facts.items()))
