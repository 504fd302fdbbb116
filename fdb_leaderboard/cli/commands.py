"""``fdb-leaderboard``: run the service, administer indexes, run maintenance, see a demo.

Admin commands talk to a running server (``--server``, default ``$FDB_LEADERBOARD_SERVER``
or 127.0.0.1:50051).  Times are integers in the index's timebase (seconds by default).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import click
import grpc
from tqdm import tqdm

from ..client import LeaderboardClient
from ..proto import service_pb2 as pb
from .demo import demo
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
    return LeaderboardClient(ctx.obj["server"])


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


@click.group()
@click.option("--server", default=DEFAULT_SERVER, show_default=True, help="gRPC address of a running server.")
@click.option("-v", "--verbose", is_flag=True, help="Log more.")
@click.pass_context
def main(ctx: click.Context, server: str, verbose: bool) -> None:
    """Time-windowed leaderboards over FoundationDB or an embedded store."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    ctx.obj = {"server": server}


@main.command()
@click.option("--store", default=None, help=f"Store URL (default {DEFAULT_STORE}).")
@click.option("--cluster-file", default=None, help="Use FoundationDB with this cluster file instead.")
@click.option("--address", default="127.0.0.1:50051", show_default=True, help="Address to listen on.")
@click.option("--workers", default=16, show_default=True, help="Server threads.")
@click.option("--grace", default=10.0, show_default=True, help="Seconds in-flight calls get at shutdown.")
@click.option(
    "--processes",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Server processes sharing the address (Python serves about one core per process).",
)
def serve(
    store: str | None, cluster_file: str | None, address: str, workers: int, grace: float, processes: int
) -> None:
    """Start the gRPC service (embedded store in ./data by default)."""
    from ..service import Server, Supervisor

    url = f"fdb:{cluster_file}" if cluster_file else store or DEFAULT_STORE
    if processes > 1:
        group = Supervisor(url, address, processes, workers, grace).start()
        group.stop_on_signals()
        click.echo(
            f"fdb-leaderboard serving on {group.address} with {processes} processes (store {url}); Ctrl-C stops it"
        )
        raise SystemExit(group.wait())
    server = Server(url, address, workers).start()
    server.stop_on_signals(grace)
    click.echo(f"fdb-leaderboard serving on {server.address} (store {url}); Ctrl-C stops it")
    server.wait()


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
        problems = client.verify(name, max_problems)
    for problem in problems:
        click.echo(problem)
    if problems:
        raise click.ClickException(f"{len(problems)} problem(s) found in {name}")
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
