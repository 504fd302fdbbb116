"""The Grafana dashboard and the Prometheus alert rules in docs/ use only metrics the server
exports (read from a running server's /metrics on each store), and the rules pass
``promtool check rules`` where promtool is installed (Debian's ``prometheus`` package)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
import yaml

from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.http import HttpServer
from fdb_leaderboard.service import Server

DOCS = Path(__file__).resolve().parents[2] / "docs"
DASHBOARD = DOCS / "grafana-dashboard.json"
ALERTS = DOCS / "prometheus-alerts.yml"
USED = re.compile(r"\b(?:fdb_leaderboard|process)_[a-z_]+\b")
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}


def expressions() -> dict[str, str]:
    """Each panel's and each rule's PromQL, by what it is named."""
    found = {}
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel["targets"]:
            found[f"panel {panel['title']!r}"] = target["expr"]
    for group in yaml.safe_load(ALERTS.read_text())["groups"]:
        for rule in group["rules"]:
            found[f"alert {rule['alert']}"] = rule["expr"]
    return found


def exported(server: Server, text: str) -> set[str]:
    """The series names the server exports: those of its /metrics ``text``, and those its
    registry's families will hold (a labelled family shows in the text once it has a sample)."""
    names = {re.split(r"[{ ]", line, maxsplit=1)[0] for line in text.splitlines() if line and line[0] != "#"}
    for family in server.metrics.registry.collect():
        names.update(family.name + suffix for suffix in SUFFIXES.get(family.type, ("",)))
    return names


def test_every_metric_the_dashboard_and_alerts_use_is_exported(server: Server, client: LeaderboardClient) -> None:
    client.create_index("game")
    client.update_windows("game", high_score_first=True, specs=[(1, 0, 86_400, 86_400, 3)])
    client.add_score("game", ("ann",), 10, 5)
    http = HttpServer(server, "127.0.0.1:0").start()
    text = httpx.get(f"{http.url}/metrics", timeout=20).text
    names = exported(server, text)
    assert not [name for name in names if name.endswith("_created")]  # one series per quantity
    assert 'fdb_leaderboard_windows_last_end_timestamp_seconds{index="game",type="1"} 259200.0' in text
    embedded = "fdb_leaderboard_store_size_bytes " in text  # the embedded store's size: on it only
    missing = {
        where: sorted(name for name in set(USED.findall(expr)) - names if embedded or "_store_size" not in name)
        for where, expr in expressions().items()
    }
    assert {where: names for where, names in missing.items() if names} == {}
    assert len(expressions()) >= 15


def test_the_alert_rules_pass_promtool() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian's prometheus package)")
    checked = subprocess.run([promtool, "check", "rules", str(ALERTS)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
