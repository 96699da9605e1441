"""What every command's parser shares: argument types and the KEY=VALUE assignments of run
parameters and target options."""

from __future__ import annotations

import argparse
import math
from typing import Sequence

from pmemlab.errors import ConfigError


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seconds > 0")
    return value


def parse_assignments(items: Sequence[str], what: str = "argument") -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"{what} {item!r} is not KEY=VALUE", "write e.g. access_size=256")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out
