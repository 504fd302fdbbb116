"""How a command fails: :class:`CliGroup` turns any error (a gRPC status, a bad file, a store that cannot
open) into one line and an exit status (2 for usage mistakes), explains a server that cannot be
reached, and takes ``-v`` anywhere; warnings as one line."""

from __future__ import annotations

import logging
import os
import re
import socket
import ssl
import sys
import warnings
from typing import Any

import click
import grpc

from ..errors import LeaderboardError, NoWindowsWarning
from ..store import StoreError
from .options import DEFAULT_SERVER

START_A_SERVER = (
    "start one with `fdb-leaderboard serve` (or ./tools/serve), or point at one with "
    "--server HOST:PORT or $FDB_LEADERBOARD_SERVER"
)

log = logging.getLogger("fdb_leaderboard.cli")


def _host_port(address: str) -> tuple[str, int] | None:
    """The host and port of a ``HOST:PORT`` gRPC address (None for unix sockets and other schemes)."""
    match = re.fullmatch(r"(?:dns:(?:///)?|ipv4:|ipv6:)?\[?([^\[\]]+?)\]?:(\d+)", address)
    return (match.group(1), int(match.group(2))) if match else None


def speaks_tls(address: str, timeout: float = 2.0) -> bool:
    """Whether the server at ``address`` answers a TLS handshake (certificate not checked)."""
    where = _host_port(address)
    if where is None:
        return False
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    try:
        with socket.create_connection(where, timeout=timeout) as sock, context.wrap_socket(sock):
            return True
    except (OSError, ssl.SSLError):
        return False


# What gRPC itself says when it found no server to send a call to (the transport's words, not a
# server's): only these UNAVAILABLE statuses mean the server was not reached.
_TRANSPORT_FAILURES = (
    "failed to connect to all addresses",
    "connections to all backends failing",
    "dns resolution failed",
    "name resolution failure",
    "socket closed",
    "connection reset",
    "broken pipe",
    "keepalive watchdog timeout",
)

_HOSTNAME_MISMATCH = ("hostname verification check failed", "peer name", "not in peer certificate")


def rpc_error_message(exc: grpc.RpcError, server: str, timeout: float | None, tls: bool = False) -> str:
    """One line for a failed call; ``tls``: whether the command used TLS (``--ca`` or ``--cert``).

    An UNAVAILABLE status that the server itself answered (an index whose writes are paused or
    that moved elsewhere) is its message, as any other status is; only a connection refused
    means no server runs there, and only then is the advice to start one."""
    code, details = exc.code(), exc.details() or ""  # type: ignore[attr-defined]
    lowered = details.lower()
    if code == grpc.StatusCode.UNAVAILABLE and any(words in lowered for words in _TRANSPORT_FAILURES):
        if tls and any(words in lowered for words in _HOSTNAME_MISMATCH):
            host = _host_port(server)
            name = host[0] if host else server
            return (
                f"TLS: the certificate of the server at {server} is not made out to {name}: reach it by a "
                "name its certificate holds (--server NAME:PORT)"
            )
        if tls and ("wrong_version_number" in lowered or "handshake failed" in lowered):
            if "certificate_verify_failed" in lowered or "certificate verify failed" in lowered:
                return f"TLS: the certificate of the server at {server} is not signed by the CA given with --ca"
            return f"the server at {server} does not speak TLS: leave out --ca (or serve it with --tls-cert/--tls-key)"
        if "refused" in lowered:
            return f"cannot reach a server at {server} (connection refused): {START_A_SERVER}"
        if not tls and speaks_tls(server):
            return f"the server at {server} speaks TLS: give the CA that signed its certificate with --ca FILE"
        reason = details.split("\n")[0]
        return f"cannot reach the server at {server} ({reason}): check --server HOST:PORT or $FDB_LEADERBOARD_SERVER"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        limit = f"within {timeout:g} s" if timeout else "in time"
        return f"DEADLINE_EXCEEDED: the server at {server} did not answer {limit}; give a longer --timeout"
    return f"{code.name}: {details}"


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _set_verbose(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        root = ctx.find_root()
        if isinstance(root.obj, dict):
            root.obj["verbose"] = True
        logging.getLogger().setLevel(logging.INFO)
        log.setLevel(logging.DEBUG)


def verbose_option() -> click.Option:
    return click.Option(
        ["-v", "--verbose"],
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=_set_verbose,
        help="Log more, and show tracebacks of unexpected errors.",
    )


def _with_verbose(command: click.Command) -> click.Command:
    """``command`` (and every command under it) taking ``-v`` after its name too."""
    if not any(param.name == "verbose" for param in command.params):
        command.params.append(verbose_option())
    for sub in getattr(command, "commands", {}).values():
        _with_verbose(sub)
    return command


class CliGroup(click.Group):
    """The top-level group: any error a command raises ends the process with one line and exit 1.

    Usage mistakes (a bad option value, a missing argument) are one line too, with exit 2.  A
    closed pipe (``| head``) ends it without a word and exit 0: the reader had what it wanted, as
    with any Unix filter.  Every command
    takes ``-v`` after its name as well as before it.
    """

    # Former names of commands, still taken (not listed): the API's names are the commands'.
    ALIASES = {"score-at-percentile": "score-for-percentile"}

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, self.ALIASES.get(cmd_name, cmd_name))
        return None if command is None else _with_verbose(command)

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            result = super().main(*args, standalone_mode=False, **kwargs)
        except click.UsageError as exc:
            where = f" (see {exc.ctx.command_path} --help)" if exc.ctx is not None else ""
            click.echo(f"Error: {one_line(exc.format_message())}{where}", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            click.echo("Aborted.", err=True)
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:  # the reader is gone (| head): stop writing, quietly, successfully
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # so the flush at exit finds nowhere to fail
            raise click.exceptions.Exit(0) from None
        except grpc.RpcError as exc:
            obj = ctx.obj or {}
            access = obj.get("access", {})
            tls = bool(access.get("ca") or access.get("cert"))
            message = rpc_error_message(exc, obj.get("server", DEFAULT_SERVER), obj.get("timeout"), tls)
            raise click.ClickException(message) from None
        except (LeaderboardError, StoreError, OSError, ValueError) as exc:
            if log.isEnabledFor(logging.DEBUG):
                log.exception("command failed")
            raise click.ClickException(one_line(exc)) from None
        except Exception as exc:  # a defect: still one line, with the way to see more
            if (ctx.obj or {}).get("verbose"):
                raise
            raise click.ClickException(
                f"unexpected {type(exc).__name__}: {one_line(exc)} (run with -v for the traceback)"
            ) from None


def show_warnings_briefly() -> None:
    """Show warnings (e.g. a score ranked in no window) as ``warning: ...`` on stderr."""

    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        click.echo(f"warning: {message}", err=True)

    warnings.showwarning = show  # type: ignore[assignment]
    warnings.simplefilter("always", NoWindowsWarning)  # the product's own; others keep their filters
