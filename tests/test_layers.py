"""No module imports a layer above its own (DESIGN.md, "Layout of the code"), and no two
modules import each other.

    cli -> network -> emit / search / executor -> simulation -> model -> mapping / importers
        -> ir / arch
        -> errors, dtypes

``layout``, ``isa`` and ``tiles`` (the tile kernels) stand alone: they import nothing of tilewise but the base (errors,
dtypes). Every import counts, also one inside a function (a lazy import is still a
dependency). The imports are read from the source (ast), nothing is executed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# package (or module) prefix -> layer; a module belongs to its longest matching prefix
LAYERS = {
    "tilewise.errors": 0, "tilewise.textfile": 0, "tilewise.cpuinfo": 0, "tilewise.dtypes": 0, "tilewise._version": 0,
    "tilewise.ir": 1, "tilewise.arch": 1,
    "tilewise.mapping": 2, "tilewise.importers": 2,
    "tilewise.model": 3,
    "tilewise.simulation": 4,
    "tilewise.search": 5, "tilewise.executor": 5, "tilewise.emit": 5,
    "tilewise.emit.dma": 5,  # AIE DMA programs: build on the walker (simulation), run on the executor
    "tilewise.network": 5.5,  # whole networks and sweeps call search_many
    "tilewise.cli": 6,
    "tilewise": 7, "tilewise.__main__": 7,
}
STANDALONE = ("tilewise.layout", "tilewise.isa", "tilewise.tiles")

# Known upward imports kept as thin compatibility paths for callers in other parts of the code;
# each goes when its callers move. (importer, imported): why.
PENDING: dict = {}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((SRC / "tilewise").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The tilewise modules ``name`` imports anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(base + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for a in node.names:  # ``from . import search`` imports the module tilewise.search
                found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base)
    return {m for m in found if m == "tilewise" or m.startswith("tilewise.")}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer(module: str):
    if module.startswith(STANDALONE):
        return "standalone"
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len,
               default=None)
    return None if best is None else LAYERS[best]


def test_every_module_has_a_layer():
    missing = [m for m in MODULES if _layer(m) is None]
    assert not missing, f"add these modules to LAYERS in tests/test_layers.py: {missing}"


def test_no_module_imports_a_layer_above_its_own():
    bad = []
    for importer, targets in GRAPH.items():
        mine = _layer(importer)
        for t in sorted(targets):
            theirs = _layer(t)
            if (importer, t) in PENDING:
                continue
            if mine == "standalone":
                if not (t.startswith(importer.split(".")[0] + "." + importer.split(".")[1])
                        or theirs == 0):
                    bad.append(f"{importer} (standalone) imports {t}")
            elif theirs == "standalone":
                continue
            elif theirs > mine:
                bad.append(f"{importer} (layer {mine}) imports {t} (layer {theirs})")
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_pending_exceptions_are_still_needed():
    """Remove an entry of PENDING as soon as its import is gone."""
    stale = [pair for pair in PENDING if pair[1] not in GRAPH.get(pair[0], ())]
    assert not stale, f"remove from PENDING: {stale}"


def test_no_import_cycles_between_modules():
    """Two modules never import each other, directly or through others (a package's
    ``__init__`` importing its own submodules is not a cycle back to it)."""
    def edges(m):
        return [t for t in GRAPH.get(m, ()) if t in GRAPH and t != m
                and not m.startswith(t + ".")]  # a submodule loading its package's __init__

    cycles = []
    state: dict[str, int] = {}

    def visit(m, stack):
        state[m] = 1
        stack.append(m)
        for t in edges(m):
            if state.get(t) == 1:
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t, stack)
        stack.pop()
        state[m] = 2

    for m in GRAPH:
        if m not in state:
            visit(m, [])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("importer, imported", [
    ("tilewise.search.many", "tilewise.cli._workload"),
    ("tilewise.search.store", "tilewise"),
    ("tilewise.arch.spec", "tilewise.arch.loader"),
])
def test_the_imports_the_issue_named_are_gone(importer, imported):
    assert imported not in GRAPH[importer]
