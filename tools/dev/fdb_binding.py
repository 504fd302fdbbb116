"""Print the `foundationdb` requirement that matches the FoundationDB client library found here.

The Python binding's major.minor must match the native client's (``libfdb_c``): a 7.3
client needs ``foundationdb==7.3.*``.  The library is looked up as the binding looks it up
(``LD_LIBRARY_PATH``, then the system's library path).  Prints nothing when no client
library loads or the installed binding already matches; tools/_venv.sh installs what it prints.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.metadata


def client_max_api_version() -> int | None:
    """The newest API version the client library supports (730 for 7.3), or None without one."""
    for name in ("libfdb_c.so", ctypes.util.find_library("fdb_c")):
        if not name:
            continue
        try:
            return int(ctypes.CDLL(name).fdb_get_max_api_version())
        except (OSError, AttributeError):
            continue
    return None


def required_binding() -> str | None:
    """``foundationdb==M.m.*`` when the installed binding does not match the client library."""
    api = client_max_api_version()
    if api is None:
        return None
    wanted = f"{api // 100}.{api % 100 // 10}"
    try:
        installed = ".".join(importlib.metadata.version("foundationdb").split(".")[:2])
    except importlib.metadata.PackageNotFoundError:
        installed = None
    return None if installed == wanted else f"foundationdb=={wanted}.*"


if __name__ == "__main__":
    requirement = required_binding()
    if requirement:
        print(requirement)
