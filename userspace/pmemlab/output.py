"""What commands print: one JSON document on stdout (--json, on every command), plain text tables,
and the examples at the end of each command's help."""

from __future__ import annotations

import argparse
import errno
import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence, TextIO

from pmemlab.errors import OutputError


def jsonable(value: Any) -> Any:
    """`value` with what JSON cannot hold made plain: NaN and infinities -> null, numpy and pandas
    scalars -> Python numbers, paths -> strings, data frames -> lists of records."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "to_dict") and hasattr(value, "columns"):  # a pandas DataFrame
        return [jsonable(r) for r in value.to_dict(orient="records")]
    if hasattr(value, "item"):  # numpy / pandas scalars
        try:
            return jsonable(value.item())
        except (ValueError, TypeError):
            pass
    pd = sys.modules.get("pandas")  # a pandas NA exists only where pandas was imported
    try:
        if pd is not None and pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)


def dumps(doc: Any) -> str:
    return json.dumps(jsonable(doc), indent=2, allow_nan=False)


def print_json(doc: Any, stream: TextIO | None = None) -> None:
    """The command's one JSON document."""
    print(dumps(doc), file=stream or sys.stdout)


def add_json(parser: argparse.ArgumentParser, what: str = "the same data") -> None:
    parser.add_argument("--json", action="store_true", help=f"print {what} as one JSON document on stdout")


def text_table(columns: Sequence[str], cells: Sequence[Sequence[str]], left: int = 0) -> list[str]:
    """The lines of a text table: a header, then a line per row of `cells`, each column as wide as
    its widest cell, the first `left` columns flush left and the others flush right."""
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) if i < left else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths)))

    return [line(columns)] + [line(r) for r in cells]


def examples(*lines: str) -> str:
    """A help epilog: `examples:` and one command per line (the tests run them through the parser)."""
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


NAME_MAX = 255  # bytes of one file name on Linux file systems


def check_writable(path: Path, option: str = "-o", directory: bool = True) -> None:
    """Refuse (OutputError: exit code 2, one line) an output the command could not write, before it
    writes anything: `path` (a directory to create or fill, or with directory=False a file) must not
    be something else, and the nearest existing directory on it must take a new file (a probe file
    is created and removed: this catches /proc and /sys, read-only file systems and missing
    permissions alike)."""
    if any(len(part.encode()) > NAME_MAX for part in path.parts):
        raise OutputError(f"{option} {str(path)[:60]}...: a name on the path is longer than {NAME_MAX} bytes",
                          f"give {option} a shorter path")
    if path.exists():
        if directory and not path.is_dir():
            raise OutputError(f"{option} {path}: a file, not a directory", f"give {option} a directory")
        if not directory and not path.is_file():
            raise OutputError(f"{option} {path}: {'a directory' if path.is_dir() else 'not a regular file'}",
                              f"give {option} a file name")
    start = Path(os.path.abspath(path))
    existing = start if directory else start.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise OutputError(f"{option} {path}: {existing} is a file, not a directory", f"choose {option} under a directory")
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".pmemlab-probe-")
    except OSError as exc:
        why = {errno.EROFS: ("is on a read-only file system", f"choose {option} on a writable file system"),
               errno.EACCES: ("is not writable by this user",
                              f"choose {option} under a directory you can write, or run as a user who may"),
               errno.EPERM: ("does not allow new files", f"choose {option} under a directory you can write")}
        reason, fix = why.get(exc.errno or 0, (f"cannot hold new files ({exc.strerror})",
                                               f"choose {option} under an ordinary writable directory "
                                               "(not /proc or /sys)"))
        raise OutputError(f"{option} {path}: {existing} {reason}", fix) from None
    os.close(fd)
    os.unlink(probe)
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputError(f"{option} {path}: not writable", f"chmod u+w it, or give {option} another path")
