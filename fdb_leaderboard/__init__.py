"""fdb-leaderboard: time-windowed leaderboards with exact ranks over a transactional key-value store.

Layers, each a sub-package or module; dependencies point one way (``tests/layout/test_layers.py``):

    cli -> http -> service -> index -> rankedset -> store
    client -> wire -> index

- :mod:`~fdb_leaderboard.store`: the transactional ordered key-value interface (FoundationDB-shaped),
  the FoundationDB backend and the embedded LMDB backend.
- :mod:`~fdb_leaderboard.rankedset`: the persistent skip list with counts (the Record Layer's).
- :mod:`~fdb_leaderboard.index`: the leaderboard index (writes, windows, fills, trims, reads).
- :mod:`~fdb_leaderboard.service`: the server (gRPC, catalog of named indexes, metrics).
- :mod:`~fdb_leaderboard.http`: the same service over HTTP/JSON, the live page, ``/metrics``.
- :mod:`~fdb_leaderboard.wire`, :mod:`~fdb_leaderboard.client`: the protocol's Python values, the
  clients (blocking and asyncio) and their errors.
- :mod:`~fdb_leaderboard.cli`: the ``fdb-leaderboard`` command.
- :mod:`~fdb_leaderboard.formats`: the stored data's format versions, which every layer may ask.
"""

from .formats import RELEASE as __version__

__all__ = ["__version__"]
