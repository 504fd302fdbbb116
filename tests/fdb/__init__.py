"""Tests on a real FoundationDB cluster: failover, replication, crashes, rolling upgrades, limits."""
