"""``serve``: the gRPC server (and the HTTP door) over a store, until Ctrl-C or SIGTERM."""

from __future__ import annotations

import click

from .. import formats
from ..service.settings import DEFAULT_MAX_PAGE, MAX_STALENESS_MS
from .demo import DEFAULT_HTTP_ADDRESS
from .failures import one_line
from .options import DURATION, PEM_FILE

DEFAULT_STORE = "lmdb:./data"


@click.command()
@click.option("--store", default=None, help=f"Store URL (default {DEFAULT_STORE}).")
@click.option("--cluster-file", default=None, help="Use FoundationDB with this cluster file instead.")
@click.option("--address", default="127.0.0.1:50051", show_default=True, help="Address to listen on.")
@click.option("--workers", default=16, show_default=True, help="Server threads.")
@click.option("--grace", default=10.0, show_default=True, help="Seconds in-flight calls get at shutdown.")
@click.option(
    "--tokens",
    "tokens_file",
    type=click.Path(dir_okay=False),
    help="File of ROLE:TOKEN lines (default $FDB_LEADERBOARD_TOKENS).",
)
@click.option("--tls-cert", type=PEM_FILE, help="Serve TLS with this certificate chain (PEM).")
@click.option("--tls-key", type=PEM_FILE, help="The TLS certificate's key (PEM).")
@click.option("--client-ca", type=PEM_FILE, help="Require client certificates signed by this CA (mutual TLS).")
@click.option(
    "--allow-unauthenticated", is_flag=True, help="Listen beyond loopback without tokens (anyone reaching it is admin)."
)
@click.option("--health/--no-health", default=True, show_default=True, help="Serve grpc.health.v1 (no token needed).")
@click.option("--reflection/--no-reflection", default=True, show_default=True, help="Serve gRPC reflection.")
@click.option("--max-page", default=DEFAULT_MAX_PAGE, show_default=True, help="Most rows per Top/AroundMe/Scan.")
@click.option("--max-calls", default=4096, show_default=True, help="Concurrent calls before RESOURCE_EXHAUSTED.")
@click.option(
    "--max-rank-watchers", default=1000, show_default=True, help="Ranks watched at once (watch, WatchRank, events)."
)
@click.option(
    "--max-window-end-streams",
    default=1000,
    show_default=True,
    help="Window-end event streams open at once (window-ends, WatchWindowEnds, events).",
)
@click.option(
    "--webhooks/--no-webhooks",
    default=True,
    show_default=True,
    help="Deliver window-end events to their webhooks from this server (several servers share the work).",
)
@click.option(
    "--webhook-timeout",
    default="10s",
    show_default=True,
    type=DURATION,
    help="How long a webhook has to answer a POST, from connecting to its status line (a dead server's events "
    "are taken over after twice that).",
)
@click.option(
    "--webhook-first-retry",
    default="1s",
    show_default=True,
    type=DURATION,
    help="Wait before an event's second try; each later wait doubles, up to 10 minutes, for 3 days.",
)
@click.option("--receive-timeout", default=10.0, show_default=True, help="Seconds a request may take to arrive.")
@click.option("--deadline", default=60.0, show_default=True, help="Seconds of server work for a call without one.")
@click.option(
    "--max-staleness",
    default=0,
    show_default=True,
    type=click.IntRange(0, MAX_STALENESS_MS),
    help="Milliseconds a read may lag behind the latest writes when its caller names no bound "
    "(0: exact; FoundationDB only, the embedded store always reads the latest).",
)
@click.option(
    "--read-processes",
    default=1,
    show_default=True,
    type=click.IntRange(0, 64),
    help="Processes serving reads of many rows, at a lower CPU priority, so they never slow point reads "
    "(0: threads of the server).",
)
@click.option(
    "--read-priority",
    default="idle",
    show_default=True,
    help="CPU priority of the reader processes: 'idle' (only CPU nothing else wants) or a nice level 0-19.",
)
@click.option(
    "--processes",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Server processes sharing the address (Python serves about one core per process).",
)
@click.option(
    "--maintain-every",
    default="60s",
    show_default=True,
    type=DURATION,
    help="Interval of the server's own maintenance: keep windows ahead, fill, expire, forget old "
    "idempotency keys (0: none; then run `fdb-leaderboard maintain`).",
)
@click.option(
    "--raise-formats/--no-raise-formats",
    default=True,
    show_default=True,
    help="Have the maintenance raise the store's and the indexes' stored formats once every process on the store "
    "reads the newer one (off: only `store upgrade` and `index upgrade` do, keeping a return to the older release "
    "possible).",
)
@click.option(
    "--http-address",
    default=None,
    help=f"Address of the HTTP/JSON API, the page and /metrics, with the same tokens and TLS ('off': none) "
    f"[default: {DEFAULT_HTTP_ADDRESS}; off with --processes, which serve gRPC only].",
)
@click.option(
    "--http-max-connections",
    default=1000,
    show_default=True,
    type=click.IntRange(1),
    help="Open HTTP connections (at most half the process's file descriptors, so gRPC keeps its own).",
)
@click.option(
    "--http-max-streams",
    default=500,
    show_default=True,
    type=click.IntRange(1),
    help="Open event streams (at most half the HTTP connections, so requests keep the other half).",
)
@click.option(
    "--http-host",
    "http_hosts",
    multiple=True,
    help="A host name the HTTP server answers to ('*.example.com' for its sub-domains; repeat for more) "
    "[default: the loopback names on a loopback address, any otherwise].",
)
def serve(
    store: str | None,
    cluster_file: str | None,
    address: str,
    workers: int,
    grace: float,
    tokens_file: str | None,
    tls_cert: str | None,
    tls_key: str | None,
    client_ca: str | None,
    allow_unauthenticated: bool,
    health: bool,
    reflection: bool,
    max_page: int,
    max_calls: int,
    max_rank_watchers: int,
    max_window_end_streams: int,
    webhooks: bool,
    webhook_timeout: float,
    webhook_first_retry: float,
    receive_timeout: float,
    deadline: float,
    max_staleness: int,
    read_processes: int,
    read_priority: str,
    processes: int,
    maintain_every: float,
    raise_formats: bool,
    http_address: str | None,
    http_max_connections: int,
    http_max_streams: int,
    http_hosts: tuple[str, ...],
) -> None:
    """Start the gRPC service and its HTTP front end (embedded store in ./data by default).

    Without tokens it listens on loopback addresses only (unless --allow-unauthenticated).
    SIGTERM or Ctrl-C stops it: no new calls, in-flight ones get --grace seconds, the store is closed.
    """
    from ..http import HttpLimits, HttpServer
    from ..service import Server, ServerSettings, StartupError, Supervisor, TlsFiles
    from ..service.server import tune_for_serving
    from ..service.settings import load_tokens
    from ..store import StoreError

    url = f"fdb:{cluster_file}" if cluster_file else store or DEFAULT_STORE
    if (tls_cert is None) != (tls_key is None) or (client_ca and not tls_cert):
        raise click.UsageError("--tls-cert and --tls-key go together (and --client-ca needs them)")
    if processes > 1 and http_address not in (None, "off"):
        raise click.UsageError(
            "--processes serves gRPC only: run the HTTP front end (--http-address) in a server of its own"
        )
    try:
        settings = ServerSettings(
            max_page=max_page,
            max_concurrent_calls=max_calls,
            max_rank_watchers=max_rank_watchers,
            max_window_end_streams=max_window_end_streams,
            webhooks=webhooks,
            webhook_timeout=webhook_timeout,
            webhook_first_retry=webhook_first_retry,
            receive_timeout=receive_timeout,
            default_deadline=deadline,
            max_staleness=max_staleness,
            read_processes=read_processes,
            read_priority=read_priority,
            tokens=load_tokens(tokens_file),
            tls=TlsFiles(tls_cert, tls_key, client_ca) if tls_cert and tls_key else None,
            allow_unauthenticated=allow_unauthenticated,
            health=health,
            reflection=reflection,
            maintain_every=maintain_every,
            raise_formats=raise_formats,
        )
        if processes > 1:
            settings.check_address(address)
            group = Supervisor(url, address, processes, workers, grace, settings=settings).start()
        else:
            server = Server(url, address, workers, settings=settings).start()
            server.start_readers()
            try:
                wanted = http_address or DEFAULT_HTTP_ADDRESS
                limits = HttpLimits(
                    max_connections=http_max_connections,
                    max_event_streams=http_max_streams,
                    hosts=http_hosts or None,
                )
                http = None if wanted == "off" else HttpServer(server, wanted, limits).start()
            except BaseException:
                server.stop(grace=0)
                raise
    except StartupError as exc:  # one line, not a traceback; these name what they refuse
        raise click.ClickException(one_line(exc)) from None
    except (StoreError, ValueError) as exc:
        raise click.ClickException(f"cannot serve store {url} on {address}: {one_line(exc)}") from None
    if processes > 1:
        group.stop_on_signals()
        version, recorded = group.store_format
        click.echo(
            f"fdb-leaderboard {formats.RELEASE} serving on {group.address} with {processes} processes (store {url}, "
            f"{_formats_text(version, recorded)}); Ctrl-C stops it"
        )
        raise SystemExit(group.wait())
    server.stop_on_signals(grace)
    tune_for_serving()
    access = "tokens" if settings.tokens is not None else "no authentication"
    stored = server.store_format
    click.echo(
        f"fdb-leaderboard {formats.RELEASE} serving on {server.address}{f' and {http.url}' if http else ''} "
        f"({'TLS' if settings.tls else 'plaintext'}, {access}; store {url}, "
        f"{_formats_text(stored.version, stored.recorded)}); Ctrl-C stops it"
    )
    server.wait()
    click.echo("fdb-leaderboard stopped; store closed")


def _formats_text(version: int, recorded: bool) -> str:
    """The store's format and the index format this release writes, for serve's start line."""
    return f"store format {version}{'' if recorded else ' (not recorded)'}, index format {formats.NEWEST_INDEX}"
