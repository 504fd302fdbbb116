"""``fdb-leaderboard``: run the service, administer indexes, run maintenance, see a demo.

Admin commands talk to a running server (``--server``, default ``$FDB_LEADERBOARD_SERVER``
or 127.0.0.1:50051), with a bearer token (``--token-file``, or ``$FDB_LEADERBOARD_TOKEN``) and,
over TLS, the server's CA (``--ca``; ``--cert``/``--key`` for mutual TLS).  Times are integers in
the index's timebase (seconds by default).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import click
import grpc
from tqdm import tqdm

from ..client import LeaderboardClient
from ..proto import service_pb2 as pb
from ..service.settings import DEFAULT_MAX_PAGE
from .demo import DEFAULT_HTTP_ADDRESS, demo
from .maintenance import maintenance_pass
from .records_file import Record, RecordsFileError, read_records

DEFAULT_SERVER = os.environ.get("FDB_LEADERBOARD_SERVER", "127.0.0.1:50051")
DEFAULT_STORE = "lmdb:./data"


def _parse_duration(text: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    for suffix in sorted(units, key=len, reverse=True):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * units[suffix]
    return float(text)


def _client(ctx: click.Context) -> LeaderboardClient:
    return LeaderboardClient(ctx.obj["server"], **ctx.obj["access"])


def _read_token(path: str | None) -> str | None:
    """The bearer token: the first line of ``path``, else ``$FDB_LEADERBOARD_TOKEN`` (never a command-line
    argument, which other users of the machine could read)."""
    if path is None:
        return os.environ.get("FDB_LEADERBOARD_TOKEN") or None
    try:
        with open(path, encoding="utf-8") as file:
            return file.readline().strip() or None
    except OSError as exc:
        raise click.ClickException(f"cannot read token file {path}: {exc.strerror}") from None


def _fail_on_rpc_error(fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except grpc.RpcError as exc:
            raise click.ClickException(f"{exc.code().name}: {exc.details()}") from None

    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


def _window_line(window: pb.Window) -> str:
    label = "all-time" if window.type == 0 else f"type {window.type} [{window.start}, {window.end})"
    return f"  key {window.key:>4}  {label}{'  (filling)' if window.filling else ''}"


_PEM = click.Path(exists=True, dir_okay=False)


@click.group()
@click.option("--server", default=DEFAULT_SERVER, show_default=True, help="gRPC address of a running server.")
@click.option("--token-file", type=_PEM, help="File holding the bearer token (default $FDB_LEADERBOARD_TOKEN).")
@click.option("--ca", type=_PEM, help="Use TLS, verifying the server's certificate with this CA (PEM).")
@click.option("--cert", type=_PEM, help="Client certificate (PEM), for a server with mutual TLS.")
@click.option("--key", type=_PEM, help="Client certificate's key (PEM).")
@click.option("-v", "--verbose", is_flag=True, help="Log more.")
@click.pass_context
def main(
    ctx: click.Context,
    server: str,
    token_file: str | None,
    ca: str | None,
    cert: str | None,
    key: str | None,
    verbose: bool,
) -> None:
    """Time-windowed leaderboards over FoundationDB or an embedded store."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    if (cert is None) != (key is None):
        raise click.UsageError("--cert and --key go together")
    ctx.obj = {"server": server, "access": {"token": _read_token(token_file), "ca": ca, "cert": cert, "key": key}}


