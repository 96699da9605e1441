"""Paths and helpers every part of the bed uses."""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent.parent
VENV_BIN = TOP / ".venv" / "bin"
CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pmemlab"


def die(msg: str, code: int = 2) -> None:
    print(f"vm: {msg}", file=sys.stderr)
    sys.exit(code)


def say(msg: str) -> None:
    """One of the bed's own lines ("vm: ..."), on stderr."""
    print(f"vm: {msg}", file=sys.stderr)


def parse_size(text: str) -> int:
    m = re.fullmatch(r"(\d+)([KMGkmg]?)", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {text!r} (e.g. 512M, 1G)")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]
