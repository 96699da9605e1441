"""The controller's import graph, read from the source: no cycle, imports inside functions counted.

Every `import` the package runs counts, at the top of a module or inside a function (an
import inside a function is a cycle all the same, only deferred). Imports under
`if TYPE_CHECKING:` never run and are left out. An import inside a function is allowed for one
reason: start-up time. `pmemlab run`, `info`, `params` and every `--help` stay free of pandas,
numpy, matplotlib, scipy and tqdm (tests/host/test_controller_run.py), so a module that brings
one of them in is imported where it is used. Which modules those are is read from their own
imports, not from a list here: an import inside a function of a module that brings in none of
them is a cycle dodged or a slip, and fails below.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from testlib import cycles_in


PACKAGE = Path(__file__).resolve().parents[2] / "userspace" / "pmemlab"
# the third-party modules `pmemlab run` must not import (each costs 50-300 ms at start)
HEAVY = frozenset({"pandas", "numpy", "matplotlib", "scipy", "tqdm"})


@dataclass(frozen=True)
class Import:
    importer: str
    target: str           # a pmemlab module, or the top name of another package
    line: int
    in_function: bool


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its __init__)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _targets(node: ast.Import | ast.ImportFrom, name: str, is_package: bool, known: set[str]) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = name.split(".")[: None if is_package else -1]
        base = base[: len(base) - node.level + 1]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    # `from pmemlab.x import y` imports the module pmemlab.x.y when there is one, else pmemlab.x
    return [f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in known else prefix for alias in node.names]


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(package: Path = PACKAGE) -> list[Import]:
    """Every import the package runs, with where it is written."""
    known = modules(package)
    found: list[Import] = []

    def visit(node: ast.AST, name: str, is_package: bool, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child.test):
                for other in child.orelse:
                    visit(other, name, is_package, in_function)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in _targets(child, name, is_package, set(known)):
                    if not target.startswith("pmemlab.") and target != "pmemlab":
                        target = target.split(".")[0]
                    found.append(Import(name, target, child.lineno, in_function))
            visit(child, name, is_package,
                  in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    for name, path in known.items():
        visit(ast.parse(path.read_text(), str(path)), name, path.name == "__init__.py", False)
    return found


def heavy_modules(found: list[Import]) -> set[str]:
    """The package's modules that use a HEAVY module: import it, at the top or in a function,
    themselves or through another module of the package."""
    heavy = {i.importer for i in found if i.target in HEAVY}
    while True:
        more = {i.importer for i in found if i.target in heavy} - heavy
        if not more:
            return heavy
        heavy |= more


def cycles(found: list[Import]) -> list[list[str]]:
    """The strongly connected parts of the import graph with more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for i in found:
        if i.target.startswith("pmemlab") and i.target != i.importer:
            graph.setdefault(i.importer, set()).add(i.target)
            graph.setdefault(i.target, set())
    return cycles_in(graph)


def _where(found: list[Import], part: list[str]) -> list[str]:
    return list(dict.fromkeys(f"{i.importer} -> {i.target} (line {i.line}{', in a function' if i.in_function else ''})"
                              for i in found if i.importer in part and i.target in part))


def test_no_import_cycle() -> None:
    found = imports()
    problems = [" | ".join(_where(found, part)) for part in cycles(found)]
    assert not problems, "import cycles in userspace/pmemlab:\n  " + "\n  ".join(problems)


def test_imports_in_functions_only_defer_heavy_modules() -> None:
    found = imports()
    heavy = heavy_modules(found) | HEAVY
    dodges = list(dict.fromkeys(f"{i.importer} line {i.line}: {i.target}" for i in found
                                if i.in_function and i.target.startswith("pmemlab") and i.target not in heavy))
    assert not dodges, ("imports inside functions of modules that bring in none of "
                        f"{sorted(HEAVY)} (import them at the top):\n  " + "\n  ".join(dodges))


def _write(root: Path, files: dict[str, str]) -> Path:
    package = root / "pmemlab"
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    return package


def test_the_reader_sees_cycles_through_functions_and_packages(tmp_path: Path) -> None:
    package = _write(tmp_path, {
        "__init__.py": "",
        "a.py": "from pmemlab import b\n",
        "b.py": "def f():\n    from pmemlab.sub import c\n",
        "sub/__init__.py": "from .c import g\n",
        "sub/c.py": "from ..a import x\ndef g():\n    pass\n",
        "d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pmemlab import a\nimport pmemlab.e\n",
        "e.py": "import pmemlab.d\n",
    })
    found = imports(package)
    assert cycles(found) == [["pmemlab.a", "pmemlab.b", "pmemlab.sub.c"], ["pmemlab.d", "pmemlab.e"]]
    assert Import("pmemlab.b", "pmemlab.sub.c", 2, True) in found
    assert Import("pmemlab.sub", "pmemlab.sub.c", 1, False) in found
    assert not any(i.importer == "pmemlab.d" and i.target == "pmemlab.a" for i in found)   # TYPE_CHECKING only


def test_heavy_is_read_from_the_imports(tmp_path: Path) -> None:
    package = _write(tmp_path, {
        "__init__.py": "",
        "errors.py": "import enum\n",
        "table.py": "import csv\ndef frame():\n    import pandas\n",
        "plots.py": "import matplotlib.pyplot as plt\n",
        "report.py": "from pmemlab import plots\n",
        "cli.py": "def report():\n    from pmemlab import report\ndef table():\n    from pmemlab import table\n"
                  "def fail():\n    from pmemlab import errors\n",
    })
    found = imports(package)
    assert heavy_modules(found) == {"pmemlab.cli", "pmemlab.plots", "pmemlab.report", "pmemlab.table"}
    dodges = [i.target for i in found if i.in_function and i.target.startswith("pmemlab")
              and i.target not in heavy_modules(found)]
    assert dodges == ["pmemlab.errors"]
