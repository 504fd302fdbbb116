"""``python -m fdb_leaderboard.cli``: the ``fdb-leaderboard`` command."""

from .commands import main

main()
