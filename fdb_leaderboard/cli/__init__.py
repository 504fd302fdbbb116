"""The ``fdb-leaderboard`` command: serve, administer, load, maintain, demo.

| module | concern |
|---|---|
| ``commands.py`` | the group and its options (server, token, TLS, staleness); registers every command |
| ``serve.py`` | ``serve``: the gRPC server and the HTTP door over a store |
| ``indexes.py`` | index and window administration: ``index``, ``windows``, expire, trim, fill, verify |
| ``session.py`` | ``server_command`` and the ``Session`` it gives a command: the client, ``--timeout``, ``--json`` |
| ``options.py`` | values as typed (durations, times, keys, scores) and the read commands' options |
| ``output.py`` | what commands print: the one row format of entries, keys, scores, windows, progress bars |
| ``failures.py`` | ``CliGroup``: every error as one line and an exit status, ``-v`` anywhere, warnings |
| ``reads.py`` | ``top``, ``rank``, ``watch``, ``around``, ``count`` |
| ``writes.py`` | ``add`` (a score), ``delete`` (a record) |
| ``players.py`` | what players see: metadata, ranks and friends, pages, percentiles, movement, the bottom, groups |
| ``fair_play.py`` | ``hide-record`` / ``restore-record``, ``hidden-records``, score ``rules``, ``delete-records`` |
| ``audit.py`` | ``audit``: who did which admin action and when; ``audit-retention`` |
| ``loading.py`` | ``load``: records files streamed to the server |
| ``export.py`` | ``export``: a window's standings as NDJSON or CSV, page by page, resumable |
| ``dump_and_move.py`` | ``dump`` to a file, ``restore`` one, ``move`` between servers, ``compare``, pause writes |
| ``window_ends.py`` | ``webhook add/list/delete`` (window ends POSTed, signed) and ``window-ends`` (follow them) |
| ``maintenance.py`` | the maintenance pass, ``maintain`` (retrying when the server restarts) and ``policy`` |
| ``upgrades.py`` | ``store status``, ``store upgrade``, ``index upgrade``: stored formats and the processes' releases |
| ``demo.py`` | a server on a temporary store with simulated games |
| ``spec_file.py`` | window-update files (YAML/JSON) into window updates and maintenance policies |
| ``records_file.py`` | records files for ``load``: JSON lines (whole records or flat entries) and CSV |

Ranks read by people are ``#1`` for the best (text output); ``--json`` and ``export`` print the
API's 0-based ``rank`` fields.

A new command goes in the module of its concern (or a new one), is declared with
``session.server_command`` and is registered in ``commands.py`` with ``main.add_command``.
"""

from .commands import main

__all__ = ["main"]
