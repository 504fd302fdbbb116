"""Maintenance: one pass over a server's indexes (keep windows ahead, fill, expire), the
``maintain`` job that repeats it and survives server restarts, and ``policy`` to set what
each index's pass does (regular windows and calendar periods kept ahead, retention).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import signal
import threading
import time
from collections.abc import Iterator

import click
import grpc

from ..client import LeaderboardClient
from ..index.calendar import PERIODS, TIMEBASES
from ..index.idempotency import DEFAULT_RETENTION
from ..proto import service_pb2 as pb
from .options import DURATION
from .output import plural, show_duration
from .session import Session, server_command
from .spec_file import parse_maintenance

# The server is gone (restarting, or not yet up): retry the whole pass, which is idempotent.
_SERVER_GONE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
NO_POLICY = (
    "nothing to do: no index has a maintenance policy "
    "(set one with `fdb-leaderboard policy set` or a window-update file's maintenance section)"
)


def _has_policy(policy: pb.MaintenancePolicy) -> bool:
    return bool(policy.windows or policy.calendar or policy.retain)


def maintenance_pass(client: LeaderboardClient, clock: float) -> list[str]:
    """One pass over every index: keep ahead and expire per its policy, finish any window still
    filling (whatever the policy), notice windows that ended (their window-end events) and
    forget idempotency keys past their retention.  Safe to run
    anywhere, and beside the server's own background maintenance.

    ``clock`` is the time in seconds; each index's policy says its timebase.  Audit events past
    the trail's retention are cleared too.  Returns what was done, or one "nothing to do" line.
    An index's own error is reported as a line; the server going away (UNAVAILABLE,
    DEADLINE_EXCEEDED) raises, to retry the pass.
    """
    report = []
    checked = 0
    for info in client.list_indexes():
        if info.writes_paused:  # moved elsewhere (or a dump finishing): left alone
            continue
        policy = info.maintenance
        has_policy = _has_policy(policy)
        checked += has_policy
        now = int(clock * TIMEBASES.get(policy.timebase or "seconds", 1))
        try:
            if policy.windows or policy.calendar:
                added = client.keep_ahead(info.name, now)
                if added:
                    report.append(f"{info.name}: added {plural(len(added), 'window')}")
            # A window added over stored scores (e.g. today's, when the job was not running), or
            # one a crashed bulk load or fill left, is not served until filled: finish it.
            if any(window.filling for window in client.list_windows(info.name).windows):
                step = client.fill(info.name)
                state = "filled" if step.done else "still filling"
                report.append(f"{info.name}: {state} windows from {plural(step.records_processed, 'record')}")
            if policy.retain:
                gone = client.expire(info.name, now - policy.retain)
                if gone:
                    report.append(f"{info.name}: expired {plural(len(gone), 'window')}")
            if not info.options.group_size:  # grouped indexes have no window-end events
                noticed = client.notice_window_ends(info.name, now)
                if noticed.windows:
                    report.append(
                        f"{info.name}: noticed {plural(len(noticed.windows), 'ended window')}, "
                        f"{plural(noticed.events, 'webhook event')}"
                    )
            forgotten = client.expire_idempotency_keys(info.name)
            if forgotten:
                report.append(f"{info.name}: forgot {plural(forgotten, 'idempotency key')} past their retention")
        except grpc.RpcError as exc:
            if exc.code() in _SERVER_GONE:
                raise
            report.append(f"{info.name}: {exc.code().name}: {exc.details()}")
    try:
        cleared = client.expire_audit_events()
        if cleared:
            report.append(f"audit trail: cleared {plural(cleared, 'event')} past its retention")
    except grpc.RpcError as exc:
        if exc.code() in _SERVER_GONE:
            raise
        report.append(f"audit trail: {exc.code().name}: {exc.details()}")
    if not report:
        indexes = f"{checked} index{'' if checked == 1 else 'es'}"
        report.append(f"nothing to do: {indexes} with a maintenance policy checked" if checked else NO_POLICY)
    return report


@server_command(name="maintain")
@click.option("--every", default="60s", type=DURATION, show_default=True, help="Interval between passes (30s, 5m...).")
@click.option("--once", is_flag=True, help="Run one pass, say what it did, and exit.")
@click.option("--now", type=int, default=None, help="Use this time (in seconds) instead of the clock (testing).")
@click.option("--passes", type=int, default=0, hidden=True, help="Stop after this many passes (testing).")
@click.option("--max-backoff", default="60s", type=DURATION, show_default=True, help="Longest wait between retries.")
def maintain(session: Session, every: float, once: bool, now: int | None, passes: int, max_backoff: float) -> None:
    """Keep windows ahead, fill and expire them, per each index's maintenance policy.

    Without --once it runs until stopped; when the server goes away it retries with growing
    waits (up to --max-backoff), saying so, and carries on when the server is back.  SIGTERM
    (a supervisor stopping it) lets a pass under way finish and report what it did first.
    """
    done = 0
    delay = min(1.0, max_backoff)
    down_since: float | None = None
    with _stopped_by_sigterm() as stop:
        while True:
            stop.working = True
            try:
                lines = maintenance_pass(session.client, time.time() if now is None else now)
            except grpc.RpcError as exc:
                if once or exc.code() not in _SERVER_GONE:
                    raise
                if down_since is None:
                    down_since = time.monotonic()
                session.note(f"{_stamp()}{session.error_message(exc)}")
                session.note(f"{_stamp()}retrying in {delay:g} s")
                stop.idle()
                time.sleep(delay)
                delay = min(delay * 2, max_backoff)
                continue
            if down_since is not None:
                back = time.monotonic() - down_since
                session.note(f"{_stamp()}server at {session.server} is back after {back:.0f} s")
                down_since, delay = None, min(1.0, max_backoff)
            for line in lines:
                if once or not line.startswith("nothing to do"):
                    session.emit({"line": line}, f"{'' if once else _stamp()}{line}")
            done += 1
            if once or (passes and done >= passes):
                return
            stop.idle()
            time.sleep(every)


class _Stopped(Exception):
    """SIGTERM between passes."""


class _SigtermStop:
    """SIGTERM ends the job between passes at once, and a pass under way once it has reported what
    it did (a window it added would otherwise go unreported)."""

    def __init__(self) -> None:
        self.working = False
        self.asked = False

    def handle(self, *_: object) -> None:
        self.asked = True
        if not self.working:
            raise _Stopped

    def idle(self) -> None:
        """Between passes from now on: stop now if asked during the pass."""
        self.working = False
        if self.asked:
            raise _Stopped


@contextlib.contextmanager
def _stopped_by_sigterm() -> Iterator[_SigtermStop]:
    """The job's SIGTERM handling, in the main thread (where Python runs signal handlers)."""
    stop = _SigtermStop()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = signal.signal(signal.SIGTERM, stop.handle)
    try:
        yield stop
    except _Stopped:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stamp() -> str:
    return dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S ")


