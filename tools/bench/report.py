"""The product benchmark's report: plain-text tables on stdout, Markdown for ``docs/benchmarks.md``.

Everything here reads the figures (the JSON ``tools/bench.py --json`` writes), never the run
itself, so a report can be made again from a saved run.  Per aggregation: the workloads (one
heading row per workload, one row per system: ops/s, p50 and p99 latency, our throughput over
Redis's without persistence and, for our durable rows, over Redis's with every write fsynced),
the store's counters per call of the in-process runs (read rounds: the sequential round trips a
call waits for on a network store), with ``--fdb`` FoundationDB against the embedded store and
FoundationDB's operations per submission, storage after the load, store operations per
operation with the cost model, and the raw store.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .data import WINDOWS_PER_SCORE
from .floors import floor_us, sync_floor_table
from .output import fmt_ms, fmt_rate, fmt_ratio, markdown, table
from .suite import WORKLOADS

Table = tuple[list[str], list[list[str]]]
# The order of the rows of a workload; systems not named here (another store) follow in the order measured.
SYSTEM_ORDER = (
    "ours_nondurable",
    "ours",
    "ours_synced",
    "ours_grpc",
    "ours_grpc_synced",
    "fdb",
    "fdb_grpc",
    "redis",
    "redis_aof",
)


def _systems(measured: dict[str, Any]) -> list[str]:
    return [s for s in SYSTEM_ORDER if s in measured] + [s for s in measured if s not in SYSTEM_ORDER]


def main_table(fig: dict[str, Any], cfg: dict[str, Any]) -> Table:
    """One heading row per workload, then one row per system.

    "vs Redis" is our throughput over Redis's without persistence; "vs Redis AOF" (durable
    rows of ours only) over Redis's with every write fsynced; "vs sync floor" (durable
    submissions, Redis's included) over the rate of bare durable 1-KB writes on the same disk
    (``bench.floors.sync_floor``): 1.00x would be one fdatasync per submission and nothing else.
    """
    headers = ["workload / system", "ops/s", "p50 ms", "p99 ms", "vs Redis", "vs Redis AOF", "vs sync floor"]
    floor_rate = 1e6 / floor_us(fig["sync_floor"]) if fig.get("sync_floor") else None
    rows: list[list[str]] = []
    for name, title in WORKLOADS:
        measured = fig["workloads"][name]
        if not measured:
            continue
        redis_rate = measured.get("redis", {}).get("ops_per_s")
        aof_rate = measured.get("redis_aof", {}).get("ops_per_s")
        rows.append([title.format(**cfg), *[""] * (len(headers) - 1)])
        for system in _systems(measured):
            m = measured[system]
            ours = not system.startswith("redis")
            durable = "durable=false" not in m["label"] and system != "redis"
            rows.append(
                [
                    f"    {m['label']}",
                    fmt_rate(m["ops_per_s"]),
                    fmt_ms(m.get("p50_us", float("nan"))),
                    fmt_ms(m.get("p99_us", float("nan"))),
                    fmt_ratio(m["ops_per_s"], redis_rate) if ours else "",
                    fmt_ratio(m["ops_per_s"], aof_rate) if ours and durable else "",
                    fmt_ratio(m["ops_per_s"], floor_rate) if durable and name.startswith("submit") else "",
                ]
            )
    for column in (6, 5, 4):  # no floor, no Redis: no ratios
        if len(headers) > column and not any(row[column] for row in rows):
            headers.pop(column)
            for row in rows:
                row.pop(column)
    return headers, rows


def counters_table(fig: dict[str, Any], cfg: dict[str, Any]) -> Table:
    """The store's own counters per call (``Database.stats``) of every in-process run."""
    headers = [
        "workload / system",
        "client CPU ms",
        "fdbserver CPU ms",
        "read rounds",
        "reads",
        "writes",
        "bytes written",
        "commits",
        "retries",
        "conflicts",
    ]
    rows: list[list[str]] = []
    for name, title in WORKLOADS:
        measured = {s: m for s, m in fig["workloads"][name].items() if "counters_per_call" in m}
        if not measured:
            continue
        rows.append([title.format(**cfg), *[""] * (len(headers) - 1)])
        for system in _systems(measured):
            c = measured[system]["counters_per_call"]
            rows.append(
                [
                    f"    {measured[system]['label']}",
                    fmt_ms(c["client_cpu_us"]) if "client_cpu_us" in c else "-",
                    fmt_ms(c["server_cpu_us"]) if "server_cpu_us" in c else "",
                    f"{c['read_rounds']:.2f}",
                    f"{c['reads']:.2f}",
                    f"{c.get('writes', 0):.2f}",
                    f"{c.get('bytes_written', 0):,.0f}",
                    f"{c['commits']:.3f}",
                    f"{c['retries']:.3f}",
                    f"{c['conflicts']:.3f}",
                ]
            )
    return headers, rows


