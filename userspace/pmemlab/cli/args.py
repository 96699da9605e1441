"""What the commands' parsers share: argument types (durations, figure formats) and the KEY=VALUE
assignments of run parameters and target options, split into the two."""

from __future__ import annotations

import argparse
import math
from typing import Any, Mapping, Sequence

from pmemlab.backends.protocol import BACKENDS
from pmemlab.backends.user import TARGET_KEYS
from pmemlab.errors import ConfigError, PmemlabError


SECONDS_PER = {"s": 1, "m": 60, "h": 3600}  # the suffixes of a duration: 90s, 5m, 1h (none: seconds)


def positive_seconds(text: str) -> float:
    """A duration > 0 in seconds: '300', '2.5', or with a unit '90s', '5m', '1h'."""
    number, unit = text.strip(), 1
    if number[-1:] in SECONDS_PER:
        number, unit = number[:-1].rstrip(), SECONDS_PER[number[-1]]
    try:
        value = float(number) * unit
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (or 90s, 5m, 1h)") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seconds > 0 (or 90s, 5m, 1h)")
    return value


def parse_assignments(items: Sequence[str], what: str = "argument") -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"{what} {item!r} is not KEY=VALUE", "write e.g. access_size=256")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def figure_formats(text: str) -> list[str]:
    """--format png,svg -> the formats (ConfigError when one is not png, svg or pdf)."""
    formats = [f.strip().lower() for f in text.split(",") if f.strip()]
    bad = [f for f in formats if f not in ("png", "svg", "pdf")]
    if bad or not formats:
        raise ConfigError(f"--format {text!r}: unknown format {bad[0] if bad else ''}", "png, svg or pdf")
    return formats


def split_backend_args(raw: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """(run parameters, backend/target options) out of one KEY=VALUE mapping."""
    run = {k: v for k, v in raw.items() if k not in TARGET_KEYS}
    opts = {k: str(v) for k, v in raw.items() if k in TARGET_KEYS}
    backend = opts.get("backend", "kernel")
    if backend not in BACKENDS:
        raise PmemlabError(f"backend={backend!r}: not one of {', '.join(BACKENDS)}",
                           "backend=kernel drives pmemlab.ko, backend=user runs userspace/runner/pmemlab-run")
    return run, opts
