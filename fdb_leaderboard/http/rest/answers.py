"""The REST routes' answers: an RPC's response as the plain JSON (and status) a route answers with."""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from ...wire import plain_entry, plain_message, plain_window, rpc_json


def answer_plain(response: Message) -> tuple[int, Any]:
    return 200, plain_message(response)


def answer_cohort(response: Message) -> tuple[int, Any]:
    if not response.HasField("tier"):
        return 404, {"code": "NOT_FOUND", "message": "the record has joined no cohort in this window"}
    return answer_plain(response)


def answer_windows_of_type(response: Message, values: dict[str, Any]) -> tuple[int, Any]:
    """The index's windows of one type, the latest first, a page of them."""
    page, size = values.get("page", 1), values.get("size", 100)
    # The request asked for this type only (ListWindowsRequest.window_type).
    found = sorted(response.windows, key=lambda w: w.start, reverse=True)  # type: ignore[attr-defined]
    rows = []
    for window in found[(page - 1) * size : page * size]:
        row: dict[str, Any] = {**plain_window(window), "filling": window.filling}
        if window.filling:
            row["records_processed"] = window.records_processed
            row["entries_ranked"] = window.entries_ranked
            if window.HasField("records_total"):
                row["records_total"] = window.records_total
        rows.append(row)
    pages = max(1, -(-len(found) // size))
    return 200, {"windows": rows, "page": page, "size": size, "total": len(found), "pages": pages}


def answer_entries(response: Message) -> tuple[int, Any]:
    answer: dict[str, Any] = {"entries": [plain_entry(e) for e in response.entries]}  # type: ignore[attr-defined]
    if response.HasField("window"):
        answer["window"] = plain_window(response.window)  # type: ignore[attr-defined]
    return 200, answer


def answer_rank_and_entry(response: Message) -> tuple[int, Any]:
    if not response.HasField("entry"):
        return 404, {"code": "NOT_FOUND", "message": "the record has no value in this window"}
    return 200, {**plain_entry(response.entry), "window": plain_window(response.window)}  # type: ignore[attr-defined]


def answer_watched_rank(response: Message) -> tuple[int, Any]:
    """A watched record's rank and entry: ``entry`` is null while it has no value in the window."""
    entry = plain_entry(response.entry) if response.HasField("entry") else None  # type: ignore[attr-defined]
    return 200, {"entry": entry, "window": plain_window(response.window)}  # type: ignore[attr-defined]


def answer_count(response: Message) -> tuple[int, Any]:
    answer: dict[str, Any] = {"count": response.count}  # type: ignore[attr-defined]
    if response.HasField("window"):
        answer["window"] = plain_window(response.window)  # type: ignore[attr-defined]
    return 200, answer


def answer_metadata(response: Message) -> tuple[int, Any]:
    if not response.exists:  # type: ignore[attr-defined]
        return 404, {"code": "NOT_FOUND", "message": "no such record"}
    return 200, {"metadata": dict(sorted(response.metadata.items()))}  # type: ignore[attr-defined]


def answer_ranks(response: Message) -> tuple[int, Any]:
    """Each record asked, in order: its entry, or null without a value in the window."""
    slots = response.ranks  # type: ignore[attr-defined]
    return 200, {"entries": [plain_entry(s.entry) if s.HasField("entry") else None for s in slots]}


def answer_as_json(response: Message) -> tuple[int, Any]:
    return 200, rpc_json(response)