def fdb_table(fig: dict[str, Any], cfg: dict[str, Any]) -> Table:
    """FoundationDB's throughput and CPU per operation against the embedded store's, workload by workload."""
    headers = [
        "workload",
        "embedded ops/s",
        "FoundationDB ops/s",
        "FDB/embedded",
        "FDB p50 ms",
        "FDB p99 ms",
        "embedded client CPU ms",
        "FDB client CPU ms",
        "fdbserver CPU ms",
    ]
    rows = []
    for name, title in WORKLOADS:
        measured = fig["workloads"][name]
        for mode, suffix in (("fdb", ""), ("fdb_grpc", ", via gRPC")):
            fdb = measured.get(mode)
            if fdb is None:
                continue
            peer = measured.get("ours_grpc" if mode == "fdb_grpc" else "ours")
            cpu = fdb.get("counters_per_call", {})
            peer_cpu = peer.get("counters_per_call", {}) if peer else {}
            rows.append(
                [
                    title.format(**cfg) + suffix,
                    fmt_rate(peer["ops_per_s"]) if peer else "-",
                    fmt_rate(fdb["ops_per_s"]),
                    fmt_ratio(fdb["ops_per_s"], peer["ops_per_s"] if peer else None),
                    fmt_ms(fdb.get("p50_us", float("nan"))),
                    fmt_ms(fdb.get("p99_us", float("nan"))),
                    fmt_ms(peer_cpu["client_cpu_us"]) if "client_cpu_us" in peer_cpu else "-",
                    fmt_ms(cpu["client_cpu_us"]) if "client_cpu_us" in cpu else "-",
                    fmt_ms(cpu["server_cpu_us"]) if "server_cpu_us" in cpu else "-",
                ]
            )
    return headers, rows


def fdb_submission_table(fig: dict[str, Any]) -> Table:
    """FoundationDB operations per submission (the counting proxy, rolled back)."""
    ops = fig["fdb"]["submit_ops"]
    bytes_written = fig["workloads"]["submit_1"]["fdb"]["counters_per_call"].get("bytes_written", 0)
    rows = [
        ["transactions", f"{ops['transactions']:.2f}"],
        ["point reads (get)", f"{ops['gets']:.2f}"],
        ["range reads", f"{ops['ranges']:.2f}"],
        ["rows the range reads returned", f"{ops['rows']:.2f}"],
        ["reads outside snapshot (each a read conflict range)", f"{ops.get('conflict_reads', 0):.2f}"],
        ["snapshot reads (no conflict range)", f"{ops.get('snapshot_reads', 0):.2f}"],
        ["explicit read conflict ranges", f"{ops.get('conflict_range', 0):.2f}"],
        ["sets", f"{ops.get('set', 0):.2f}"],
        ["clears and range clears", f"{ops.get('clear', 0) + ops.get('clear_range', 0):.2f}"],
        ["atomic mutations (add, max, min)", f"{ops['atomic']:.2f}"],
        ["bytes of keys and values written (Database.stats, submissions by 1 caller)", f"{bytes_written:,.0f}"],
        ["read conflict ranges in all (with the idempotency marker's)", f"{ops['read_conflict_ranges']:.2f}"],
        ["write conflict ranges in all (one per write, with the marker's)", f"{ops['write_conflict_ranges']:.2f}"],
    ]
    return ["per submission", "FoundationDB"], rows


