"""Per-device placement on CXL memory, proved from outside the guest: after a guest booted with
scripts/vm --cxl --cxl-dir DIR has run tests/guest/test_cxl.py::test_per_device_writes_for_the_outside_check,
the devices' backing files on the host must hold the writes of each run exactly where the
region's geometry (as pmemlab read it) puts them, in the file of the device the run's thread was
given, and nothing else anywhere in the target.

The target is an fsdax namespace nothing else writes, on fresh (all-zero) files: an 8-byte word
that changed is non-zero (the module's store data is odd in every word, docs/method.md), so
"written" is "non-zero". QEMU maps a device's addresses (DPA) below its ram size to its ram file
and the rest, from the ram size on, to its pmem file (devices.json, scripts/vm).

make test runs this after the CXL guest with PMEMLAB_CXL_DIR set (scripts/run-tests); without it,
the test is skipped (nothing to read)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from pmemlab.host import cxl

from testlib import HOST_FIXTURES


PLANS = ("per-device.json", "per-device-shifted.json")


@pytest.fixture(scope="module", params=PLANS)
def bed(request: pytest.FixtureRequest) -> tuple[Path, str]:
    d = os.environ.get("PMEMLAB_CXL_DIR", "")
    if not d or not (Path(d) / request.param).exists():
        pytest.skip(f"no CXL guest's backing files (PMEMLAB_CXL_DIR with {request.param}, written by the guest test)")
    return Path(d), request.param


def backing_problems(bed: Path, name: str = "per-device.json") -> list[str]:
    """What is wrong with the devices' backing files against a plan (per-device.json: a namespace
    whose data starts on a round; per-device-shifted.json: a partition 4 KiB into one, device 0
    at the region's position 1) ([] when nothing)."""
    plan = json.loads((bed / name).read_text())
    devices = json.loads((bed / "devices.json").read_text())
    region, phys, size = plan["region"], plan["phys"], plan["size"]
    ways, gran = plan["interleave_ways"], plan["interleave_gran"]
    files = {d["serial"]: (np.memmap(bed / d["pmem_file"], dtype=np.uint64, mode="r"), d["ram_size"])
             for d in devices["devices"]}
    serial_of = {t["memdev"]: t["serial"] for t in region["targets"]}
    if sorted(serial_of.values()) != sorted(files):
        return [f"the region's memdevs {serial_of} are not the bed's devices {sorted(files)}"]

    # the chunks each run was asked to write: its window's chunks of its device, per the placement rule
    wanted: dict[int, int] = {}  # target chunk -> run index
    for k, run in enumerate(plan["runs"]):
        for off in range(run["window_offset"], run["window_offset"] + run["working_set"], gran):
            if (off // gran) % ways == run["device_index"]:
                wanted[off // gran] = k
    problems = []
    seen = {s: 0 for s in files}
    for chunk in range(size // gran):
        where = cxl.locate(region, phys, chunk * gran)
        words, ram_size = files[where["serial"]]
        start = (where["dpa"] - ram_size) // 8
        nonzero = int(np.count_nonzero(words[start:start + gran // 8]))
        at = f"target offset {chunk * gran:#x} ({where['memdev']}, serial {where['serial']:#x}, DPA {where['dpa']:#x})"
        if chunk in wanted:
            run = plan["runs"][wanted[chunk]]
            device = plan["devices"][run["device_index"]]
            if serial_of[device] != where["serial"]:
                problems.append(f"{at}: run {wanted[chunk]} gave thread {run['thread']} device "
                                f"{run['device_index']} ({device}), the chunk is on another device")
            if nonzero != gran // 8:
                problems.append(f"{at}: run {wanted[chunk]} should have written it, {nonzero} of {gran // 8} words changed")
            seen[where["serial"]] += 1
        elif nonzero:
            problems.append(f"{at}: {nonzero} words changed outside every run's chunks")
    for serial, n in seen.items():
        want = sum(1 for c, k in wanted.items() if serial_of[plan["devices"][plan["runs"][k]["device_index"]]] == serial)
        if n != want or not want:
            problems.append(f"device serial {serial:#x}: {n} of the runs' chunks, want {want} (> 0)")
    return problems


def test_per_device_writes_land_in_their_device_at_the_geometry_s_offsets(bed: tuple[Path, str]) -> None:
    where, name = bed
    plan = json.loads((where / name).read_text())
    if name == "per-device-shifted.json":  # the shift is real: the target starts one chunk into a round
        region, gran, ways = plan["region"], plan["interleave_gran"], plan["interleave_ways"]
        assert (plan["phys"] - region["resource"]) // gran % ways == plan["shift"] == 1
    problems = backing_problems(where, name)
    assert not problems, "\n".join(problems[:20])


def synthetic_bed(tmp_path: Path, stray: tuple[int, int] | None = None, swap: bool = False) -> Path:
    """Backing files as a correct run leaves them (2 ways, 4 KiB chunks, device 0 of the target
    at region position 1), written by the rule itself, then one stray word or the devices swapped."""
    import sys

    sys.path.insert(0, str(HOST_FIXTURES))
    from cxl_sysfs import MiB, PMEM, make_cxl_sysfs

    region = cxl.region_at(make_cxl_sysfs(tmp_path / "sys"), PMEM)
    assert region is not None
    phys = PMEM + 4096  # device 0 of the target is the memdev at position 1
    devices = cxl.geometry(region, phys)["devices"]
    ram = 512 * MiB
    (tmp_path / "devices.json").write_text(json.dumps({"interleave_granularity": 4096, "devices": [
        {"serial": 0x1000, "pmem_file": "b.raw", "ram_size": ram}, {"serial": 0x1001, "pmem_file": "a.raw", "ram_size": ram}]}))
    files = {0x1000: np.zeros(64 * MiB // 8, np.uint64), 0x1001: np.zeros(64 * MiB // 8, np.uint64)}
    runs = [{"thread": 0, "window_offset": MiB, "working_set": 64 << 10, "device_index": 0},
            {"thread": 1, "window_offset": 2 * MiB, "working_set": 64 << 10, "device_index": 1}]
    for run in runs:
        for off in range(run["window_offset"], run["window_offset"] + run["working_set"], 4096):
            if (off // 4096) % 2 == run["device_index"]:
                where = cxl.locate(region, phys, off)
                serial = where["serial"] if not swap else ({0x1000, 0x1001} - {where["serial"]}).pop()
                files[serial][(where["dpa"] - ram) // 8:(where["dpa"] - ram + 4096) // 8] = 3
    if stray:
        files[stray[0]][stray[1] // 8] = 5
    files[0x1000].tofile(tmp_path / "b.raw")
    files[0x1001].tofile(tmp_path / "a.raw")
    (tmp_path / "per-device.json").write_text(json.dumps({
        "phys": phys, "size": 16 * MiB, "region": region, "devices": devices, "interleave_ways": 2,
        "interleave_gran": 4096, "runs": runs}))
    return tmp_path


def test_the_check_passes_a_correct_run_and_catches_a_stray_or_misplaced_write(tmp_path: Path) -> None:
    assert backing_problems(synthetic_bed(tmp_path / "ok")) == []
    stray = backing_problems(synthetic_bed(tmp_path / "stray", stray=(0x1000, (512 << 20) - (512 << 20) + 8 * 4096)))
    assert len(stray) == 1 and "outside every run's chunks" in stray[0]
    swapped = backing_problems(synthetic_bed(tmp_path / "swap", swap=True))
    assert swapped and all("should have written it" in p or "outside every run" in p or "want" in p for p in swapped)
