"""Stores as earlier releases wrote them (``tests/compat/``, made by ``tools/compat_fixture.py``), loaded
into a store of any backend under any catalog root."""

from __future__ import annotations

import importlib.util
import pathlib

import fdb.tuple

from fdb_leaderboard.index import tuplecodec as tuples
from fdb_leaderboard.proto import index_pb2
from fdb_leaderboard.service.catalog import ROOT
from fdb_leaderboard.store import open_database

TOOLS = pathlib.Path(__file__).resolve().parent.parent / "tools"
_spec = importlib.util.spec_from_file_location("compat_fixture", TOOLS / "compat_fixture.py")
assert _spec is not None and _spec.loader is not None
compat = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compat)


def rerooted(rows: list[tuple[bytes, bytes]], root: bytes) -> list[tuple[bytes, bytes]]:
    """The fixture's rows (under ``ROOT``) moved under ``root``: keys, the index prefixes some keys
    name (``("ends_noticed", prefix, type)``) and the catalog entries' prefixes."""
    if root == ROOT:
        return rows

    def move(value: bytes) -> bytes:
        return root + value[len(ROOT) :] if value.startswith(ROOT) else value

    out = []
    for key, value in rows:
        assert key.startswith(ROOT), key
        rest = key[len(ROOT) :]
        first = tuples.unpack(rest[: tuples.item_ends(rest, 1)[0]])[0]
        if isinstance(first, str):  # the catalog's own keys: tuples throughout
            items = fdb.tuple.unpack(rest)
            key = root + fdb.tuple.pack(tuple(move(i) if isinstance(i, bytes) else i for i in items))
            if first == "catalog":
                entry = index_pb2.CatalogEntry.FromString(value)
                entry.prefix = move(entry.prefix)
                value = entry.SerializeToString()
        else:
            key = move(key)
        out.append((key, value))
    return out


def load_into(url: str, root: bytes, fixture: dict) -> None:
    """Write the fixture's rows, under catalog root ``root``, into the store at ``url``."""
    rows = rerooted(compat.rows_of(fixture), root)
    with open_database(url) as db:
        for start in range(0, len(rows), 500):
            part = rows[start : start + 500]
            db.run(lambda tr, part=part: [tr.set(k, v) for k, v in part])
