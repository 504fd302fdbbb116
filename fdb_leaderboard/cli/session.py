"""A command's connection to the server: :func:`server_command` (``--timeout``, ``--json``, ``--server``
after the command's name) and the :class:`Session` it hands the command (its client and its output).

A command that talks to the server is declared with :func:`server_command`; it receives a
:class:`Session` (its client, made with the command's ``--timeout``, and its output) and returns
nothing: what it shows goes through ``session.emit``."""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from collections.abc import Callable, Iterable
from typing import Any

import click
import grpc

from ..client import LeaderboardClient
from ..proto import service_pb2 as pb
from .failures import rpc_error_message
from .options import DURATION, TimeSpec, time_in
from .output import json_value

DEFAULT_TIMEOUT = 30.0


@dataclasses.dataclass
class Session:
    """One command's connection and output: ``client`` (made on first use) and ``emit``."""

    server: str
    timeout: float | None
    json: bool
    access: dict[str, Any] = dataclasses.field(default_factory=dict)  # token and TLS files (see main)

    def __post_init__(self) -> None:
        self._client: LeaderboardClient | None = None
        self._policies: dict[str, pb.MaintenancePolicy] | None = None

    @property
    def client(self) -> LeaderboardClient:
        if self._client is None:
            self._client = LeaderboardClient(self.server, timeout=self.timeout, **self.access)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def policy(self, index: str) -> pb.MaintenancePolicy:
        """The maintenance policy of ``index`` (its timebase and time zones); NOT_FOUND if none."""
        if self._policies is None:
            self._policies = {info.name: info.maintenance for info in self.client.list_indexes()}
        if index not in self._policies:
            raise click.ClickException(f"NOT_FOUND: no index named {index!r}")
        return self._policies[index]

    def league_type(self, index: str) -> int:
        """The window type of ``index``'s leagues (a usage error if it has none)."""
        info = {info.name: info for info in self.client.list_indexes()}.get(index)
        if info is None:
            raise click.ClickException(f"NOT_FOUND: no index named {index!r}")
        if not info.options.HasField("leagues"):
            raise click.ClickException(f"FAILED_PRECONDITION: index {index!r} has no leagues")
        return info.options.leagues.window_type

    def timestamp(self, index: str, at: TimeSpec, window_type: int = 0) -> int | None:
        """``at`` as a timestamp of ``index`` (None for now: the server's clock decides)."""
        if at.is_now:
            return None
        if at.timestamp is not None:
            return at.timestamp
        if at.is_latest:
            listing = self.client.list_windows(index)
            if not listing.HasField("latest_timestamp"):
                raise click.ClickException(f"{index} has no scores yet: there is no latest time")
            return listing.latest_timestamp
        return time_in(at, self.policy(index), window_type)

    def time_of(self, index: str, at: TimeSpec) -> int:
        """``at`` as a timestamp of ``index``, now included (for writes, which carry their time)."""
        if at.is_now:
            return time_in(at, self.policy(index))
        return self.timestamp(index, at)  # type: ignore[return-value]

    def window(self, index: str, window_type: int, at: TimeSpec, group: tuple) -> dict[str, Any]:
        """The client's window and group arguments for ``--type``, ``--at`` and ``--group``."""
        timestamp = self.timestamp(index, at, window_type) if window_type else None
        return {"window_type": window_type, "timestamp": timestamp, "group": group}

    def emit(self, data: object, lines: str | Iterable[str] = ()) -> None:
        """Show ``data`` as JSON with ``--json``, else ``lines`` (a string or lines)."""
        if self.json:
            click.echo(json.dumps(data, default=json_value))
        else:
            for line in [lines] if isinstance(lines, str) else lines:
                click.echo(line)

    def note(self, line: str) -> None:
        """Progress or advice for people: on stderr, so ``--json`` output stays parseable."""
        click.echo(line, err=True)

    def error_message(self, exc: grpc.RpcError) -> str:
        """One line for a failed call of this command (see :func:`rpc_error_message`)."""
        tls = bool(self.access.get("ca") or self.access.get("cert"))
        return rpc_error_message(exc, self.server, self.timeout, tls)


def server_command(
    group: click.Group | None = None, name: str | None = None, timeout: float | None = DEFAULT_TIMEOUT, **attrs: Any
) -> Callable[[Callable[..., Any]], click.Command]:
    """Declare a command that talks to the server: adds ``--timeout``, ``--json`` and ``--server``
    (which may come after the command's name too).

    The command joins ``group`` if given (else register it with ``main.add_command``).

    The function gets ``session`` (a :class:`Session`) instead of those two options.
    ``timeout`` is the default per-call limit (None: no limit, for calls as long as their data).
    """

    def decorate(fn: Callable[..., Any]) -> click.Command:
        @functools.wraps(fn)
        def run(*args: Any, timeout: float | None, json_output: bool, server: str | None, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            root = ctx.find_root().obj
            if server is not None:  # given after the command's name
                root["server"] = server
            session = Session(root["server"], timeout or None, json_output, root.get("access", {}))
            root["timeout"] = session.timeout
            try:
                return fn(*args, session=session, **kwargs)
            finally:
                session.close()

        shown = "none" if timeout is None else f"{timeout:g}s"
        run = click.option(
            "--timeout",
            type=DURATION,
            default=timeout,
            help=f"Give up on a call after this long (e.g. 30s, 5m; 0: never) [default: {shown}].",
        )(run)
        run = click.option("--json", "json_output", is_flag=True, help="Print JSON for scripts.")(run)
        run = click.option(
            "--server",
            default=None,
            metavar="HOST:PORT",
            help="gRPC address of a running server (as before the command's name).",
        )(run)
        return (group.command if group is not None else click.command)(name, **attrs)(run)

    return decorate


def progress_bar(session: Session, **options: Any) -> Any:
    """A tqdm bar on stderr, drawn only when stderr is a terminal (and not for ``--json``)."""
    from tqdm import tqdm

    return tqdm(disable=session.json or not sys.stderr.isatty(), **options)
