"""The package's layers: `cli → commands → operations → definitions → defs → lib/contracts/rules`.

Every import of `distill_assets` (module level or inside a function) must point down or sideways
within a layer, never up; no two modules may import each other, directly or round a circle; and a
room under `defs/` imports no other room (code two rooms share moves down to the shared `defs/*.py`
modules, `lib/` or `rules/`), except the release, which publishes the curation room's tables.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import distill_assets

PACKAGE = distill_assets.__name__
ROOT = Path(distill_assets.__file__).resolve().parent
# top-level name under the package -> layer (lower numbers may import higher numbers only)
LAYERS = {
    "cli": 0,
    "commands": 1,
    "operations": 2,
    "definitions": 3,
    "defs": 4,
    "samples": 4,
    "lib": 5,
    "contracts": 5,
    "rules": 5,
}
# room -> the other rooms it may import
ROOM_IMPORTS = {"release": {"curation"}}


def module_name(path: Path) -> str:
    """Return the dotted name of a module file of the package."""
    parts = [PACKAGE, *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def imported(module: str, path: Path) -> Iterator[str]:
    """Yield the package modules `module` imports (`from a import b` may name module `a.b`)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        yield from (name for name in names if name in MODULES and name != module)


EDGES = {module: set(imported(module, path)) for module, path in MODULES.items()}


def layer(module: str) -> int:
    """Return the layer of a module (the package's `__init__` sits with the bottom layer)."""
    top = module.split(".")[1] if "." in module else "lib"
    return LAYERS[top]


def room(module: str) -> str | None:
    """Return the room (`defs/<room>/`) a module belongs to, if any."""
    parts = module.split(".")
    is_room = len(parts) > 2 and parts[1] == "defs" and (ROOT / "defs" / parts[2]).is_dir()
    return parts[2] if is_room else None


def test_every_top_level_name_has_a_layer() -> None:
    tops = {module.split(".")[1] for module in MODULES if "." in module}
    assert tops <= set(LAYERS), f"give these a layer: {sorted(tops - set(LAYERS))}"


def test_no_import_points_up_a_layer() -> None:
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in EDGES.items()
        for target in targets
        if layer(target) < layer(module)
    )
    assert upward == []


def test_no_room_imports_another_room() -> None:
    sideways = sorted(
        f"{module} -> {target}"
        for module, targets in EDGES.items()
        for target in targets
        if room(module)
        and room(target)
        and room(target) != room(module)
        and room(target) not in ROOM_IMPORTS.get(room(module) or "", set())
    )
    assert sideways == []


def test_no_import_cycle() -> None:
    # Tarjan's strongly connected components: any component of two or more modules is a circle
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in EDGES[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in MODULES:
        if module not in index:
            visit(module)
    assert circles == []
