"""Helpers shared by pmemlab's tests: the repository root and the scripts (the test bed
scripts/vm, scripts/bench) loaded as modules, so tests use the bed's own kernel-log rules and the
bench's own statistics rather than a copy of them."""
from __future__ import annotations

import importlib.machinery
import importlib.util
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from types import ModuleType

TOP = Path(__file__).resolve().parent.parent
# what the host tests share, whatever folder of tests/host they are in: the fake module, the sweep
# configs, the recorded results (tests/host/conftest.py puts it on the import path)
HOST_FIXTURES = TOP / "tests" / "host" / "fixtures"


@cache
def load_script(name: str) -> ModuleType:
    """scripts/NAME (a Python script without a .py suffix) as a module."""
    loader = importlib.machinery.SourceFileLoader(f"pmemlab_{name.replace('-', '_')}", str(TOP / "scripts" / name))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def load_vm_script() -> ModuleType:
    return load_script("vm")


def headers_trees() -> list[Path]:
    """Every kernel headers tree the module is built against: the host's under /lib/modules, and
    the build roots' of scripts/kernels.list (5.10, 7.2)."""
    kernels = load_script("kernels")
    return sorted(Path("/lib/modules").glob("*/build")) + [
        k.kdir(k.release) for k in kernels.load() if k.root and k.release]


def cycles_in(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected sets of more than one node of a directed graph (node -> the nodes it
    depends on), each sorted, in sorted order (Tarjan): the loops the C and Python cycle tests
    refuse."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)
