"""Tests of the ``fdb-leaderboard`` command line."""
