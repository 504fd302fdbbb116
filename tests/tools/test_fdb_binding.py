"""tools/dev/fdb_binding.py: which `foundationdb` binding tools/_venv.sh installs."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "dev" / "fdb_binding.py"


@pytest.fixture
def tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fdb_binding", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("client_api", "installed", "required"),
    [
        (730, "8.0.1", "foundationdb==7.3.*"),  # a 7.3 client with the newest binding: replace it
        (730, "7.1.61", "foundationdb==7.3.*"),
        (730, "7.3.79", None),  # already matching
        (710, "7.3.79", "foundationdb==7.1.*"),
        (800, None, "foundationdb==8.0.*"),  # no binding installed yet
        (None, "8.0.1", None),  # no client library: any binding serves the embedded store
    ],
)
def test_the_binding_follows_the_client_library(
    tool: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    client_api: int | None,
    installed: str | None,
    required: str | None,
) -> None:
    def version(name: str) -> str:
        assert name == "foundationdb"
        if installed is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return installed

    monkeypatch.setattr(tool, "client_max_api_version", lambda: client_api)
    monkeypatch.setattr(tool.importlib.metadata, "version", version)
    assert tool.required_binding() == required
