"""Tests that run the README and docs/ as written."""
