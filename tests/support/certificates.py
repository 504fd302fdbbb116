"""Certificates for the TLS tests, made by openssl: a CA, a server and a client certificate, another CA
(the ``certificates`` fixture of conftest.py makes one set a module)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def make_certificates(where: Path, names: str) -> dict[str, str]:
    """In ``where``, by openssl: a CA (``ca``), a server and a client certificate (``server``,
    ``client``, with ``server_key``, ``client_key``) for the subjectAltName ``names``, and
    another CA (``other``)."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=where, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test CA",
            "-keyout", "ca.key", "-out", "ca.pem")  # fmt: skip
    (where / "san.cnf").write_text(f"subjectAltName={names}\n")
    for name in ("server", "client"):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key",
                "-out", f"{name}.csr")  # fmt: skip
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-days", "2", "-extfile", "san.cnf", "-out", f"{name}.pem")  # fmt: skip
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=other CA",
            "-keyout", "other.key", "-out", "other.pem")  # fmt: skip
    return {
        p.stem + ("_key" if p.suffix == ".key" else ""): str(p) for p in where.iterdir() if p.suffix in (".pem", ".key")
    }
