"""The ``fdb-leaderboard`` command: serve, administer, load, maintain, demo.

| module | concern |
|---|---|
| ``commands.py`` | the click commands (most talk to a running server through the client) |
| ``players.py`` | what players see: metadata, many ranks and friends, pages, percentiles, movement, the bottom |
| ``maintenance.py`` | one maintenance pass over a server's indexes (``maintain``, ``demo``) |
| ``demo.py`` | a server on a temporary store with simulated games |
| ``spec_file.py`` | window-update files (YAML/JSON) into window updates |
| ``records_file.py`` | JSON-lines record files for ``load`` |
"""

from .commands import main

__all__ = ["main"]