def storage_table(fig: dict[str, Any]) -> Table:
    headers = ["storage after the load", "bytes", "bytes per record per window", "ours/Redis"]
    ours, theirs = fig["storage"].get("ours"), fig["storage"].get("redis")
    rows = []
    if ours:
        rows.append(
            [
                f"ours: LMDB live B-tree pages ({ours['store_keys']:,} keys, depth {ours['btree_depth']})",
                f"{ours['tree_bytes']:,}",
                f"{ours['bytes_per_record_window']:.1f}",
                f"{ours['bytes_per_record_window'] / theirs['bytes_per_record_window']:.2f}x" if theirs else "",
            ]
        )
        rows.append(
            [
                "ours: LMDB data file (with free pages kept for reuse)",
                f"{ours['disk_bytes']:,}",
                f"{ours['file_bytes_per_record_window']:.1f}",
                "",
            ]
        )
    fdb = fig.get("fdb", {}).get("storage")
    if fdb:
        rows.append(
            [
                "ours on FDB: the index's key range (FoundationDB's sampled estimate)",
                f"{fdb['estimated_bytes']:,}",
                f"{fdb['bytes_per_record_window']:.1f}",
                f"{fdb['bytes_per_record_window'] / theirs['bytes_per_record_window']:.2f}x" if theirs else "",
            ]
        )
    if theirs:
        rows.append(
            [
                "Redis: used_memory growth",
                f"{theirs['used_memory_bytes']:,}",
                f"{theirs['bytes_per_record_window']:.1f}",
                "",
            ]
        )
    return headers, rows


def cost_table(fig: dict[str, Any]) -> Table:
    headers = [
        "operation",
        "gets",
        "ranges",
        "rows read",
        "sets",
        "clears",
        "atomic",
        "store ops",
        "store us",
        "measured us",
        "measured/store",
    ]
    model = fig.get("store_cost_model", {})
    rows = []
    for op, c in fig["store_ops_per_op"].items():
        m = model.get(op, {})
        rows.append(
            [
                op,
                f"{c['gets']:.1f}",
                f"{c['ranges']:.1f}",
                f"{c['rows']:.1f}",
                f"{c.get('set', 0):.1f}",
                f"{c.get('clear', 0) + c.get('clear_range', 0):.1f}",
                f"{c['atomic']:.1f}",
                f"{c['total']:.1f}",
                f"{m['modelled_store_us']:.1f}" if m else "-",
                f"{m['measured_us']:.1f}" if "measured_us" in m else "-",
                f"{m['measured_over_store']:.1f}x" if "measured_over_store" in m else "-",
            ]
        )
    return headers, rows


RAW_LABELS = {
    "get": "get",
    "put": "put (overwrite)",
    "clear": "clear",
    "add": "atomic add",
    "range1": "range read, 1 key",
    "range16": "range read, 16 keys",
    "rev_range1": "reverse range read, 1 key",
}


def raw_table(fig: dict[str, Any]) -> Table:
    headers = ["raw store op (durable=false, 1000/txn)", "store API ops/s", "us/op", "py-lmdb ops/s", "us/op"]
    rows = []
    for kind, label in RAW_LABELS.items():
        api, direct = fig["raw_store_api"][kind], fig["raw_py_lmdb"].get(kind)
        rows.append(
            [
                label,
                fmt_rate(api["ops_per_s"]),
                f"{api['us_per_op']:.2f}",
                fmt_rate(direct["ops_per_s"]) if direct else "-",
                f"{direct['us_per_op']:.2f}" if direct else "-",
            ]
        )
    for name, label in (
        ("api_read_1_get", "transaction: db.read, 1 get"),
        ("api_run_1_put", "transaction: db.run, 1 set"),
    ):
        s = fig["raw_one_op_per_txn"][name]
        rows.append([label, fmt_rate(s["ops_per_s"]), f"{s['us_per_op']:.2f}", "", ""])
    return headers, rows


