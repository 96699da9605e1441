"""The CPU's caches as the kernel reports them (cpu0's /sys/devices/system/cpu/cpu0/cache/index*):
what the probe's grid reaches beyond and what the curves' probe region must exceed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")


def _size_text(text: str) -> int | None:
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip())
    return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)] if m else None


def cpu_caches(root: Path = CACHE_DIR) -> list[dict[str, Any]]:
    """The data and unified caches cpu0 reports: level, type, size in bytes."""
    out = []
    for d in sorted(root.glob("index*")):
        try:
            kind = (d / "type").read_text().strip()
            size = _size_text((d / "size").read_text())
            level = int((d / "level").read_text())
        except (OSError, ValueError):
            continue
        if kind != "Instruction" and size:
            out.append({"level": level, "type": kind, "size_bytes": size})
    return out


def largest_cache(root: Path = CACHE_DIR) -> int:
    """Bytes of the largest data or unified cache cpu0 reports (0: none)."""
    return max((c["size_bytes"] for c in cpu_caches(root)), default=0)
