"""``fdb-leaderboard``: run the service, administer indexes, run maintenance, see a demo.

Commands that talk to a running server (``--server``, default ``$FDB_LEADERBOARD_SERVER`` or
127.0.0.1:50051) take ``--timeout`` and ``--json`` (see ``session.py``), and reach it with a bearer
token (``--token-file``, or ``$FDB_LEADERBOARD_TOKEN``) and, over TLS, the server's CA (``--ca``;
``--cert``/``--key`` for mutual TLS).  Times are what people type (``now``, a timestamp in the
index's timebase, a date; see ``options.parse_time``).  This module holds the group (its options:
the server, the token, TLS, staleness, -v) and registers every command, each in the module of its
concern (``serve.py``, ``indexes.py``, ``reads.py``...).
"""

from __future__ import annotations

import getpass
import logging
import os

import click

from .. import formats
from ..service.settings import MAX_STALENESS_MS
from . import audit, dump_and_move, fair_play, indexes, players, upgrades, window_ends
from .demo import demo
from .export import export
from .failures import CliGroup, show_warnings_briefly
from .loading import load
from .maintenance import maintain, policy
from .options import DEFAULT_SERVER, PEM_FILE
from .reads import around, count, rank, top, watch
from .serve import DEFAULT_STORE, serve
from .writes import add, delete


def local_user() -> str | None:
    """The local user's name, which the CLI sends: a server without tokens records it as who acted."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no user name in this environment
        return None


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


@click.group(cls=CliGroup)
@click.version_option(formats.RELEASE, message=formats.version_text())
@click.option("--server", default=DEFAULT_SERVER, show_default=True, help="gRPC address of a running server.")
@click.option("--token-file", type=PEM_FILE, help="File holding the bearer token (default $FDB_LEADERBOARD_TOKEN).")
@click.option("--ca", type=PEM_FILE, help="Use TLS, verifying the server's certificate with this CA (PEM).")
@click.option("--cert", type=PEM_FILE, help="Client certificate (PEM), for a server with mutual TLS.")
@click.option("--key", type=PEM_FILE, help="Client certificate's key (PEM).")
@click.option(
    "--max-staleness",
    default=0,
    show_default=True,
    type=click.IntRange(0, MAX_STALENESS_MS),
    help="Milliseconds reads may lag behind the latest writes (0: exact; see docs/foundationdb.md).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log more, and show tracebacks of unexpected errors.")
@click.pass_context
def main(
    ctx: click.Context,
    server: str,
    token_file: str | None,
    ca: str | None,
    cert: str | None,
    key: str | None,
    max_staleness: int,
    verbose: bool,
) -> None:
    """Time-windowed leaderboards over FoundationDB or an embedded store.

    Shell completion: eval "$(_FDB_LEADERBOARD_COMPLETE=bash_source fdb-leaderboard)"
    (zsh_source and fish_source for those shells).
    """
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    if verbose:
        logging.getLogger("fdb_leaderboard.cli").setLevel(logging.DEBUG)
    if (cert is None) != (key is None):
        raise click.UsageError("--cert and --key go together")
    show_warnings_briefly()
    access = {
        "token": _read_token(token_file),
        "ca": ca,
        "cert": cert,
        "key": key,
        "user": local_user(),
        "max_staleness": max_staleness,
    }
    ctx.obj = {"server": server, "verbose": verbose, "access": access}


for command in (
    serve,
    indexes.index,
    indexes.windows,
    *indexes.COMMANDS,
    top,
    rank,
    watch,
    around,
    count,
    add,
    delete,
    load,
    export,
    maintain,
    policy,
    demo,
    *players.COMMANDS,
    *fair_play.COMMANDS,
    *audit.COMMANDS,
    window_ends.webhook,
    window_ends.window_ends,
    upgrades.store,
):
    main.add_command(command)


for command in dump_and_move.COMMANDS:
    main.add_command(command)


for command in (*dump_and_move.INDEX_COMMANDS, upgrades.index_upgrade):
    indexes.index.add_command(command)

__all__ = ["DEFAULT_STORE", "local_user", "main"]
