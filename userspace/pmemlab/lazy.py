"""A module imported on first attribute use (numpy, pandas and what needs them stay out of the
start-up of commands that print no table: tests/host/controller/backends/test_run.py)."""
from __future__ import annotations

import importlib
import types
from typing import Any


class _LazyModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        module = importlib.import_module(self.__name__)
        self.__dict__.update(module.__dict__)
        return getattr(module, name)


def lazy_module(name: str) -> Any:
    """A stand-in for module `name` that imports it when an attribute is first read."""
    return _LazyModule(name)
