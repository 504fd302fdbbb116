#!/usr/bin/env python3
"""Regenerate the committed Python modules under fdb_leaderboard/proto from protos/.

Run after editing a .proto file: ``.venv/bin/python tools/gen_protos.py``.  The test
``tests/test_protos.py`` fails when the committed modules no longer match the sources.
"""

from __future__ import annotations

import pathlib
import sys

from grpc_tools import protoc

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROTOS = ROOT / "protos"


def proto_files() -> list[str]:
    return sorted(str(path.relative_to(PROTOS)) for path in (PROTOS / "fdb_leaderboard" / "proto").glob("*.proto"))


def generate() -> None:
    include = pathlib.Path(protoc.__file__).parent / "_proto"
    common = ["protoc", f"-I{PROTOS}", f"-I{include}"]
    if protoc.main([*common, f"--python_out={ROOT}", f"--pyi_out={ROOT}", *proto_files()]) != 0:
        sys.exit("protoc failed")
    services = [name for name in proto_files() if name.endswith("service.proto")]
    if services and protoc.main([*common, f"--grpc_python_out={ROOT}", *services]) != 0:
        sys.exit("protoc failed on the services")


if __name__ == "__main__":
    generate()