def tables(fig: dict[str, Any], cfg: dict[str, Any]) -> list[tuple[str, Table]]:
    out = [("Workloads", main_table(fig, cfg))]
    if any("counters_per_call" in m for measured in fig["workloads"].values() for m in measured.values()):
        out.append(
            (
                "Store counters per call, in-process runs (Database.stats; commits count durable commits, "
                "shared by a group commit on the embedded store; retries and conflicts happen on FoundationDB only)",
                counters_table(fig, cfg),
            )
        )
    if "fdb" in fig:
        out.append(
            ("FoundationDB next to the embedded store (durable rows; the load: durable=false)", fdb_table(fig, cfg))
        )
        out.append(("FoundationDB operations per submission (counting proxy, rolled back)", fdb_submission_table(fig)))
    if fig.get("sync_floor"):
        out.append(
            (
                "The floor of a durable commit, on the store's disk in the same run (bench.floors.sync_floor)",
                sync_floor_table(fig["sync_floor"]),
            )
        )
    out.append(("Storage", storage_table(fig)))
    if fig["store_ops_per_op"]:
        caption = "Store operations per operation"
        if "store_cost_model" in fig:
            caption += (
                " (store us: counts x the raw store-API costs below; measured us: the in-process mean, "
                "durable=false for submit and load, durable for the others)"
            )
        out.append((caption, cost_table(fig)))
    if "raw_store_api" in fig:
        out.append(("Raw store, same LMDB environment (median of 3 rounds)", raw_table(fig)))
    return out


def header_lines(figures: dict[str, Any]) -> list[str]:
    cfg, env = figures["config"], figures["environment"]
    return [
        f"fdb-leaderboard benchmark: {cfg['records']:,} records, 1 group, {WINDOWS_PER_SCORE} windows per score "
        f"(all-time, UTC daily, ISO-weekly, monthly), {cfg['ops']:,} ops per workload, "
        f"{cfg['threads']} concurrent callers, seed {cfg['seed']}",
        f"machine: {env['cpu_model']}, {env['cpus']} CPUs, {env['ram_gib']:.1f} GiB RAM; {env['platform']}",
        f"python {env['python']}; " + ", ".join(f"{k} {v}" for k, v in env["packages"].items()),
        f"source: {env['source']}",
        *([f"FoundationDB: {fdb_line(figures)}"] if cfg.get("fdb") else []),
    ]


def fdb_line(figures: dict[str, Any]) -> str:
    """The cluster the FoundationDB rows ran on."""
    cluster = next((run["fdb"]["cluster"] for run in figures["runs"] if "fdb" in run), {})
    return (
        f"cluster file {figures['config']['fdb']}, version {', '.join(cluster.get('version', ['?']))}, "
        f"{cluster.get('processes', '?')} process(es), {cluster.get('redundancy', '?')} redundancy, storage engine "
        f"{cluster.get('storage_engine', '?')}, log engine {cluster.get('log_engine', '?')}, on the same machine"
    )


def report(figures: dict[str, Any]) -> Iterator[str]:
    yield from header_lines(figures)
    cfg = figures["config"]
    for skipped in figures["skipped"]:
        yield f"SKIPPED: {skipped}"
    for run in figures["runs"]:
        yield ""
        yield f"=== aggregation {run['aggregation']} ==="
        for caption, (headers, rows) in tables(run, cfg):
            yield ""
            yield caption
            yield table(headers, rows)
        for note in _run_notes(run):
            yield f"  note: {note}"


