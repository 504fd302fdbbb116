"""The README and the docs/ pages run as written: every fenced example of every section of every
page, in its order, against one server (gRPC and HTTP) on each store, printing what the page shows.
The pages run one after another on that server in the order of ``PAGES`` (each goes on from the
boards the ones before it made), then any other page of docs/ in name order.

- ``console`` blocks: each ``$ command`` (a line ending in a backslash goes on) and the lines
  below it, its output (stdout and stderr, as a terminal shows them).  ``fdb-leaderboard``
  commands run in process (click's CliRunner, with ``--server`` added), fed by the command piped
  into them if any; other commands (curl, grep, printf) run in bash.  A ``...`` line elides the
  middle of an output: what comes before it starts the output, what comes after ends it.
- ``python`` blocks run with the server's address; the ``console`` block after one, without
  commands, is what it prints.
- ``yaml`` and ``json`` blocks are a window-update file and records to load: applied and loaded.
- "Running it securely" runs in bash in a directory of its own, ``serve`` as a process, on free
  ports in place of 50051 and 8080 and ``localhost`` in place of ``lb.example.com``.

Numbers from the clock are masked where a page says times vary ("From nothing to a board" and
"The same board" sections of the README, when a record was hidden and the audit trail's times in
"Fair play", and the server's "now" in an error).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fdb_leaderboard.cli import main
from fdb_leaderboard.client import LeaderboardClient
from fdb_leaderboard.http import HttpServer

ROOT = Path(__file__).resolve().parents[2]
# Pages whose examples build on one another's boards, in the order they run.
PAGES = (
    "README.md",
    "docs/tutorial.md",
    "docs/python-clients.md",
    "docs/http-api.md",
    "docs/operations.md",
    "docs/cli.md",
)
CLI = str(Path(sys.executable).parent / "fdb-leaderboard")
CLOCK_SECTIONS = ("From nothing to a board", "The same board", "Fair play")
SECURE_SECTION = "Running it securely"

pytestmark = pytest.mark.usefixtures("no_unexpected_server_errors")


def pages() -> list[str]:
    """The README and every page of docs/, in the order their examples run."""
    others = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "docs").glob("*.md"))
    return [*PAGES, *(page for page in others if page not in PAGES)]


def blocks(page: str) -> list[tuple[str, str, str]]:
    """Every fenced block of a page: (section heading, language, text), in order."""
    found, section = [], ""
    text = (ROOT / page).read_text()
    for match in re.finditer(r"^(#{2,3}) ([^\n]*)$|^```(\w+)\n(.*?)^```$", text, re.M | re.S):
        if match.group(1):
            section = match.group(2)
        else:
            found.append((section, match.group(3), match.group(4)))
    return found


def sections(page: str) -> set[str]:
    return set(re.findall(r"^#{2,3} (.*)$", (ROOT / page).read_text(), re.M))


def commands(block: str) -> list[tuple[str, str]]:
    """A console block's (command, expected output) pairs; continued lines joined."""
    pairs: list[tuple[str, str]] = []
    lines = block.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i]
        assert line.startswith("$ "), f"output without a command: {line!r}"
        command = line[2:].rstrip("\n")
        while command.endswith("\\"):
            i += 1
            command = command[:-1] + " " + lines[i].strip()
        i += 1
        output = []
        while i < len(lines) and not lines[i].startswith("$ "):
            output.append(lines[i])
            i += 1
        pairs.append((command, "".join(output)))
    return pairs


def matches(output: str, expected: str) -> bool:
    """``output`` is ``expected``, whose ``...`` line (if any) stands for any lines."""
    parts = re.split(r"^\s*\.\.\.\n", expected, maxsplit=1, flags=re.M)
    if len(parts) == 1:
        return output == expected
    head, tail = parts
    return output.startswith(head) and output.endswith(tail) and len(output) >= len(head) + len(tail)


def masked(text: str, section: str) -> str:
    text = re.sub(r"now \(\d+\)", "now (TIME)", text)
    if not section.startswith(CLOCK_SECTIONS):
        return text
    text = re.sub(r"\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} UTC\b", "DATE", text)  # audit events' times
    return re.sub(r"\b\d{10}\b", "TIME", text)


def bash(command: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, input=stdin, timeout=120)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Replay:
    """Runs the pages' examples against ``address`` (gRPC) and ``http`` (host:port)."""

    def __init__(self, address: str, http: str, scratch: Path) -> None:
        self.address, self.http, self.scratch = address, http, scratch
        self.runner = CliRunner(env={"LOGNAME": "you"})  # the local user the CLI names (shown in "Fair play")

    def cli(self, args: list[str], stdin: str | None = None) -> str:
        if "--server" not in args:
            args = ["--server", self.address, *args]
        return self.runner.invoke(main, args, stdin, catch_exceptions=False).output

    def shell(self, command: str) -> str:
        output = bash(command.replace("localhost:8080", self.http), ROOT).stdout
        return output if not output or output.endswith("\n") else output + "\n"  # (curl's JSON ends the line)

    def run(self, command: str) -> str:
        """One command of a console block, as a terminal shows its output."""
        program = ".venv/bin/fdb-leaderboard "
        if command.startswith(program) and not re.search(r"[|>;&`$]", command):
            return self.cli(shlex.split(command[len(program) :]))
        piped = re.fullmatch(r"(.*?)\|\s*\.venv/bin/fdb-leaderboard (.*)", command)
        if piped and "fdb-leaderboard" not in piped.group(1):
            return self.cli(shlex.split(piped.group(2)), self.shell(piped.group(1)))
        assert "fdb-leaderboard" not in command, command
        return self.shell(command)

    def python(self, code: str, cwd: Path) -> str:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.chdir(cwd):
            exec(code.replace("127.0.0.1:50051", self.address), {"__name__": "__readme__"})
        return printed.getvalue()


