"""The package's layers: dependencies point one way, and no module imports itself back.

    cli -> http -> service -> index -> rankedset -> store      (client -> wire -> index)

Every ``import`` in the package (at module level or inside a function) is read from the
source, resolved to the module it names, and checked against the layer table below.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = "fdb_leaderboard"
ROOT = pathlib.Path(__file__).resolve().parents[2] / PACKAGE

# What each part of the package may import of the package (besides itself).  errors and the
# generated protobuf modules are leaves every layer may use, and so is formats (the stored data's
# format versions, which the store, the index and the service all ask), and so is freshness (the
# bounds of a read's freshness every door checks); access (tokens and roles) is a leaf
# the front ends (service, http, cli) share without importing each other; and so is rpcs (the one
# table of what every door knows of each RPC: its role, how it is served, its route).
LEAVES = {"errors", "proto", "formats", "freshness", "rpcs"}
ALLOWED = {
    "store": set(),
    "rankedset": {"store"},
    "index": {"rankedset", "store"},
    "wire": {"index"},
    "client": {"access", "wire", "index"},
    "service": {"access", "wire", "index", "rankedset", "store"},
    # http calls the servicer itself, so both front ends share validation, errors and codes.
    "http": {"access", "service", "wire", "index", "rankedset", "store"},
    "cli": {"access", "client", "service", "http", "index", "store"},
    "access": set(),
    "errors": set(),
    "proto": set(),
    "formats": set(),
    "freshness": set(),
    "rpcs": set(),
}


def _modules() -> dict[str, pathlib.Path]:
    """Every module by name: Python sources, and C extensions by their source (they import nothing of the package)."""
    found = {}
    for path in ROOT.rglob("*.c"):
        found[".".join(path.relative_to(ROOT.parent).with_suffix("").parts)] = path
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _imports(name: str, path: pathlib.Path) -> set[str]:
    """The package's modules ``name`` imports (a package stands for its ``__init__``)."""
    is_package = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            # `from pkg import sub` names a module when `pkg.sub` is one.
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module for a in node.names]
        else:
            continue
        out.update(t for t in targets if t == PACKAGE or t.startswith(PACKAGE + "."))
    return out


GRAPH = {name: _imports(name, path) if path.suffix == ".py" else set() for name, path in MODULES.items()}


def _part(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != PACKAGE))
def test_each_module_imports_only_lower_layers(module: str) -> None:
    part = _part(module)
    for target in GRAPH[module]:
        other = _part(target)
        assert other == part or other in LEAVES or other in ALLOWED[part], (
            f"{module} imports {target}: the {part} layer may use only {sorted(ALLOWED[part] | LEAVES)}"
        )


def test_the_client_needs_no_server_code() -> None:
    reachable, pending = set(), [f"{PACKAGE}.client"]
    while pending:
        module = pending.pop()
        if module not in reachable:
            reachable.add(module)
            pending.extend(GRAPH.get(module, ()))
    assert not {m for m in reachable if _part(m) in ("service", "cli")}


def test_no_module_imports_itself_back() -> None:
    """The import graph has no cycle (a package's ``__init__`` re-exporting its modules is not one
    unless a module imports the package back)."""
    state: dict[str, int] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(GRAPH.get(module, ())):
            if state.get(target) == 1:
                cycle = [*path[path.index(target) :], target]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])


def test_the_layer_table_names_every_part() -> None:
    assert {_part(m) for m in MODULES if m != PACKAGE} <= set(ALLOWED)
