"""Optane media counters from `ipmctl show -dimm -performance`.

Text output of ipmctl (ipmctl-show-performance(1)): one block per PMem module,

    ---DimmID=0x0001---
       MediaReads=0x000000000003a7c3
       MediaWrites=0x0000000000020cc0
       ReadRequests=0x00000000004b2f4f
       WriteRequests=0x0000000001094d36
       TotalMediaReads=...
       TotalMediaWrites=...
       TotalReadRequests=...
       TotalWriteRequests=...

MediaReads/MediaWrites count 64-byte media accesses, ReadRequests/WriteRequests the
64-byte requests the memory controller sent (DDR-T transactions). Read before and
after each point; the deltas give the effective write ratio EWR = requests
written / media written and the effective read ratio ERR = requests read / media
read (FAST'20 section 5.1: EWR < 1 means write amplification inside the DIMM).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

COUNTERS: tuple[str, ...] = (
    "MediaReads", "MediaWrites", "ReadRequests", "WriteRequests",
    "TotalMediaReads", "TotalMediaWrites", "TotalReadRequests", "TotalWriteRequests",
)
# CSV columns (deltas summed over the target region's DIMMs when known, else all; units of 64 B) and ratios.
COLUMNS: tuple[str, ...] = (
    "media_read_64b", "media_write_64b", "read_request_64b", "write_request_64b", "ewr", "err",
)

_HEADER = re.compile(r"^\s*-+\s*DimmID\s*=\s*(\S+?)\s*-+\s*$")
_FIELD = re.compile(r"^\s*([A-Za-z]+)\s*=\s*(\S+)\s*$")


def parse_performance(text: str) -> dict[str, dict[str, int]]:
    """DimmID -> {counter: value}. Values may be hex (0x...) or decimal."""
    out: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in text.splitlines():
        m = _HEADER.match(line)
        if m:
            current = out.setdefault(m.group(1), {})
            continue
        f = _FIELD.match(line)
        if f and current is not None:
            try:
                current[f.group(1)] = int(f.group(2), 0)
            except ValueError:
                continue
    return out


def _dimm_id(d: str | int) -> int | str:
    """A DimmID as a number (ipmctl prints 0x0001, ndctl the same handle as 1)."""
    if isinstance(d, int):
        return d
    try:
        return int(str(d), 0)
    except ValueError:
        return str(d)


def region_dimm_ids(info: Mapping[str, Any]) -> list[int] | None:
    """ipmctl DimmIDs of the target region's DIMMs, or None when they are not known.

    ipmctl's DimmID is the NFIT device handle, which `ndctl list -D` prints as `handle`;
    `pmemlab info` knows the region's DIMMs (nmemN) from its mappings.
    """
    names = (info.get("target") or {}).get("dimms") or []
    if not names:
        return None
    handles = {d.get("dev"): d.get("handle") for d in (info.get("ndctl") or {}).get("dimms") or []}
    ids = [handles.get(n) for n in names]
    if not all(isinstance(h, int) and not isinstance(h, bool) for h in ids):
        return None
    return sorted(set(ids))  # type: ignore[arg-type]


def delta(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]],
          dimms: Sequence[str | int] | None = None) -> dict[str, Any]:
    """Counter deltas summed over DIMMs (all, or those in `dimms`) and the EWR / ERR ratios."""
    wanted = {_dimm_id(d) for d in dimms} if dimms else None
    ids = [d for d in after if d in before and (wanted is None or _dimm_id(d) in wanted)]
    tot = {c: 0 for c in ("MediaReads", "MediaWrites", "ReadRequests", "WriteRequests")}
    for d in ids:
        for c in tot:
            if c in after[d] and c in before[d]:
                diff = after[d][c] - before[d][c]
                tot[c] += diff if diff >= 0 else diff + (1 << 64)
    out: dict[str, Any] = {
        "media_read_64b": tot["MediaReads"],
        "media_write_64b": tot["MediaWrites"],
        "read_request_64b": tot["ReadRequests"],
        "write_request_64b": tot["WriteRequests"],
        "ewr": tot["WriteRequests"] / tot["MediaWrites"] if tot["MediaWrites"] else None,
        "err": tot["ReadRequests"] / tot["MediaReads"] if tot["MediaReads"] else None,
    }
    return out


def probe(runner: Callable[[list[str]], Any]) -> dict[str, Any]:
    """Is ipmctl usable here, and does it see Optane modules?"""
    res = runner(["ipmctl", "show", "-dimm", "-performance"])
    if res.returncode == 127:
        return {"available": False, "note": "ipmctl not installed: media counter columns (ewr, err, media_*) are empty"}
    if res.returncode != 0:
        msg = (res.stderr or res.stdout or "").strip().splitlines()
        return {"available": False, "note": f"ipmctl failed ({msg[0] if msg else 'exit ' + str(res.returncode)}): media counter columns are empty"}
    dimms = parse_performance(res.stdout)
    if not dimms:
        return {"available": False, "note": "ipmctl sees no Optane PMem modules: media counter columns are empty"}
    return {"available": True, "dimms": sorted(dimms)}


@dataclass
class MediaCounters:
    """Reads the counters around each point (when ipmctl works)."""

    runner: Callable[[list[str]], Any]
    available: bool = False

    def snapshot(self) -> dict[str, dict[str, int]] | None:
        if not self.available:
            return None
        res = self.runner(["ipmctl", "show", "-dimm", "-performance"])
        if res.returncode != 0:
            return None
        return parse_performance(res.stdout)
