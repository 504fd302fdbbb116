"""Window-end events: ``webhook add|list|delete`` (admin) and ``window-ends`` (follow them).

When a window of an index ends, the server notices it once and POSTs it, signed, to each webhook
of the index (see the README's "Window-end events"); ``window-ends`` prints the same events as
they are noticed, or from a cursor on.
"""

from __future__ import annotations

import click
from google.protobuf import json_format

from ..client import WindowEnd
from ..proto import service_pb2 as pb
from .output import entry_json, entry_lines, plural
from .session import Session, server_command


@click.group()
def webhook() -> None:
    """Subscribe URLs to an index's window ends (each ended window is POSTed to them, signed)."""


def _types(webhook: pb.Webhook) -> str:
    return ", ".join(str(t) for t in webhook.window_types) if webhook.window_types else "every type"


def _webhook_json(webhook: pb.Webhook) -> dict[str, object]:
    shown = json_format.MessageToDict(
        webhook, always_print_fields_with_no_presence=True, preserving_proto_field_name=True
    )
    shown.pop("secret", None)
    shown["created"] = int(shown["created"])
    shown["pending"] = int(shown["pending"])
    return shown


@server_command(webhook, name="add")
@click.argument("name")
@click.argument("url")
@click.option("--secret", default="", help="The HMAC-SHA256 key, 16-256 characters (default: one made up, shown once).")
@click.option(
    "--type", "window_types", type=click.IntRange(1), multiple=True, help="A window type (repeat; default all)."
)
@click.option("--top", type=click.IntRange(1, 100), default=10, show_default=True, help="Entries of the top sent.")
def add(session: Session, name: str, url: str, secret: str, window_types: tuple[int, ...], top: int) -> None:
    """Subscribe URL to the window ends of index NAME."""
    made = session.client.add_webhook(name, url, secret, window_types, top)
    shown = _webhook_json(made)
    if made.HasField("secret"):
        shown["secret"] = made.secret
    lines = [f"{name}: webhook {made.id} -> {made.url} ({_types(made)}, top {made.top})"]
    if made.HasField("secret"):
        lines.append(f"secret (shown this once): {made.secret}")
    session.emit(shown, lines)


@server_command(webhook, name="list")
@click.argument("name")
def list_webhooks(session: Session, name: str) -> None:
    """The webhooks of index NAME, with their events waiting (never their secrets)."""
    found = session.client.webhooks(name)
    lines = [
        f"{w.id} -> {w.url} ({_types(w)}, top {w.top}): {plural(w.pending, 'event')} waiting"
        + (f"; last failure: {w.last_error}" if w.last_error else "")
        for w in found
    ]
    session.emit([_webhook_json(w) for w in found], lines or [f"{name}: no webhooks"])


@server_command(webhook, name="delete")
@click.argument("name")
@click.argument("webhook_id")
def delete(session: Session, name: str, webhook_id: str) -> None:
    """Unsubscribe webhook WEBHOOK_ID of index NAME (its undelivered events are dropped)."""
    response = session.client.delete_webhook(name, webhook_id)
    if not response:
        raise click.ClickException(f"index {name!r} has no webhook {webhook_id!r}")
    session.emit({"deleted": True}, f"{name}: webhook {webhook_id} deleted")


def window_end_lines(event: WindowEnd) -> list[str]:
    head = (
        f"{event.index}: {event.window.describe()} ended with {plural(event.count, 'record')} (cursor {event.cursor})"
    )
    return [head, *("  " + line for line in entry_lines(event.entries))]


def window_end_json(event: WindowEnd) -> dict[str, object]:
    return {
        "id": event.id,
        "index": event.index,
        "window": {"type": event.window.type, "start": event.window.start, "end": event.window.end},
        "count": event.count,
        "entries": [entry_json(e) for e in event.entries],
        "noticed_at": event.noticed_at,
        "cursor": event.cursor,
    }


@server_command(name="window-ends", timeout=None)
@click.argument("name")
@click.option("--after", type=click.IntRange(0), default=None, help="Print the events after this cursor first.")
@click.option("--top", type=click.IntRange(1, 100), default=10, show_default=True, help="Entries of each top shown.")
@click.option("--events", type=click.IntRange(1), default=None, help="Stop after this many (default: at Ctrl-C).")
def window_ends(session: Session, name: str, after: int | None, top: int, events: int | None) -> None:
    """Follow the window ends of index NAME: each ended window with its record count and top, as
    the server notices it (or those after cursor --after first, to resume)."""
    with session.client.watch_window_ends(name, after, top) as stream:
        for shown, event in enumerate(stream, 1):
            session.emit(window_end_json(event), window_end_lines(event))
            if events is not None and shown >= events:
                break
