"""A server over an embedded store with its maintenance off, and the CLI run as a process from the checkout."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from fdb_leaderboard.service import Server, ServerSettings

ROOT = Path(__file__).resolve().parents[2]


def serve(path: Path, **settings: object) -> Server:
    """A server over an embedded store; its background maintenance off unless asked for."""
    workers = settings.pop("max_workers", 16)
    settings.setdefault("maintain_every", 0)
    return Server(f"lmdb:{path}?durable=false", "127.0.0.1:0", workers, settings=ServerSettings(**settings)).start()


def _cli(args: list[str], **environment: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **environment}
    return subprocess.run(args, capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
