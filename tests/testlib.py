"""Helpers shared by pmemlab's tests: the repository root and the test bed (scripts/vm) loaded
as a module, so tests use the bed's own kernel-log rules rather than a copy of them."""
from __future__ import annotations

import importlib.machinery
import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType

TOP = Path(__file__).resolve().parent.parent


@cache
def load_vm_script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("pmemlab_vm", str(TOP / "scripts" / "vm"))
    spec = importlib.util.spec_from_loader("pmemlab_vm", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
