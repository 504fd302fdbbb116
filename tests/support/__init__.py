"""Helpers of the tests, not tests: the brute-force model, fault proxies, clusters, workers, old stores."""
