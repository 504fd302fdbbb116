"""The test suite, a folder per subject; ``conftest.py`` holds the fixtures every folder uses.

- ``store``: the store backends' conformance, the embedded store's redo log, crashes, concurrency.
- ``rankedset``: the ranked set, byte for byte the Record Layer's.
- ``index``: the leaderboard index against hand-checked examples and the brute-force model.
- ``service``: the gRPC service end to end, and what it runs (readers, processes, webhooks, audit).
- ``http``: the HTTP/JSON door and the live page.
- ``client``: the Python clients and the wire conversions.
- ``cli``: the ``fdb-leaderboard`` command line.
- ``fdb``: a real FoundationDB cluster: failover, replication, crashes, rolling upgrades, limits.
- ``formats``: stored formats and stores written by earlier releases.
- ``docs``: the README and docs/ run as written.
- ``layout``: the package's layers and generated modules.
- ``tools``: the tools the suite and its set-up rely on.
- ``support``: helpers, not tests (the brute-force model, fault proxies, clusters, workers).
"""
