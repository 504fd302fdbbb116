"""The servicer's handlers, one group of RPCs a module; ``grpc_service.LeaderboardService`` assembles them.

| module | handlers of |
|---|---|
| ``calling.py`` | what every handler shares: its call's context, the wrapper answering its errors, ``Handlers`` |
| ``indexes.py`` | indexes and the store: create, list, drop, policies, windows, sub-directories, stored formats |
| ``maintenance.py`` | an index's maintenance: expire, fill, trim, keep ahead, verify, forget idempotency keys |
| ``moves.py`` | whole indexes moved: dumps, restores, writes paused for a move |
| ``writes.py`` | record writes: scores, entries, records, batches, metadata, loads |
| ``moderation.py`` | a fair board: hidden records, score rules, a group's records deleted |
| ``reads.py`` | reads: ranks, tops, around a record, counts, scans, pages, cohorts, percentiles, history |
| ``events.py`` | what happened to an index: its audit trail, window-end webhooks and events |

Each group is a class the servicer inherits from; a handler takes a parsed request and a
:class:`~.calling.CallContext` and calls the index.
"""
