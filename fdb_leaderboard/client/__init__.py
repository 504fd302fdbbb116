"""Python clients for the gRPC service, taking and returning plain Python values.

    with LeaderboardClient("127.0.0.1:50051") as lb:
        lb.create_index("game", boards=["daily"])
        lb.add_score("game", "alice", 1200, timestamp=1_700_000_000)  # pk ("alice",)
        lb.top("game", 10)

    async with AsyncLeaderboardClient("127.0.0.1:50051") as lb:  # for asyncio servers (grpc.aio)
        await lb.add_score("game", "alice", 1200, timestamp=1_700_000_000)
        await lb.top("game", 10)

Both clients have the same methods, with the same arguments and answers: each operation is
written once, as a generator that builds its requests and turns the answers into Python values
(:mod:`.operations`); a client only sends what it yields, blocking or awaiting.

Errors are :class:`CallError` subclasses named after the status code (:class:`NotFound`,
:class:`InvalidArgument`, :class:`Unavailable`...), carrying the server's message.  Each is also
the in-process index's class of that error where there is one (``client.NotFound`` is an
``errors.NotFound``, ``client.InvalidArgument`` an ``errors.InvalidArgument`` and so a
``ValueError``), so one ``except`` serves both, and a ``grpc.RpcError`` (``.code()``,
``.details()``, ``.trailing_metadata()``).  An argument the client cannot send (a key of the
wrong type, a negative count, an unknown mode) is refused before any call as InvalidArgument.

Writes are exactly-once: each write call carries an idempotency key (a new UUID unless one is
given), and a write that fails with UNAVAILABLE or DEADLINE_EXCEEDED (the server may or may not
have applied it) is sent again with the same key, with capped exponential backoff
(:class:`RetryPolicy`; ``retry=None`` sends every call once).  The server applies a key once and
answers its repeats with the first answer.  Reads are retried on UNAVAILABLE.

A server with access control needs ``token=`` (sent as ``authorization: Bearer TOKEN`` on every
call); one with TLS needs ``ca=`` (the PEM file of the CA that signed its certificate), and with
mutual TLS also ``cert=`` and ``key=`` (the client's certificate and key).

The modules, from the bottom up:

- :mod:`.errors`: a :class:`CallError` class per status code, and :func:`error_from_rpc`.
- :mod:`.retry`: :class:`RetryPolicy` and idempotency keys.
- :mod:`.messages`: the requests the operations build and the answers they read.
- :mod:`.admin_ops`, :mod:`.records_ops`, :mod:`.reads_ops`: the unary operations by area, each a
  generator written once for both clients; :mod:`.operations` gathers them and runs their steps.
- :mod:`.channel`: credentials and TLS, the metadata every call carries, the reads' freshness.
- :mod:`.streams`: the streaming calls' shared parts (loads, dumps, restores, moves, watches, split checks).
- :mod:`.blocking`: :class:`LeaderboardClient`; :mod:`.aio`: :class:`AsyncLeaderboardClient`.
- :mod:`.compare`: :func:`compare_boards`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# The values the answers hold are importable from here too, as the clients' own names are.
from ..errors import NoWindowsWarning
from ..index import (
    AuditEvent,
    Cohort,
    DeletionProgress,
    Entry,
    HiddenRecord,
    History,
    Leagues,
    Listing,
    Movement,
    Page,
    RankedEntry,
    ScoreRules,
)
from .blocking import LeaderboardClient, RankWatch, WindowEndWatch
from .compare import Comparison, compare_boards
from .errors import (
    ERRORS,
    RULE_ERRORS,
    Aborted,
    AlreadyExists,
    CallError,
    Cancelled,
    DataLoss,
    DeadlineExceeded,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    ScoreOutOfRange,
    SubmissionLimited,
    Unauthenticated,
    Unavailable,
    error_from_rpc,
    load_refusal,
)
from .messages import MODES, Key, Op, Score, WindowEnd, rank_mode
from .retry import RetryPolicy, new_idempotency_key
from .streams import DEFAULT_MOVE_CATCH_UP

if TYPE_CHECKING:
    from .aio import AsyncLeaderboardClient, AsyncWatch

__all__ = [
    "Aborted",
    "AlreadyExists",
    "AsyncLeaderboardClient",
    "AsyncWatch",
    "AuditEvent",
    "CallError",
    "Cancelled",
    "Cohort",
    "Comparison",
    "DEFAULT_MOVE_CATCH_UP",
    "DataLoss",
    "DeadlineExceeded",
    "DeletionProgress",
    "ERRORS",
    "Entry",
    "FailedPrecondition",
    "HiddenRecord",
    "History",
    "Internal",
    "InvalidArgument",
    "Key",
    "LeaderboardClient",
    "Leagues",
    "Listing",
    "MODES",
    "Movement",
    "NoWindowsWarning",
    "NotFound",
    "Op",
    "Page",
    "PermissionDenied",
    "RULE_ERRORS",
    "RankWatch",
    "RankedEntry",
    "ResourceExhausted",
    "RetryPolicy",
    "Score",
    "ScoreOutOfRange",
    "ScoreRules",
    "SubmissionLimited",
    "Unauthenticated",
    "Unavailable",
    "WindowEnd",
    "WindowEndWatch",
    "compare_boards",
    "error_from_rpc",
    "load_refusal",
    "new_idempotency_key",
    "rank_mode",
]

_ASYNCIO_NAMES = ("AsyncLeaderboardClient", "AsyncWatch")


def __getattr__(name: str) -> Any:
    # The asyncio client is made on first use: building its methods costs a program that blocks.
    if name in _ASYNCIO_NAMES:
        from . import aio

        return getattr(aio, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_ASYNCIO_NAMES})
