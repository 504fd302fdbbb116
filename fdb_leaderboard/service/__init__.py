"""The server: several named indexes of one store served over gRPC.

| module | concern |
|---|---|
| ``server.py`` | :class:`Server`: the process's gRPC server, health, reflection and store lifecycle |
| ``settings.py`` | :class:`ServerSettings`: limits per call, timeouts, tokens, TLS; startup refusals |
| ``calls.py`` | :class:`Dispatcher`: how a call is served: raw-bytes requests, on the loop, a worker, a reader |
| ``timeouts.py`` | a served call's time limits: its deadline as its handler sees it, the sweep firing timeouts |
| ``streams.py`` | the streams: watched ranks, window-end events, client streams (loads, dumps, restores) |
| ``write_pipeline.py`` | :class:`WritePipeline`: score writes committed together, a batch per commit |
| ``stale_reads.py`` | reads that tolerate staleness: their bounds, one answer shared by identical reads |
| ``interceptors.py`` | :class:`AccessInterceptor`: each call's bearer token checked against its method's role |
| ``log_lines.py`` | :class:`RateLimitedLog`: floods logged at most one line in so long |
| ``readers.py`` | :class:`ReadProcesses`: heavy reads in processes of their own, at idle CPU priority |
| ``processes.py`` | :class:`Supervisor`: several server processes sharing one address (``serve --processes``) |
| ``grpc_service.py`` | :class:`LeaderboardService`: the servicer, assembled from the handler groups |
| ``handlers/`` | the handlers, one group of RPCs a module (indexes, maintenance, moves, writes, reads, ...) |
| ``convert.py`` | requests into index arguments (settings, window updates, maintenance policies) |
| ``status.py`` | which status code answers which error |
| ``catalog.py`` | the named indexes of a store and their maintenance policies; paused writes, captures, restores |
| ``entry_checks.py`` | every transaction of a kept index checks its catalog entry: dropped, paused, captured, format |
| ``recreate.py`` | creating an index that exists: differing options refused, named; the boards asked for added |
| ``releases.py`` | the store's format record and each server process's report of its release and last sign of life |
| ``upgrades.py`` | raising the stored formats: by an operator, or by the maintenance once every process reads them |
| ``served_dumps.py`` | dumps of served indexes that catch up with their writes; restores published under a name |
| ``housekeeping.py`` | the server's background maintenance: keep ahead, fill, expire, forget keys, notice ends |
| ``window_events.py`` | window-end events in the store: webhooks, ends noticed once, the outbox, the event log |
| ``background.py`` | :class:`BackgroundLoop`: the thread of the server's maintenance |
| ``webhooks.py`` | :class:`WebhookDelivery`: the outbox's events POSTed, signed, leased, each webhook's apart |
| ``metrics.py`` | Prometheus metrics: calls, store transactions, group commits, maintenance progress |

Item, score and entry conversions shared with the client are in :mod:`fdb_leaderboard.wire`.
Dependencies point down: this package uses :mod:`fdb_leaderboard.index` and the store.
"""

from .grpc_service import SERVICE_NAME, LeaderboardService
from .processes import Supervisor
from .server import Server
from .settings import ServerSettings, StartupError, TlsFiles
from .webhooks import WebhookDelivery
from .window_events import WindowEvents

__all__ = [
    "SERVICE_NAME",
    "LeaderboardService",
    "Server",
    "ServerSettings",
    "StartupError",
    "Supervisor",
    "TlsFiles",
    "WebhookDelivery",
    "WindowEvents",
]