@contextlib.contextmanager
def secure_server(command: str, cwd: Path, ports: dict[str, str]) -> Iterator[str]:
    """``serve`` as docs/operations.md starts it, in ``cwd``; yields the line it prints."""
    for typed, free in ports.items():
        command = command.replace(typed, free)
    job = subprocess.Popen(
        ["bash", "-c", f"exec {command}"], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        yield job.stdout.readline()  # type: ignore[union-attr]
    finally:
        job.send_signal(signal.SIGTERM)
        try:
            job.wait(timeout=60)
        finally:
            job.kill()


def test_every_example_of_the_readme_and_docs_prints_what_the_page_shows(
    server_place, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(ROOT)  # as the pages' commands run: examples/windows.yaml is relative
    server = server_place.start()
    http = HttpServer(server, "127.0.0.1:0").start()
    replay = Replay(server.address, http.url.removeprefix("http://"), tmp_path)
    grpc_port, http_port = str(free_port()), str(free_port())
    secure = tmp_path / "secure"
    secure.mkdir()
    ports = {
        "lb.example.com:50051": f"localhost:{grpc_port}",
        "0.0.0.0:50051": f"0.0.0.0:{grpc_port}",
        "0.0.0.0:8080": f"0.0.0.0:{http_port}",
        ".venv/bin/fdb-leaderboard": CLI,
    }
    unmapped = {f"localhost:{grpc_port}": "lb.example.com:50051", f":{grpc_port}": ":50051", f":{http_port}": ":8080"}
    ran: dict[tuple[str, str], int] = {}
    pending_output: str | None = None  # what the last python block printed
    try:
        with contextlib.ExitStack() as serving:
            for page, section, language, text in [(name, *block) for name in pages() for block in blocks(name)]:
                ran[page, section] = ran.get((page, section), 0) + 1
                if pending_output is not None:
                    assert language == "console" and not text.startswith("$ "), (page, section)
                    assert pending_output == text, (page, section, pending_output)
                    pending_output = None
                    continue
                if language == "python":
                    in_process = "open_database" in text  # its own store, in a directory of its own
                    printed = replay.python(text, tmp_path if in_process else ROOT)
                    if not in_process:
                        pending_output = printed
                    continue
                if language == "yaml":  # the window-update file: applied once, then nothing more
                    spec = tmp_path / "full.yaml"
                    spec.write_text(text)
                    replay.cli(["index", "create", "full"])
                    assert not replay.cli(["windows", "apply", "full", str(spec)]).startswith("added 0")
                    again = replay.cli(["windows", "apply", "full", str(spec)])
                    assert again.startswith("added 0, deleted 0, filling 0\n"), again
                    continue
                if language == "json":  # records to load
                    replay.cli(["index", "create", "sample"])
                    lines = text.count("\n")
                    assert replay.cli(["load", "sample", "-"], text) == f"loaded {lines} records into sample\n"
                    with LeaderboardClient(server.address) as lb:
                        assert [(e.pk, e.score) for e in lb.top("sample", 5)] == [(("bob",), 1500), (("alice",), 1200)]
                    continue
                assert language == "console", (page, section, language)
                for command, expected in commands(text):
                    if section == SECURE_SECTION:
                        if " serve " in command:
                            output = serving.enter_context(secure_server(command, secure, ports))
                        else:
                            for typed, free in ports.items():
                                command = command.replace(typed, free)
                            done = bash(command, secure)
                            output = done.stdout + done.stderr
                        for actual, typed in unmapped.items():
                            output = output.replace(actual, typed)
                    else:
                        output = replay.run(command)
                    assert matches(masked(output, section), masked(expected, section)), (page, section, command, output)
        assert pending_output is None
    finally:
        http.stop(1)
        server.stop(grace=1)
    assert all(section in sections(page) for page, section in ran)
    assert {
        ("README.md", "From nothing to a board: three commands"),
        ("README.md", "The same board from Python"),
        ("README.md", "The same board over HTTP"),
        ("docs/tutorial.md", "A five-minute tour"),
        ("docs/python-clients.md", "The Python clients: errors and asyncio"),
        ("docs/tutorial.md", "Display data, friends, pages, percentiles, movement, the bottom of a board"),
        ("docs/http-api.md", "Over HTTP"),
        ("docs/operations.md", "Running it securely"),
        ("docs/cli.md", "Window-update files"),
        ("docs/cli.md", "Loading records"),
        ("docs/operations.md", "Maintenance"),
    } <= set(ran)
    assert sum(ran.values()) >= 23
