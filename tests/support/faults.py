"""Faults between a client and a server: a proxy that loses answers after the server committed.

:class:`AnswerCutter` forwards TCP between a gRPC client and a server and reads the server's side
as HTTP/2 frames.  Armed with :meth:`AnswerCutter.lose_answers`, it waits for the next response
HEADERS frame of a call (a unary call's answer goes out only once its handler returned, so after
the write committed) and drops the connection instead of passing it on, after ``stall`` seconds
if asked (so the caller's deadline runs out first).  The caller cannot tell whether its write was
applied: it sees UNAVAILABLE (or DEADLINE_EXCEEDED) and can only send the write again.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

_HEADERS = 0x1
_FRAME_HEADER = 9


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


class AnswerCutter:
    """A proxy at :attr:`address` in front of the gRPC server at ``upstream``."""

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.rpartition(":")
        self.upstream = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self._lock = threading.Lock()
        self._to_lose = 0
        self._stall = 0.0
        self.lost = 0  # answers lost so far
        self._closed = False
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def lose_answers(self, count: int, stall: float = 0.0) -> None:
        """Drop the connection carrying each of the next ``count`` answers, ``stall`` seconds late."""
        with self._lock:
            self._to_lose, self._stall = count, stall

    def close(self) -> None:
        self._closed = True
        self.listener.close()
        for sock in list(self._sockets):
            _close(sock)

    def __enter__(self) -> AnswerCutter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                _close(client)
                continue
            self._sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()
            threading.Thread(target=self._answers, args=(server, client), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        """The client's side, as it comes."""
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        _close(source, sink)

    def _answers(self, server: socket.socket, client: socket.socket) -> None:
        """The server's side, frame by frame (a server speaks first, with frames: no preface)."""
        try:
            while (header := _read_exactly(server, _FRAME_HEADER)) is not None:
                length = int.from_bytes(header[:3], "big")
                stream = int.from_bytes(header[5:9], "big") & 0x7FFF_FFFF
                payload = _read_exactly(server, length) if length else b""
                if payload is None:
                    break
                if header[3] == _HEADERS and stream and self._take_one():
                    time.sleep(self._stall)
                    break  # the answer is lost with the connection
                client.sendall(header + payload)
        except OSError:
            pass
        _close(server, client)

    def _take_one(self) -> bool:
        with self._lock:
            if self._to_lose <= 0:
                return False
            self._to_lose -= 1
            self.lost += 1
            return True


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):  # already closed by the other side
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