# -- policies ----------------------------------------------------------------------------------------


@click.group()
def policy() -> None:
    """Show and set an index's maintenance policy (what `maintain` keeps ahead and expires)."""


def _policy_lines(name: str, policy: pb.MaintenancePolicy) -> list[str]:
    """The policy as people read it, lengths as they type them (``2d``, ``90m``)."""
    retention = show_duration(policy.idempotency_retention or DEFAULT_RETENTION)
    kept = f"writes' idempotency keys kept {retention}"
    if not _has_policy(policy):
        return [f"{name}: no maintenance policy; {kept}"]
    timebase = policy.timebase or "seconds"

    def length(value: int) -> str:
        return show_duration(value, timebase)

    lines = [
        f"{name}: keep windows starting within {length(policy.horizon)} ahead "
        f"(certain within {length(policy.certain_within)}); "
        + (f"expire windows ended {length(policy.retain)} ago" if policy.retain else "keep old windows")
        + f"; {kept}"
        + ("; times in milliseconds" if timebase == "milliseconds" else "")
    ]
    lines.extend(
        f"  type {w.type}: every {length(w.increment)} from {w.base}, lasting {length(w.duration)}"
        for w in policy.windows
    )
    lines.extend(f"  type {c.type}: {c.period} in {c.timezone or 'UTC'}" for c in policy.calendar)
    return lines


