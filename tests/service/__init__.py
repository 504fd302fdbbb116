"""Tests of the gRPC service end to end and what it runs: readers, processes, webhooks, audit, metrics."""
