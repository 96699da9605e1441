"""The controller's import graph, read from the source: no cycle, no import running back up a
layer, imports inside functions only from a list, and few modules loose at the package's top.

Every `import` the package runs counts, at the top of a module or inside a function (an
import inside a function is a cycle all the same, only deferred), and so does a
`lazy_module("pmemlab.x")` stand-in (pmemlab/lazy.py). Imports under `if TYPE_CHECKING:` never
run and are left out.

Layers (LAYERS, lowest first): a module imports from its own layer or below, never above; the
analysis of results sits below plots, plots below the report, the report below the command line.

An import inside a function is allowed for one reason: start-up time. `pmemlab run`, `info`,
`params` and every `--help` stay free of pandas, numpy, matplotlib, scipy and tqdm
(tests/host/controller/backends/test_run.py), so a module that brings one of them in at its import is
imported where it is used. DEFERRED lists those modules, each with why; any other import
inside a function (or lazy_module stand-in) fails below (import it at the top), and so does an entry of the list that
brings in none of them or that nothing defers.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from testlib import TOP, cycles_in


PACKAGE = TOP / "userspace" / "pmemlab"
# the third-party modules `pmemlab run` must not import (each costs 50-300 ms at start)
HEAVY = frozenset({"pandas", "numpy", "matplotlib", "scipy", "tqdm"})
# what may be imported inside a function, each for start-up time: the module brings in HEAVY
DEFERRED = {
    "pandas": "50-300 ms: the tables, the CSV readers' frames",
    "numpy": "the device card's fits",
    "matplotlib": "figures",
    "tqdm": "the progress bar, only where a terminal shows it",
    "pmemlab.analysis.resultset": "result sets as pandas frames (numpy, pandas)",
    "pmemlab.analysis.card": "the device card's inference (numpy)",
    "pmemlab.plots.gallery": "figures (matplotlib)",
    "pmemlab.plots.recipes": "figures (matplotlib)",
    "pmemlab.plots.render": "figures (matplotlib)",
    "pmemlab.plots.style": "figures (matplotlib)",
    "pmemlab.report.page": "the report's tables and figures (pandas, matplotlib)",
}
# an import inside a function for a reason other than start-up time: (importer, target) -> why
CAUGHT = {
    ("pmemlab.__main__", "pmemlab.cli"): "its failure (libplcore.so not built) is caught and said in one line",
}
# the layers, lowest first: (name, the modules and packages in it); a module imports from its own
# layer or a lower one
LAYERS = (
    ("base", ("pmemlab", "pmemlab.errors", "pmemlab.exitcodes", "pmemlab.lazy", "pmemlab.output",
              "pmemlab.plcore", "pmemlab.params")),
    ("machine", ("pmemlab.host", "pmemlab.backends", "pmemlab.results", "pmemlab.table")),
    ("config", ("pmemlab.config",)),
    ("analysis", ("pmemlab.analysis",)),
    ("sweep", ("pmemlab.sweep",)),
    ("targets", ("pmemlab.targets",)),
    ("plots", ("pmemlab.plots",)),
    ("report", ("pmemlab.report",)),
    ("cli", ("pmemlab.cli", "pmemlab.__main__")),
)
TOP_MODULES_MAX = 8  # modules loose at the package's top (userspace/pmemlab/*.py, __init__ and __main__ aside)


@dataclass(frozen=True)
class Import:
    importer: str
    target: str           # a pmemlab module, or the top name of another package
    line: int
    in_function: bool
    lazy: bool = False    # a lazy_module() stand-in: imported on first use


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
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id == "lazy_module" \
                    and child.args and isinstance(child.args[0], ast.Constant) and isinstance(child.args[0].value, str):
                target = child.args[0].value
                found.append(Import(name, target if target.startswith("pmemlab") else target.split(".")[0],
                                    child.lineno, in_function, lazy=True))
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
    """The package's modules that bring in a HEAVY module when they are imported: import it at
    their top, themselves or through another module of the package (imports inside functions
    and lazy_module stand-ins wait for their first use, and do not count)."""
    at_top = [i for i in found if not i.in_function and not i.lazy]
    heavy = {i.importer for i in at_top if i.target in HEAVY}
    while True:
        more = {i.importer for i in at_top if i.target in heavy} - heavy
        if not more:
            return heavy
        heavy |= more


def layer_of(module: str, layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS) -> int | None:
    """The index in `layers` of the layer holding `module` (the longest prefix names it), or None."""
    best: tuple[int, int] | None = None
    for index, (_, members) in enumerate(layers):
        for member in members:
            if module == member or (member != "pmemlab" and module.startswith(member + ".")):
                if best is None or len(member) > best[1]:
                    best = (index, len(member))
    return best[0] if best else None


def upward(found: list[Import], layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS) -> list[str]:
    """The imports that run back up: from a module to one of a higher layer."""
    out = []
    for i in found:
        low, high = layer_of(i.importer, layers), layer_of(i.target, layers)
        if i.target.startswith("pmemlab") and low is not None and high is not None and high > low:
            out.append(f"{i.importer} ({layers[low][0]}) -> {i.target} ({layers[high][0]}), line {i.line}")
    return list(dict.fromkeys(out))


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


def test_no_import_runs_back_up_a_layer() -> None:
    found = imports()
    problems = upward(found)
    assert not problems, ("imports running back up the layers (tests/host/controller/test_imports.py LAYERS; "
                          "move the code down to where its importers can reach it):\n  " + "\n  ".join(problems))


def test_every_module_sits_in_a_layer() -> None:
    loose = [m for m in modules() if layer_of(m) is None]
    assert not loose, f"modules in no layer (add them to LAYERS where they sit): {loose}"


def test_imports_in_functions_are_the_listed_start_up_ones() -> None:
    found = imports()
    heavy = heavy_modules(found)
    deferred = [i for i in found if i.in_function or i.lazy]
    unlisted = list(dict.fromkeys(f"{i.importer} line {i.line}: {i.target}" for i in deferred
                                  if i.target not in DEFERRED and (i.importer, i.target) not in CAUGHT))
    assert not unlisted, ("imports inside functions or through lazy_module that are not in DEFERRED (modules that bring in "
                          f"{sorted(HEAVY)}): import them at the top:\n  " + "\n  ".join(unlisted))
    light = [t for t in DEFERRED if t.startswith("pmemlab") and t not in heavy]
    assert not light, f"DEFERRED lists modules that bring in none of {sorted(HEAVY)} when imported: {light}"
    unused = [t for t in DEFERRED if not any(i.target == t for i in deferred)] + \
        [f"{a} -> {b}" for a, b in CAUGHT if not any(i.in_function and (i.importer, i.target) == (a, b) for i in found)]
    assert not unused, f"DEFERRED/CAUGHT list imports nothing makes inside a function any more: {unused}"


def test_few_modules_loose_at_the_top() -> None:
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(loose) <= TOP_MODULES_MAX, (f"{len(loose)} modules loose at userspace/pmemlab/ (at most "
                                           f"{TOP_MODULES_MAX}): {', '.join(loose)}; put them in the package they serve")


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
    assert heavy_modules(found) == {"pmemlab.plots", "pmemlab.report"}   # table and cli wait for a call
    dodges = [i.target for i in found if i.in_function and i.target.startswith("pmemlab")
              and i.target not in heavy_modules(found)]
    assert dodges == ["pmemlab.table", "pmemlab.errors"]


def test_the_reader_sees_imports_back_up_the_layers(tmp_path: Path) -> None:
    """An import from analysis to plots runs back up, at the top, in a function or through
    lazy_module alike; plots importing analysis, or a module its own layer, does not."""
    package = _write(tmp_path, {
        "__init__.py": "",
        "lazy.py": "def lazy_module(name):\n    pass\n",
        "analysis/__init__.py": "",
        "analysis/stats.py": "import math\n",
        "analysis/tiers.py": "from pmemlab.analysis import stats\ndef f():\n    from pmemlab.plots import data\n",
        "analysis/card.py": "from pmemlab.lazy import lazy_module\nfig = lazy_module('pmemlab.plots.data')\n",
        "plots/__init__.py": "",
        "plots/data.py": "from pmemlab.analysis import stats\nimport pmemlab.plots.recipes\n",
        "plots/recipes.py": "from pmemlab.analysis.tiers import f\n",
    })
    layers = (("base", ("pmemlab", "pmemlab.lazy")), ("analysis", ("pmemlab.analysis",)), ("plots", ("pmemlab.plots",)))
    found = imports(package)
    assert sorted(upward(found, layers)) == ["pmemlab.analysis.card (analysis) -> pmemlab.plots.data (plots), line 2",
                                             "pmemlab.analysis.tiers (analysis) -> pmemlab.plots.data (plots), line 3"]
    assert layer_of("pmemlab.plots.data", layers) == 2 and layer_of("pmemlab.lazy", layers) == 0
    assert layer_of("pmemlab.cli.run", layers) is None
