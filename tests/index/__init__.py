"""Tests of the leaderboard index: hand-checked examples, the brute-force model, builds, checks, limits."""
