"""libplcore.so: the module's own run-parameter table and validator (core/params.def,
params.c, check.c), compiled for userspace by `make` (userspace/runner/), called through ctypes;
and the table as data, which needs no C.

The controller judges every value and every point with this code, so a config is refused or
skipped for exactly the reason the module (and the user backend's runner) would give.

The table itself (every parameter's name, kind, range, default and allowed values, the ops and
their flags, the CPU features) is the package's schema.json, which `make docs` writes from the
library's `plc_schema()` (scripts/update-docs, `write_schema`): reading, plotting, comparing and
reporting results need no compiler and no library. A library whose table is not the file's is
refused when it is loaded (run `make docs`), and tests/host/controller/test_params_schema.py fails.

The library is looked for at $PMEMLAB_PLCORE, next to this package, and in the source tree's
userspace/runner/; when it is not there the error says how to build it.
"""

from __future__ import annotations

import ctypes
import json
import os
from functools import cache
from pathlib import Path
from typing import Any, Sequence

from pmemlab.errors import PmemlabError
from pmemlab.exitcodes import BAD_INPUT

LIB_NAME = "libplcore.so"
ENV = "PMEMLAB_PLCORE"
# the table as data, in the package (written by `make docs`, read by every command)
SCHEMA = Path(__file__).resolve().parent / "schema.json"
_OUT_LEN = 4096  # a value text (core/pl_params.h PL_TEXT_MAX) and its NUL, or a reason


class CoreMissing(PmemlabError):
    """libplcore.so is not built (or not built from the table of the package's schema.json)."""

    exit_code = BAD_INPUT


def candidates() -> list[Path]:
    """Where the library may be, in the order looked at."""
    env = os.environ.get(ENV)
    if env:
        return [Path(env)]
    here = Path(__file__).resolve().parent
    return [here / LIB_NAME, here.parent / "runner" / LIB_NAME]


def library_path() -> Path:
    paths = candidates()
    for path in paths:
        if path.is_file():
            return path
    where = f"${ENV} = {paths[0]}" if os.environ.get(ENV) else ", ".join(str(p) for p in paths)
    raise CoreMissing(f"{LIB_NAME} (the module's validator, which judges every run) not found ({where})",
                      f"run `make` in the pmemlab tree (it builds userspace/runner/{LIB_NAME}), "
                      f"or set {ENV} to the library's path")


def _open(path: Path) -> ctypes.CDLL:
    try:
        so = ctypes.CDLL(str(path))
        so.plc_schema.restype = ctypes.c_char_p
        so.plc_schema.argtypes = []
        so.plc_value.restype = ctypes.c_int
        so.plc_value.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                 ctypes.c_size_t, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
        so.plc_check.restype = ctypes.c_int
        so.plc_check.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p), ctypes.c_int,
                                 ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t,
                                 ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
    except (OSError, AttributeError) as exc:
        raise CoreMissing(f"{path} cannot be used: {exc}", "rebuild it: `make` in the pmemlab tree") from None
    return so


def _library_text(so: ctypes.CDLL, path: Path) -> str:
    text = so.plc_schema()
    if not text:
        raise CoreMissing(f"{path} gave no parameter table", "rebuild it: `make` in the pmemlab tree")
    return str(text.decode())


@cache
def lib() -> ctypes.CDLL:
    """The library, once its table is the package's (schema.json): else the controller would
    describe one table and judge with another."""
    path = library_path()
    so = _open(path)
    if json.loads(_library_text(so, path)) != schema():
        raise CoreMissing(f"{path} was built from another core/params.def, ops.def or features.def than "
                          f"the package's {SCHEMA.name}",
                          f"run `make docs` in the pmemlab tree (it builds the library and writes {SCHEMA.name} "
                          "from it), or point $PMEMLAB_PLCORE at a library of this version")
    return so


def library_schema() -> dict[str, Any]:
    """The table as the library lists it (schema.c), whatever the package's file says."""
    path = library_path()
    table: dict[str, Any] = json.loads(_library_text(_open(path), path))
    return table


def write_schema(path: Path = SCHEMA) -> bool:
    """The build step (`make docs`, scripts/update-docs): the library's table, as schema.c writes
    it, into the package's schema.json. True when the file changed."""
    path_lib = library_path()
    text = _library_text(_open(path_lib), path_lib)
    try:
        if path.read_text() == text:
            return False
    except FileNotFoundError:
        pass
    path.write_text(text)
    return True


@cache
def schema() -> dict[str, Any]:
    """The parameter table, ops and CPU features as the core lists them (schema.c), from the
    package's schema.json: no library needed."""
    try:
        text = SCHEMA.read_text()
    except OSError as exc:
        raise CoreMissing(f"{SCHEMA} (the run-parameter table) cannot be read: {exc.strerror}",
                          "reinstall pmemlab, or run `make docs` in the pmemlab tree") from None
    table: dict[str, Any] = json.loads(text)
    return table


def _enc(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def judge_value(name: str, text: str, facts: str = "") -> tuple[int, str, int, bool]:
    """One value judged as a write of its sysfs file: (0, canonical text, -1, False) or
    (-errno, reason, index of the parameter at fault, decided by a fact of the machine)."""
    out = ctypes.create_string_buffer(_OUT_LEN)
    param, machine = ctypes.c_int(-1), ctypes.c_int(0)
    rc = lib().plc_value(_enc(name), _enc(text), _enc(facts), out, _OUT_LEN, ctypes.byref(param),
                         ctypes.byref(machine))
    return rc, out.value.decode("utf-8", "replace"), param.value, bool(machine.value)


def judge_run(pairs: Sequence[tuple[str, str]], facts: str = "") -> tuple[int, str, int, bool]:
    """A run's values (on the defaults, set in table order) judged as `run` judges them:
    (0, "width=N", -1, False) or (-errno, reason, parameter index or -1, machine)."""
    n = len(pairs)
    names = (ctypes.c_char_p * max(n, 1))(*[_enc(k) for k, _ in pairs])
    values = (ctypes.c_char_p * max(n, 1))(*[_enc(v) for _, v in pairs])
    out = ctypes.create_string_buffer(_OUT_LEN)
    param, machine = ctypes.c_int(-1), ctypes.c_int(0)
    rc = lib().plc_check(names, values, n, _enc(facts), out, _OUT_LEN, ctypes.byref(param), ctypes.byref(machine))
    return rc, out.value.decode("utf-8", "replace"), param.value, bool(machine.value)