@main.command()
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
@click.option("--tls-cert", type=_PEM, help="Serve TLS with this certificate chain (PEM).")
@click.option("--tls-key", type=_PEM, help="The TLS certificate's key (PEM).")
@click.option("--client-ca", type=_PEM, help="Require client certificates signed by this CA (mutual TLS).")
@click.option(
    "--allow-unauthenticated", is_flag=True, help="Listen beyond loopback without tokens (anyone reaching it is admin)."
)
@click.option("--health/--no-health", default=True, show_default=True, help="Serve grpc.health.v1 (no token needed).")
@click.option("--reflection/--no-reflection", default=True, show_default=True, help="Serve gRPC reflection.")
@click.option("--max-page", default=DEFAULT_MAX_PAGE, show_default=True, help="Most rows per Top/AroundMe/Scan.")
@click.option("--max-calls", default=4096, show_default=True, help="Concurrent calls before RESOURCE_EXHAUSTED.")
@click.option("--receive-timeout", default=10.0, show_default=True, help="Seconds a request may take to arrive.")
@click.option("--deadline", default=60.0, show_default=True, help="Seconds of server work for a call without one.")
@click.option(
    "--http-address",
    default=DEFAULT_HTTP_ADDRESS,
    show_default=True,
    help="Address of the HTTP/JSON API, the page and /metrics, with the same tokens and TLS ('off': none).",
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
    receive_timeout: float,
    deadline: float,
    http_address: str,
) -> None:
    """Start the gRPC service and its HTTP front end (embedded store in ./data by default).

    Without tokens it listens on loopback addresses only (unless --allow-unauthenticated).
    SIGTERM or Ctrl-C stops it: no new calls, in-flight ones get --grace seconds, the store is closed.
    """
    from ..http import HttpServer
    from ..service import Server, ServerSettings, StartupError, TlsFiles
    from ..service.settings import load_tokens
    from ..store import StoreError

    url = f"fdb:{cluster_file}" if cluster_file else store or DEFAULT_STORE
    try:
        if (tls_cert is None) != (tls_key is None) or (client_ca and not tls_cert):
            raise StartupError("--tls-cert and --tls-key go together (and --client-ca needs them)")
        settings = ServerSettings(
            max_page=max_page,
            max_concurrent_calls=max_calls,
            receive_timeout=receive_timeout,
            default_deadline=deadline,
            tokens=load_tokens(tokens_file),
            tls=TlsFiles(tls_cert, tls_key, client_ca) if tls_cert and tls_key else None,
            allow_unauthenticated=allow_unauthenticated,
            health=health,
            reflection=reflection,
        )
        server = Server(url, address, workers, settings=settings).start()
        try:
            http = None if http_address == "off" else HttpServer(server, http_address).start()
        except BaseException:
            server.stop(grace=0)
            raise
    except (StartupError, StoreError, ValueError) as exc:
        raise click.ClickException(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    server.stop_on_signals(grace)
    # Heavy calls are Python work holding the GIL; switch threads every 0.5 ms instead of 5 ms so a
    # point read waiting behind one is not delayed by whole 5 ms slices.
    sys.setswitchinterval(0.0005)
    access = "tokens" if settings.tokens is not None else "no authentication"
    click.echo(
        f"fdb-leaderboard serving on {server.address}{f' and {http.url}' if http else ''} "
        f"({'TLS' if settings.tls else 'plaintext'}, {access}; store {url}); Ctrl-C stops it"
    )
    server.wait()
    click.echo("fdb-leaderboard stopped; store closed")


# -- indexes ----------------------------------------------------------------------------------


@main.group()
def index() -> None:
    """Create and list indexes."""


@index.command("create")
@click.argument("name")
@click.option("--aggregation", type=click.Choice(["BEST", "SUM", "LATEST"]), default="BEST", show_default=True)
@click.option("--hash", "hash_function", type=click.Choice(["MURMUR3", "JDK", "CRC"]), default="MURMUR3")
@click.option("--group-size", default=0, show_default=True)
@click.option("--context-size", default=0, show_default=True)
@click.option("--high-score-first/--low-score-first", default=True, show_default=True)
@click.option("--score-type", type=click.Choice(["INT", "DOUBLE"]), default="INT", show_default=True)
@click.option("--reference-layout", is_flag=True, help="Ranked sets exactly as the Record Layer lays them out.")
@click.pass_context
@_fail_on_rpc_error
def index_create(
    ctx: click.Context,
    name: str,
    aggregation: str,
    hash_function: str,
    group_size: int,
    context_size: int,
    high_score_first: bool,
    score_type: str,
    reference_layout: bool,
) -> None:
    """Create index NAME (no error if it exists with the same options)."""
    with _client(ctx) as client:
        created = client.create_index(
            name,
            aggregation,
            hash_function,
            group_size,
            context_size,
            high_score_first,
            reference_layout,
            score_type=score_type,
        )
    click.echo(f"index {name} {'created' if created else 'already exists with these options'}")


@index.command("list")
@click.pass_context
@_fail_on_rpc_error
def index_list(ctx: click.Context) -> None:
    with _client(ctx) as client:
        for info in client.list_indexes():
            options = info.options
            aggregation, hash_name = pb.Aggregation.Name(options.aggregation), pb.RankHash.Name(options.hash_function)
            click.echo(
                f"{info.name}: {aggregation}, hash {hash_name}, "
                f"group size {options.group_size}, context size {options.context_size}, "
                f"{'high' if options.high_score_first else 'low'} score first"
            )


# -- windows ----------------------------------------------------------------------------------


@main.group()
def windows() -> None:
    """Apply window-update specifications and show the directory."""


@windows.command("apply")
@click.argument("name")
@click.argument("spec_file", type=click.Path(exists=True, dir_okay=False))
@click.pass_context
@_fail_on_rpc_error
def windows_apply(ctx: click.Context, name: str, spec_file: str) -> None:
    """Apply SPEC_FILE (YAML or JSON; see the README) to index NAME."""
    from ..errors import InvalidArgument
    from .spec_file import load_window_update

    try:
        update = load_window_update(spec_file)
    except InvalidArgument as exc:
        raise click.ClickException(str(exc)) from None
    with _client(ctx) as client:
        result = client.update_windows(
            name,
            specs=[(s.type, s.base, s.increment, s.duration, s.count) for s in update.specs],
            windows=list(update.windows),
            high_score_first=update.high_score_first,
            all_time=update.all_time,
            delete_before=update.delete_before,
            update_timestamp=update.update_timestamp,
            nlevels=update.nlevels,
            rebuild=update.rebuild.value,
        )
    click.echo(f"added {len(result.added)}, deleted {len(result.deleted)}, filling {len(result.filling)}")
    for window in result.added:
        click.echo(_window_line(window))
    if result.filling:
        click.echo(f"run `fdb-leaderboard fill {name}` to fill the new windows from stored scores")


@windows.command("show")
@click.argument("name")
@click.pass_context
@_fail_on_rpc_error
def windows_show(ctx: click.Context, name: str) -> None:
    with _client(ctx) as client:
        listing = client.list_windows(name)
        subs = client.sub_directories(name)
    if not listing.exists:
        click.echo(f"{name}: no window update yet")
        return
    click.echo(f"{name}: {'high' if listing.high_score_first else 'low'} score first, {len(listing.windows)} windows")
    for window in listing.windows:
        click.echo(_window_line(window))
    if listing.HasField("latest_timestamp"):
        click.echo(f"latest indexed timestamp: {listing.latest_timestamp}")
    if listing.HasField("trimmed_before"):
        click.echo(f"entries trimmed before: {listing.trimmed_before}")
    for group, hsf in subs.items():
        click.echo(f"sub-directory {group!r}: {'high' if hsf else 'low'} score first")


@main.command("subdir")
@click.argument("name")
@click.argument("group", nargs=-1, required=True)
@click.option("--high-score-first/--low-score-first", required=True)
@click.option("--int-group", is_flag=True, help="Parse GROUP elements as integers.")
@click.pass_context
@_fail_on_rpc_error
def subdir(ctx: click.Context, name: str, group: tuple[str, ...], high_score_first: bool, int_group: bool) -> None:
    """Set a group's score direction (only before it has scores)."""
    values = tuple(int(g) for g in group) if int_group else group
    with _client(ctx) as client:
        client.save_sub_directory(name, values, high_score_first)
    click.echo(f"group {values!r} of {name}: {'high' if high_score_first else 'low'} score first")


@main.command()
@click.argument("name")
@click.option("--before", type=int, required=True, help="Delete windows ending at or before this time.")
@click.pass_context
@_fail_on_rpc_error
def expire(ctx: click.Context, name: str, before: int) -> None:
    """Delete old windows and all their data."""
    with _client(ctx) as client:
        gone = client.expire(name, before)
    click.echo(f"deleted {len(gone)} window(s)")
    for window in gone:
        click.echo(_window_line(window))


@main.command("keep-ahead")
@click.argument("name")
@click.option("--now", type=int, default=None, help="Current time (default: the clock, in seconds).")
@click.pass_context
@_fail_on_rpc_error
def keep_ahead(ctx: click.Context, name: str, now: int | None) -> None:
    """Add the windows the index's maintenance policy needs soon."""
    with _client(ctx) as client:
        added = client.keep_ahead(name, int(time.time()) if now is None else now)
    click.echo(f"added {len(added)} window(s)")
    for window in added:
        click.echo(_window_line(window))


@main.command()
@click.argument("name")
@click.option("--before", type=int, required=True, help="Trim entries before this time.")
@click.pass_context
@_fail_on_rpc_error
def trim(ctx: click.Context, name: str, before: int) -> None:
    """Drop entries no window depends on (windows starting earlier can no longer be added)."""
    with _client(ctx) as client:
        removed = client.trim(name, before)
    click.echo(f"removed {removed} entries")


@main.command()
@click.argument("name")
@click.option("--batch", default=200, show_default=True, help="Records per transaction.")
@click.pass_context
@_fail_on_rpc_error
def fill(ctx: click.Context, name: str, batch: int) -> None:
    """Fill new windows from stored records, batch by batch (interrupt and rerun to resume)."""
    ranked = 0
    with _client(ctx) as client, tqdm(unit=" records", desc=f"filling {name}") as bar:
        while True:
            step = client.fill(name, max_records=batch, max_batches=1)
            bar.update(step.records_processed)
            if step.entries_ranked:  # phase 2: ranked sets built from the primary B-trees
                ranked += step.entries_ranked
                bar.set_postfix(entries_ranked=ranked)
            if step.done:
                break
    click.echo("every window is complete")


@main.command()
@click.argument("name")
@click.argument("source", type=click.File("r"))
@click.option("--batch", default=500, show_default=True, help="Records per transaction.")
@click.option(
    "--rank-as-loaded",
    is_flag=True,
    help="Keep every ranked set current record by record, instead of building those of empty windows at the end.",
)
@click.pass_context
@_fail_on_rpc_error
def load(ctx: click.Context, name: str, source: Any, batch: int, rank_as_loaded: bool) -> None:
    """Load records from a JSON-lines file (- for stdin); each line replaces one record.

    A line looks like {"pk": ["alice"], "entries": [{"score": 1200, "timestamp": 1763900000}]};
    entries may add "context" and "group" lists.  Rerunning a load is harmless.
    """
    bad_line: RecordsFileError | None = None

    def records() -> Iterator[Record]:
        nonlocal bad_line
        try:
            yield from read_records(source)
        except RecordsFileError as exc:  # end the stream: what came before is loaded
            bad_line = exc

    with _client(ctx) as client, tqdm(unit=" records", desc=f"loading {name}") as bar:
        written = client.bulk_load(
            name, records(), batch, rank_as_loaded, progress=lambda sent: bar.update(sent - bar.n)
        )
    if bad_line is not None:
        raise click.ClickException(f"{source.name}: {bad_line}; the {written} records before it were loaded")
    click.echo(f"loaded {written} records into {name}")


@main.command()
@click.argument("name")
@click.option("--max-problems", default=100, show_default=True)
@click.pass_context
@_fail_on_rpc_error
def verify(ctx: click.Context, name: str, max_problems: int) -> None:
    """Recompute every window from the records and compare with the B-tree and ranked sets."""
    with _client(ctx) as client:
        report = client.verify_report(name, max_problems, timeout=24 * 3600)
    for problem in report.problems:
        click.echo(problem)
    checked = (
        f"checked {report.records} records, {report.entries} B-tree entries, {report.elements} ranked-set "
        f"elements and {report.ranked_sets} ranked sets in {report.windows} windows ({report.batches} batches)"
    )
    click.echo(checked if report.complete else f"stopped by the server's deadline after it {checked}")
    if report.problems:
        raise click.ClickException(f"{len(report.problems)} problem(s) found in {name}")
    if not report.complete:
        raise click.ClickException(f"{name}: the check did not finish (raise the server's --deadline)")
    click.echo(f"{name}: every window matches the records")


@main.command()
@click.option("--every", default="60s", show_default=True, help="Interval between passes (e.g. 30s, 5m).")
@click.option("--once", is_flag=True, help="Run one pass and exit.")
@click.option("--now", type=int, default=None, help="Use this time instead of the clock (testing).")
@click.pass_context
def maintain(ctx: click.Context, every: str, once: bool, now: int | None) -> None:
    """Keep windows ahead and expire old ones, per each index's maintenance policy."""
    interval = _parse_duration(every)
    with _client(ctx) as client:
        while True:
            moment = int(time.time()) if now is None else now
            for line in maintenance_pass(client, moment):
                click.echo(line)
            if once:
                return
            time.sleep(interval)


main.add_command(demo)
