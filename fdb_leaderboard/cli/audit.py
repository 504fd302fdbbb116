"""CLI commands for the audit trail: ``audit`` lists who did what and when (admin actions on
every index, a dropped index's too), ``audit-retention`` shows or sets how long events are kept.

Times are Unix seconds or dates as people type them (UTC unless they give an offset or a zone);
``--since 2h`` means two hours ago.  Both need the admin role.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import time
from zoneinfo import ZoneInfo

import click

from ..index import AuditEvent
from .options import DURATION, parse_duration, parse_time
from .output import plural, show_duration
from .session import Session, server_command


def _time_us(text: str, option: str) -> int:
    """``text`` as Unix microseconds: seconds, a date or date-time (UTC unless told), ``now``,
    or a duration ago (``2h``)."""
    try:
        return int((time.time() - parse_duration(text)) * 1_000_000)
    except ValueError:
        pass
    try:
        spec = parse_time(text)
    except ValueError as exc:
        raise click.BadParameter(f"{exc}, or a duration ago such as 2h", param_hint=option) from None
    if spec.is_now:
        return int(time.time() * 1_000_000)
    if spec.timestamp is not None:
        return spec.timestamp * 1_000_000
    if spec.when is None:
        raise click.BadParameter("give a time: seconds, a date, or a duration ago such as 2h", param_hint=option)
    when = spec.when if isinstance(spec.when, dt.datetime) else dt.datetime.combine(spec.when, dt.time())
    if when.tzinfo is None:
        when = when.replace(tzinfo=ZoneInfo(spec.zone) if spec.zone else dt.UTC)
    return int(when.timestamp() * 1_000_000)


def event_json(event: AuditEvent) -> dict[str, object]:
    return {
        "at_us": event.at_us,
        "actor": event.actor,
        "action": event.action,
        "index": event.index,
        "details": dict(sorted(event.details.items())),
    }


def event_line(event: AuditEvent) -> str:
    when = dt.datetime.fromtimestamp(event.at_us / 1e6, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    details = " ".join(f"{name}={value}" for name, value in sorted(event.details.items()))
    return "  ".join(part for part in (when, event.actor, event.action, event.index, details) if part)


@server_command(name="audit")
@click.option("--index", default=None, help="Only this index's events (a dropped index's too).")
@click.option("--action", default=None, help="Only this action's events (e.g. HideRecord, DropIndex).")
@click.option("--since", default=None, help="At or after this time (seconds, a date, or a duration ago: 2h).")
@click.option("--until", default=None, help="Before this time (same forms).")
@click.option("--limit", type=click.IntRange(1, 1000), default=100, show_default=True, help="Events per page.")
@click.option("--continuation", default=None, help="Go on from where the previous page stopped (it prints this).")
@click.option("--newest-first", is_flag=True, help="The latest events first.")
def audit(
    session: Session,
    index: str | None,
    action: str | None,
    since: str | None,
    until: str | None,
    limit: int,
    continuation: str | None,
    newest_first: bool,
) -> None:
    """List the audit trail: who did which admin action, when, on which index, with what outcome."""
    after = None
    if continuation:
        try:
            after = base64.urlsafe_b64decode(continuation.encode())
        except (binascii.Error, ValueError):
            raise click.BadParameter("not a continuation this command printed", param_hint="--continuation") from None
    events, following = session.client.audit_events(
        index,
        action,
        None if since is None else _time_us(since, "--since"),
        None if until is None else _time_us(until, "--until"),
        limit,
        after,
        newest_first,
    )
    shown = None if following is None else base64.urlsafe_b64encode(following).decode()
    session.emit(
        {"events": [event_json(event) for event in events], "continuation": shown},
        [event_line(event) for event in events] or ["(no events)"],
    )
    if shown is not None:
        session.note(f"more: --continuation {shown}")


@server_command(name="audit-retention")
@click.argument("retention", type=DURATION, required=False)
def audit_retention(session: Session, retention: float | None) -> None:
    """Show how long the audit trail keeps events, or set it to RETENTION (e.g. 90d, 1y as 365d;
    0: the default, 90 days).  Older events are cleared by maintenance."""
    client = session.client
    kept = client.audit_retention() if retention is None else client.set_audit_retention(int(retention))
    session.emit({"retention": kept}, f"audit events are kept {show_duration(kept)} ({plural(kept, 'second')})")


COMMANDS = (audit, audit_retention)