def _policy_json(policy: pb.MaintenancePolicy) -> dict[str, object]:
    return {
        "horizon": policy.horizon,
        "certain_within": policy.certain_within,
        "retain": policy.retain,
        "timebase": policy.timebase or "seconds",
        "idempotency_retention": policy.idempotency_retention or DEFAULT_RETENTION,
        "regular": [
            {"type": w.type, "base": w.base, "increment": w.increment, "duration": w.duration} for w in policy.windows
        ],
        "calendar": [{"type": c.type, "period": c.period, "timezone": c.timezone or "UTC"} for c in policy.calendar],
    }


@server_command(policy, "show")
@click.argument("name")
def policy_show(session: Session, name: str) -> None:
    """Show the maintenance policy of index NAME."""
    found = {info.name: info.maintenance for info in session.client.list_indexes()}
    if name not in found:
        raise click.ClickException(f"NOT_FOUND: no index named {name!r}")
    session.emit(_policy_json(found[name]), _policy_lines(name, found[name]))


def _split(text: str, parts: int, what: str, example: str) -> list[str]:
    fields = text.split(":", parts - 1)
    if len(fields) < parts - 1 or not fields[0].isdigit():
        raise click.BadParameter(f"{what} {text!r}: expected {example}")
    return fields


@server_command(policy, "set")
@click.argument("name")
@click.option(
    "--calendar",
    "calendar",
    multiple=True,
    metavar="TYPE:PERIOD[:TIMEZONE]",
    help=f"Keep calendar periods of TYPE ahead ({', '.join(PERIODS)}), e.g. 1:daily:Europe/Paris.",
)
@click.option(
    "--regular",
    "regular",
    multiple=True,
    metavar="TYPE:BASE:INCREMENT:DURATION",
    help="Keep fixed-length windows ahead, e.g. 4:0:1h:1h.",
)
@click.option("--horizon", default="2d", show_default=True, help="Add windows starting within this.")
@click.option("--certain-within", default="1d", show_default=True, help="Always add those starting within this.")
@click.option("--retain", default="0", show_default=True, help="Expire windows ended this long ago (0: never).")
@click.option(
    "--timebase",
    type=click.Choice(sorted(TIMEBASES)),
    default="seconds",
    show_default=True,
    help="The unit of the index's timestamps.",
)
@click.option(
    "--idempotency-retention",
    default="24h",
    show_default=True,
    help="Keep writes' idempotency keys this long (a repeat within it is applied once).",
)
def policy_set(
    session: Session,
    name: str,
    calendar: tuple[str, ...],
    regular: tuple[str, ...],
    horizon: str,
    certain_within: str,
    retain: str,
    timebase: str,
    idempotency_retention: str,
) -> None:
    """Set the maintenance policy of index NAME (replacing it).

    Lengths are integers in the timebase or take a unit: 90s, 5m, 2h, 1d, 1w.
    """
    section: dict[str, object] = {
        "horizon": horizon,
        "certain_within": certain_within,
        "retain": retain,
        "idempotency_retention": idempotency_retention,
    }
    entries = []
    for text in calendar:
        fields = _split(text, 3, "--calendar", "TYPE:PERIOD[:TIMEZONE] such as 1:daily:Europe/Paris")
        entries.append(
            {"type": int(fields[0]), "period": fields[1], "timezone": fields[2] if len(fields) > 2 else "UTC"}
        )
    section["calendar"] = entries
    windows = []
    for text in regular:
        fields = _split(text, 4, "--regular", "TYPE:BASE:INCREMENT:DURATION such as 4:0:1h:1h")
        if len(fields) != 4:
            raise click.BadParameter(f"--regular {text!r}: expected TYPE:BASE:INCREMENT:DURATION such as 4:0:1h:1h")
        windows.append({"type": int(fields[0]), "base": fields[1], "increment": fields[2], "duration": fields[3]})
    section["regular"] = windows
    maintenance = parse_maintenance(section, timebase)
    session.client.set_maintenance(name, maintenance)
    session.emit(_policy_json(maintenance), _policy_lines(name, maintenance))


@server_command(policy, "clear")
@click.argument("name")
def policy_clear(session: Session, name: str) -> None:
    """Remove the maintenance policy of index NAME (`maintain` then leaves it alone)."""
    session.client.set_maintenance(name, pb.MaintenancePolicy())
    session.emit({"index": name, "cleared": True}, f"{name}: no maintenance policy")
