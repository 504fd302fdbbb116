"""Tests of the store backends: conformance, the embedded store's redo log, crashes, concurrency."""
