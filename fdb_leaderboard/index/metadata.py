"""Per-record display metadata: a small map of strings (display name, avatar, country...).

Stored at ``S + (6, pk)`` as a ``RecordMetadata`` protobuf, apart from the record's head and
entries, so updating it never touches scores or windows, and score writes never read it.
Every listing (top, around, scans, rank and entry, friends, pages) reads the metadata of the
records it returns in its own transaction (one point read per record, issued together), so
callers never make a second lookup that could see another state.  Deleting a record deletes
its metadata.

Bounds, checked on every write: at most :data:`MAX_FIELDS` fields, names of 1 to
:data:`MAX_NAME_CHARS` characters among letters, digits, ``_ . -``, string values, and at
most :data:`MAX_METADATA_BYTES` bytes once encoded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from ..errors import InvalidArgument, NotFound
from ..proto import index_pb2
from ..store.api import strinc
from .reads import RankedEntry
from .transaction import IndexTransaction

MAX_FIELDS = 16
MAX_NAME_CHARS = 64
MAX_METADATA_BYTES = 1024
_NAME = re.compile(r"[A-Za-z0-9_.\-]+")


def check_metadata(fields: object, what: str = "metadata") -> dict[str, str]:
    """``fields`` as a checked dict of field name to value; raises InvalidArgument."""
    if not isinstance(fields, Mapping):
        raise InvalidArgument(f"{what} must be a mapping of field names to strings, not {type(fields).__name__}")
    out: dict[str, str] = {}
    for name, value in fields.items():
        check_field_name(name)
        if not isinstance(value, str):
            raise InvalidArgument(f"{what} field {name!r} must be a string, not {type(value).__name__}")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidArgument(f"{what} field {name!r} is not valid Unicode text") from None
        out[name] = value
    return out


def check_field_name(name: object) -> str:
    if not isinstance(name, str):
        raise InvalidArgument(f"a metadata field name must be a string, not {type(name).__name__}")
    if not 1 <= len(name) <= MAX_NAME_CHARS or not _NAME.fullmatch(name):
        raise InvalidArgument(
            f"metadata field name {name!r} must be 1 to {MAX_NAME_CHARS} letters, digits, '_', '.' or '-'"
        )
    return name


def encode(fields: Mapping[str, str]) -> bytes:
    """The stored form of checked ``fields``; raises InvalidArgument beyond the bounds."""
    if len(fields) > MAX_FIELDS:
        raise InvalidArgument(f"a record's metadata holds at most {MAX_FIELDS} fields; this has {len(fields)}")
    data = index_pb2.RecordMetadata(fields=fields).SerializeToString(deterministic=True)
    if len(data) > MAX_METADATA_BYTES:
        raise InvalidArgument(
            f"a record's metadata takes at most {MAX_METADATA_BYTES} bytes encoded; this takes {len(data)}"
        )
    return data


def decode(data: bytes | None) -> dict[str, str]:
    return dict(index_pb2.RecordMetadata.FromString(data).fields) if data else {}


class Metadata:
    """Record metadata inside one transaction (``txn``)."""

    def __init__(self, txn: IndexTransaction) -> None:
        self.txn = txn
        self.tr = txn.tr
        self.layout = txn.layout

    def get(self, pk: object) -> dict[str, str] | None:
        """The record's metadata ({} if it has none), or None if the record does not exist."""
        _, pk_nested, _ = self.txn.pk(pk)
        head_raw, data = self.tr.get_many([self.layout.head_key(pk_nested), self.layout.metadata_key(pk_nested)])
        return None if head_raw is None else decode(data)

    def set(
        self, pk: object, fields: Mapping[str, str], merge: bool = False, remove: Iterable[str] = ()
    ) -> dict[str, str]:
        """Replace the record's metadata with ``fields`` (or, with ``merge``, update those fields
        and drop the ``remove`` ones); returns the metadata now stored.  The record must exist
        (have been written): metadata describes a record, it does not create one."""
        fields = check_metadata(fields)
        remove = [check_field_name(name) for name in remove]
        if remove and not merge:
            raise InvalidArgument("remove needs merge: without it the fields given replace all the others")
        pk, pk_nested, _ = self.txn.pk(pk)
        key = self.layout.metadata_key(pk_nested)
        head_raw, data = self.tr.get_many([self.layout.head_key(pk_nested), key])
        if head_raw is None:
            raise NotFound(f"record {pk!r} does not exist: write a score for it first (or with the metadata)")
        stored = decode(data) if merge else {}
        stored.update(fields)
        for name in remove:
            stored.pop(name, None)
        if stored:
            self.tr.set(key, encode(stored))
        elif data is not None:
            self.tr.clear(key)
        return stored

    def merge_on_write(self, pk: object, fields: Mapping[str, str]) -> None:
        """Merge ``fields`` into the metadata of a record this transaction just wrote."""
        if fields:
            self.set(pk, fields, merge=True)

    def attach(self, entries: Sequence[RankedEntry]) -> list[RankedEntry]:
        """``entries`` with each record's metadata, read together in this transaction."""
        keys = [self.layout.metadata_key(self.txn.pk(entry.pk)[1]) for entry in entries]
        found = self.tr.get_many(keys) if keys else []
        return [entry.with_metadata(decode(data)) for entry, data in zip(entries, found, strict=True)]

    def attach_to(self, listing: Callable[[], Sequence[RankedEntry]]) -> list[RankedEntry]:
        """The entries of ``listing()`` with each record's metadata.

        The metadata's keys come from the listing's rows, so reading them is one more round
        trip on a network store.  A read of whether the index holds any metadata at all goes
        out with the listing's first reads: where none is stored, that round is saved.
        """
        anything = self.tr.get_range_async(self.layout.metadata, strinc(self.layout.metadata), 1)
        entries = listing()
        if anything.value:
            return self.attach(entries)
        return [entry.with_metadata({}) for entry in entries]

    def attach_one(self, entry: RankedEntry | None) -> RankedEntry | None:
        return None if entry is None else self.attach([entry])[0]