def _run_notes(run: dict[str, Any]) -> list[str]:
    notes = list(run["notes"])
    for name, _ in WORKLOADS:
        for m in run["workloads"][name].values():
            if m.get("note"):
                notes.append(f"{m['label']} ({name}): {m['note']}")
    if "same_as_embedded" in run.get("fdb", {}):
        notes.append(
            "check of FoundationDB against the embedded store after the same submissions (all-time and daily "
            f"counts, weekly top-10 scores): {'same' if run['fdb']['same_as_embedded'] else 'DIFFERENT'}"
        )
    if run["checks"]:
        notes.append(
            "sanity check against Redis after the same submissions (all-time and daily counts, weekly top-10 "
            f"scores): {'same' if run['checks']['same_as_redis'] else 'DIFFERENT'}"
        )
    return notes


# Where the generated part of docs/benchmarks.md ends: what follows is written by hand and kept.
HAND_WRITTEN = "<!-- Written by hand from here on: tools/bench.py --write-docs keeps it. -->"


def write_docs(figures: dict[str, Any], path: Path) -> None:
    cfg, env = figures["config"], figures["environment"]
    lines = [
        "# Benchmarks",
        "",
        "Written by `tools/bench.py --write-docs`. The benchmarks (`tools/bench.py` and `tools/bench NAME`;",
        "`tools/bench --help` lists them) are the package `tools/bench/` (one shared harness, one module per",
        "benchmark or workload family), whose docstrings say exactly what each workload measures.",
        "Ours: the Python API on the embedded LMDB store (in-process) and the gRPC server (`Server` in its own",
        "process, `LeaderboardClient`). Redis: Debian's `redis-server`, one sorted set per window, redis-py with",
        "hiredis. Ratios are our throughput divided by Redis's (higher is better for us). Latencies are per call",
        "(per batch for loads and fills). Redis does less work: it stores neither the entries nor the record",
        "heads, and orders equal scores by member instead of by who reached them first.",
        "",
        "## Run",
        "",
        f"- date: {figures['date']}; source: {env['source']}",
        f"- command: `{figures['command']}`",
        f"- machine: {env['cpu_model']}, {env['cpus']} CPUs, {env['ram_gib']:.1f} GiB RAM, {env['platform']}"
        + (" (shared and noisy: figures vary between runs)" if env["cpus"] <= 2 else ""),
        f"- load average at the end: {', '.join(f'{x:.2f}' for x in env['loadavg_at_end'])}",
        f"- Python {env['python']}, LMDB {env['lmdb']}; " + ", ".join(f"{k} {v}" for k, v in env["packages"].items()),
        f"- data: {cfg['records']:,} records in 1 group, {WINDOWS_PER_SCORE} windows per score (all-time, UTC daily, "
        f"ISO-weekly, monthly); {cfg['ops']:,} operations per workload; {cfg['threads']} concurrent callers; "
        f"load batches of {cfg['load_batch']}; seed {cfg['seed']}",
    ]
    for run in figures["runs"]:
        if run["environment"].get("redis_command"):
            lines.append(f"- Redis ({run['aggregation']}): `{run['environment']['redis_command']}`")
            lines.append(f"- Redis durable ({run['aggregation']}): `{run['environment']['redis_aof_command']}`")
            break
    if cfg.get("fdb"):
        lines.append(f"- FoundationDB: {fdb_line(figures)}")
    for skipped in figures["skipped"]:
        lines.append(f"- skipped: {skipped}")
    for run in figures["runs"]:
        lines += ["", f"## Aggregation {run['aggregation']}"]
        for caption, (headers, rows) in tables(run, cfg):
            lines += ["", f"{caption}:", "", markdown(headers, rows)]
        notes = _run_notes(run)
        if notes:
            lines.append("")
            lines += [f"- {note}" for note in notes]
    kept = ""
    if path.exists():  # the hand-written sections after the generated ones stay
        existing = path.read_text()
        if HAND_WRITTEN in existing:
            kept = "\n" + existing[existing.index(HAND_WRITTEN) :]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n" + kept)
