"""The controller's own overwrite guard, and the target's known bad ranges.

Before a write run or a sweep with write runs, the controller probes the module's target with
util-linux: `blkid -p` (every signature libblkid knows: file systems, partition tables, RAID,
LVM, LUKS, swap, ...) and `lsblk` (partitions and mount points), and refuses when it finds
anything unless the module was loaded with allow_overwrite=1, the one way past the module's own
guard too (docs/interface.md "Refusals"). The module's probe (core/sig.c) knows the common
formats only; blkid knows them all.

`pmemlab info` lists the target's known bad ranges: the block layer's list
(/sys/block/<disk>/badblocks) and what `ndctl list --media-errors` reports.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from pmemlab.errors import PmemlabError
from pmemlab.host import probe
from pmemlab.params import WRITE_OPS

SECTOR = 512


class OverwriteRefused(PmemlabError):
    """A write run on a target that carries data, without allow_overwrite=1."""

    exit_code = 1


def writes(values: Mapping[str, Any]) -> bool:
    """Does a run with these (canonical) parameters store to the target?"""
    return any(op in WRITE_OPS for op in str(values.get("op", "")).split(","))


def overwrite_allowed(info: Mapping[str, Any]) -> bool:
    """The module (or the user backend) was loaded with allow_overwrite=1."""
    params = info.get("module", {}).get("parameters") or {}
    return str(params.get("allow_overwrite", "")).strip() in ("Y", "y", "1")


def is_block_device(path: str) -> bool:
    try:
        return stat.S_ISBLK(os.stat(path).st_mode)
    except OSError:
        return False


def probe_device(dev: str, runner: Callable[[list[str]], Any]) -> list[str]:
    """What `blkid -p` and `lsblk` find on a block device, one phrase each ([] = nothing)."""
    found: list[str] = []
    res = runner(["blkid", "-p", "-o", "export", dev])
    if res.returncode == 0:
        tags = dict(line.split("=", 1) for line in res.stdout.splitlines() if "=" in line)
        if tags.get("TYPE"):
            found.append(f"a {tags['TYPE']} signature")
        if tags.get("PTTYPE"):
            found.append(f"a {tags['PTTYPE']} partition table")
        if not found:
            found.append("a signature blkid could not name (" + " ".join(sorted(tags)) + ")")
    elif res.returncode == 4:  # ambivalent: more than one signature
        found.append("several signatures (blkid -p: ambivalent result)")
    elif res.returncode != 2:  # 2: nothing found
        why = (res.stderr or res.stdout or "").strip().splitlines()
        found.append(f"no answer from blkid -p (exit {res.returncode}: {why[-1] if why else 'no output'})")
    res = runner(["lsblk", "-J", "-o", "NAME,TYPE,MOUNTPOINT", dev])
    if res.returncode == 0:
        try:
            devices = json.loads(res.stdout).get("blockdevices", [])
        except json.JSONDecodeError:
            devices = []
        for d in devices:
            parts = [c.get("name") for c in d.get("children") or [] if c.get("type") == "part"]
            if parts:
                found.append(f"partitions {', '.join(map(str, parts))}")
            mounts = [f"{x.get('name')} on {x['mountpoint']}" for x in [d, *(d.get("children") or [])]
                      if x.get("mountpoint")]
            if mounts:
                found.append("mounted: " + ", ".join(mounts))
    return found


def check_overwrite(info: Mapping[str, Any], will_write: bool,
                    runner: Callable[[list[str]], Any] | None = None) -> None:
    """Refuse (OverwriteRefused) a write run on a block-device target that carries data.

    The hook `pmemlab run` and `pmemlab sweep` call before anything is written. DRAM targets,
    files and devdax devices are not block devices and pass (the runner probes devdax itself).
    """
    if not will_write or overwrite_allowed(info):
        return
    dev = str(info.get("target", {}).get("device") or "")
    if not dev.startswith("/dev/") or not is_block_device(dev):
        return
    if runner is None:
        runner = probe.run_tool
    found = probe_device(dev, runner)
    if found:
        raise OverwriteRefused(
            f"refusing write runs on {dev}: it carries " + "; ".join(found),
            "if nothing on it is needed, wipe it (wipefs -a on the device and its partitions) and reload "
            "the module, or reload it with allow_overwrite=1 (sudo rmmod pmemlab && insmod ... allow_overwrite=1)",
        )


# --------------------------------------------------------------------------
# known bad ranges
# --------------------------------------------------------------------------
def parse_badblocks(text: str) -> list[tuple[int, int]]:
    """The block layer's list: `SECTOR COUNT` lines (512-byte sectors of the whole disk)."""
    out = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2 and all(f.isdigit() for f in fields):
            out.append((int(fields[0]), int(fields[1])))
    return out


def _disk_name(dev: str, sys: Path) -> tuple[str, int]:
    """The disk holding a block device, and the device's first sector on it (partitions)."""
    name = Path(dev).name
    base = sys / "class" / "block" / name
    if (base / "partition").exists():
        try:
            start = int((base / "start").read_text().strip())
        except (OSError, ValueError):
            start = 0
        return Path(os.path.realpath(base)).parent.name, start
    return name, 0


def bad_ranges(dev: str | None, sys: Path = Path("/sys"),
               runner: Callable[[list[str]], Any] | None = None) -> dict[str, Any]:
    """Known bad ranges of a pmem target, as the kernel and ndctl list them."""
    if not dev or not dev.startswith("/dev/"):
        return {}
    disk, start = _disk_name(dev, sys)
    out: dict[str, Any] = {"disk": disk}
    text = None
    try:
        text = (sys / "block" / disk / "badblocks").read_text()
    except OSError:
        out["badblocks"] = None
    if text is not None:
        # the ranges that reach into the target (a partition starts at sector `start` of its disk)
        out["badblocks"] = [{"sector": s, "count": c, "target_offset": max(s - start, 0) * SECTOR,
                             "bytes": (s + c - max(s, start)) * SECTOR}
                            for s, c in parse_badblocks(text) if s + c > start]
    if runner is not None:
        res = runner(["ndctl", "list", "--media-errors", "-N"])
        if res.returncode == 0 and res.stdout.strip():
            try:
                doc = json.loads(res.stdout)
            except json.JSONDecodeError:
                doc = None
            out["ndctl_media_errors"] = _ndctl_badblocks(doc, disk)
    return out


def _ndctl_badblocks(doc: Any, disk: str) -> list[dict[str, Any]]:
    """The `badblocks` entries of the namespace whose blockdev is `disk`."""
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            if node.get("blockdev") == disk:
                found.extend(node.get("badblocks") or [])
                return
            for value in node.values():
                if isinstance(value, (list, dict)):
                    walk(value)

    walk(doc)
    return found


def format_bad_ranges(bad: Mapping[str, Any]) -> Iterable[str]:
    """Lines for `pmemlab info`."""
    if not bad:
        return
    listed = bad.get("badblocks")
    if listed is None:
        yield f"{bad.get('disk')}: no bad-block list (/sys/block/{bad.get('disk')}/badblocks missing)"
    elif not listed:
        yield f"none known (/sys/block/{bad.get('disk')}/badblocks is empty)"
    else:
        for r in listed:
            yield (f"sectors {r['sector']}+{r['count']} = target bytes {r['target_offset']}+{r['bytes']}"
                   f" (/sys/block/{bad.get('disk')}/badblocks)")
    for e in bad.get("ndctl_media_errors") or []:
        yield f"ndctl media error: offset {e.get('offset')} length {e.get('length')} dimms {e.get('dimms', '-')}"
